"""What ``featx lens`` checks before any forward pass: the model's head, the answers' tokens, the template's
answering position and the label's classes against the answers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..options import spoken_value
from ..safe_files import loads_json
from .answers import Answers, answer_token_ids, parse_answers
from .config import LensConfig
from .head import LensHead, load_head

AT_POOLING = "at"


@dataclass(frozen=True)
class Prepared:
    """A lens run checked and ready: the model's name, its head, the answers and their token ids, where the
    answer is read (``pool_at``), the classes in featx's order and the answer of each."""

    model: str
    head: LensHead
    answers: Answers
    token_ids: list[int]
    pool_at: str
    n_layers: int
    class_names: list[str]
    class_answers: list[int]
    extract_options: dict


def _layer_count(folder: Path) -> int:
    config = loads_json((folder / "config.json").read_text(encoding="utf-8"))
    for key in ("num_hidden_layers", "n_layer"):
        if isinstance(config.get(key), int):
            return int(config[key])
    raise InputError(f"{folder}/config.json names no layer count (num_hidden_layers)")


def answering_position(config: LensConfig, template: str | None, head: LensHead, tokenizer, model: str) -> str:
    """The ``--pool-at`` that reads the answer: an MLM's mask token in the template; a decoder's last token, after
    the chat template's generation prompt, or at the end of a template that ends in its own text (``Sentiment:``,
    not a field)."""

    if head.masked:
        return _mask_position(config, template, tokenizer, model)
    if config.chat_template:
        return "last"
    assert template is not None, "LensConfig asks for a template without --chat-template"
    check_decoder_prompt(template, config.text_col, tokenizer, model)
    return "last"


def _template(template: object) -> str:
    """``--template 'T'`` on the command line, ``template='T'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "template", template, "--template", shown=repr(template))


def check_decoder_prompt(template: str, text_col: str, tokenizer, model: str) -> None:
    """Refuse a decoder's template whose last token is not where an answer is read: one that ends in a field
    (the row's own text), or a tokenizer that ends every prompt with a special token."""
    from ..extraction import parse_template

    last_literal, last_field = parse_template(template, text_col).pieces[-1]
    if last_field is not None or not last_literal.strip():
        raise InputError(
            f"{_template(template)} has no answer position: it ends in a field (or in whitespace after one), so "
            "the decoder's last token (where the answer is predicted) would be the row's own text",
            "end the template with the question, e.g. 'Review: {text}\\nSentiment:'",
        )
    ending = tokenizer(last_literal, add_special_tokens=True)["input_ids"]
    if ending and ending[-1] in set(tokenizer.all_special_ids) and len(ending) > 1:
        raise InputError(
            f"the tokenizer of {model} ends every prompt with a special token, so the last token is not the "
            "answering position",
            "use a decoder whose tokenizer adds no end-of-sequence token, or --chat-template",
        )


def _mask_position(config: LensConfig, template: str | None, tokenizer, model: str) -> str:
    from ..extraction import parse_template

    mask = getattr(tokenizer, "mask_token", None)
    if config.chat_template:
        raise InputError(f"--chat-template is for decoders, and {model} is read through its MLM head", "leave it out")
    literals = "".join(literal for literal, _ in parse_template(str(template), config.text_col).pieces)
    if not mask or literals.count(mask) != 1:
        raise InputError(
            f"{_template(template)} has no answer position for the MLM {model}: it needs its mask token "
            f"{mask!r} exactly once (where the answer goes)",
            f"e.g. {_template(f'{{text}} It was {mask}.')}",
        )
    return f"marker:{mask}"


def label_classes(config: LensConfig, answers: Answers) -> tuple[list[str], list[int]]:
    """The label's classes present in the corpus (featx's order) and the answer index of each."""
    from ..extraction import read_corpus
    from ..probing import column_plan

    corpus = read_corpus(
        config.corpus, text_col=config.text_col, id_col=config.id_col, encoding=config.encoding, sep=config.sep
    )
    column = corpus.labels.get(config.label)
    if column is None:
        known = ", ".join(corpus.labels) or "none"
        raise InputError(
            f"{spoken_value(config, 'label', config.label)}: {config.corpus} has no such column (labels: {known})",
            "name the column whose values the answers stand for",
        )
    present = sorted({int(code) for code in column.codes if code >= 0})
    names = [column.names[code] for code in present]
    if len(names) < 2:
        raise InputError(f"label '{config.label}' has fewer than two classes in {config.corpus}", "pick another label")
    mapping = answers.classes_to_answers(names, config.label)
    column_plan(column, corpus.split, int(config.folds), int(config.seed), config.label)  # the probe's, refused first
    return names, mapping


def prepare(config: LensConfig) -> Prepared:
    """Every check of a lens run that needs no forward pass, in the order a user fixes them."""
    from ..extraction import ExtractConfig, load_tokenizer, model_folder, weight_files

    answers = parse_answers(config.answers)
    extract = ExtractConfig(  # the prompt options checked (and @FILE read) as featx extract checks them
        corpus=config.corpus,
        model=config.model,
        text_col=config.text_col,
        encoding=config.encoding,  # checked as featx extract checks them (an unknown codec, a bad --sep)
        sep=config.sep,
        template=config.template,
        chat_template=config.chat_template,
        system=config.system,
    )
    name, folder = model_folder(config.model)
    head = load_head(folder, weight_files(folder), name)
    tokenizer = load_tokenizer(config.model)
    token_ids = answer_token_ids(answers, tokenizer, name)
    template = extract.template
    pool_at = answering_position(config, template, head, tokenizer, name)
    class_names, class_answers = label_classes(config, answers)
    options = dict(
        model=config.model,
        text_col=config.text_col,
        id_col=config.id_col,
        encoding=config.encoding,
        sep=config.sep,
        template=template,
        chat_template=config.chat_template,
        system=config.system,
        pool_at=pool_at,
        poolings=AT_POOLING,
        layers=config.layers,
        store_dtype="float32",
        dtype=config.dtype,
        device=config.device,
        max_length=config.max_length,
        batch_size=config.batch_size,
        overwrite=config.overwrite,
        progress=config.progress,
        output=str(config.prefix()) + ".features.h5",
    )
    return Prepared(name, head, answers, token_ids, pool_at, _layer_count(folder), class_names, class_answers, options)
