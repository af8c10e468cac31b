"""Prompt templates: ``--template``, ``--chat-template`` and ``--system`` (the options, parsing and rendering).

A template is a string with fields by name, as Python's ``str.format`` writes them: ``{text}`` is the text
column (``--text-col``, whatever its name; ``{<text-col name>}`` too), ``{name}`` any other column of the
corpus (``{premise} ... {hypothesis}``), ``{{`` and ``}}`` literal braces. Positional fields (``{}``, ``{0}``),
attributes or indices (``{a.b}``, ``{a[0]}``), conversions and format specs (``{text!r}``, ``{text:10}``) are
refused. ``--template @FILE`` reads the template from FILE (UTF-8; one trailing newline is dropped, since
editors add one); a template whose own text starts with ``@`` is written ``@@...``. On the command line,
``\\n``, ``\\t`` and ``\\\\`` in ``--template``, ``--system`` and a ``--pool-at marker:`` are read as a newline, a
tab and a backslash (``cli_text``); a file is read as it is.

``--chat-template`` wraps the user turn (the rendered ``--template``, or the text) in the tokenizer's own chat
template: ``tokenizer.apply_chat_template([system?, user], tokenize=False, add_generation_prompt=True)``, and
the result is tokenised as ``apply_chat_template(..., tokenize=True)`` does: without adding special tokens
(the chat template writes its own BOS). A plain template is tokenised like a plain text: ``tokenizer(prompt)``.

The **span** of a row is the characters substituted for its fields (the text and any other column), never the
template's own characters; ``positions.py`` maps it to tokens. The stored texts stay the corpus's; the template,
its sha256, the chat template's sha256, the system message and the rendered prompt of row 0 are stored as root
attributes (``store.schema.TEMPLATE``...), and everything but row 0's example in the fingerprint (it follows from the
rest and the corpus, and differs between the shards of one run).

Torch-free: ``ExtractConfig``'s checks import it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...checks import parse_whole
from ...errors import InputError
from ...options import normalise, spoken, spoken_value

MAX_TEMPLATE_BYTES = 1 << 16
TEXT_FIELD = "text"
SPAN_POOLINGS = ("span_mean", "span_max", "span_last")  # over the row's own characters, the template's excluded
AT_POOLING = "at"  # the state at the --pool-at token
ANSWER_FIELD = "answer"  # with --contrast: where each answer goes (else after the prompt)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\"}


def cli_text(value: str | None) -> str | None:
    """A command-line value with ``\\n``, ``\\t`` and ``\\\\`` read as newline, tab and backslash (others kept)."""
    if value is None or "\\" not in value:
        return value
    out, index = [], 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] in _ESCAPES:
            out.append(_ESCAPES[value[index + 1]])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


@dataclass(frozen=True)
class Template:
    """A parsed template: ``pieces`` of literal text each followed by a field name (or None at the end)."""

    source: str
    pieces: tuple[tuple[str, str | None], ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for _, name in self.pieces if name is not None))

    def render(self, values: Mapping[str, str]) -> tuple[str, list[tuple[int, int]]]:
        """The prompt and the character span ``[start, end)`` of every field substituted, in order."""
        parts: list[str] = []
        spans: list[tuple[int, int]] = []
        length = 0
        for literal, name in self.pieces:
            parts.append(literal)
            length += len(literal)
            if name is not None:
                value = values[name]
                parts.append(value)
                spans.append((length, length + len(value)))
                length += len(value)
        return "".join(parts), spans


def with_text_field(text: str, text_col: str) -> str:
    """``text`` (a template whose text field is ``{text_col}``) with that field spelled ``{text}``: the same
    prompts for a corpus whose text column is ``text`` (featx's in-memory texts)."""
    pieces = parse_template(text, text_col).pieces
    escaped = (literal.replace("{", "{{").replace("}", "}}") for literal, _ in pieces)
    return "".join(
        lit + ("" if name is None else "{" + name + "}") for lit, (_, name) in zip(escaped, pieces, strict=True)
    )


def template_text(value: str) -> str:
    """The template a ``--template`` value gives: ``@FILE`` read (one trailing newline dropped), ``@@x`` is ``@x``."""
    if value.startswith("@@") or not value.startswith("@"):
        return value[1:] if value.startswith("@@") else value
    path, named = Path(value[1:]).expanduser(), spoken_value(None, "template", value, "--template")
    try:
        if not path.is_file():
            raise InputError(
                f"{named}: {path} is not a file",
                "give the template itself, or @FILE naming a file that holds it (@@ for a literal @)",
            )
        raw = path.read_bytes()[: MAX_TEMPLATE_BYTES + 1]
    except OSError as err:
        raise InputError(f"{named}: {path} cannot be read ({err.strerror or err})") from None
    if len(raw) > MAX_TEMPLATE_BYTES:
        raise InputError(f"{named}: {path} is over {MAX_TEMPLATE_BYTES} bytes", "is it the right file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{named}: {path} is not UTF-8 text", "save the template as UTF-8") from None
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text


def parse_template(text: str, text_col: str = TEXT_FIELD) -> Template:
    """``text`` parsed into a ``Template``; ``{text_col}`` becomes ``{text}``. A clear error for what is refused."""
    hint = "name fields by column, e.g. 'Review: {text}\\nSentiment:'; write {{ and }} for literal braces"
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise InputError(f"--template is malformed ({err}): {text!r}", hint) from None
    pieces = []
    for literal, name, spec, conversion in parsed:
        if name is not None:
            if not name.strip() or parse_whole(name) is not None:  # {0}; {²} names a column, as featx renders
                raise InputError(f"--template has a positional field {{{name}}}: {text!r}", hint)
            if spec or conversion or any(char in name for char in ".["):
                raise InputError(f"--template field {{{name}...}} has a format, attribute or index: {text!r}", hint)
            name = TEXT_FIELD if name == text_col else name
        pieces.append((literal, name))
    template = Template(text, tuple(pieces))
    if TEXT_FIELD not in template.fields:
        raise InputError(
            f"--template has no {{text}} field: {text!r}",
            f"put {{text}} (the --text-col column, here '{text_col}') where each row's text goes",
        )
    return template


def prompted_label_note(template: str | None, text_col: str, label: str) -> str | None:
    """A note when a ``--template`` (as a features file records it) writes the label column ``label`` into every
    prompt: a probe of it reads its answer in the prompt, whatever the model computes."""
    if not template:
        return None
    try:
        fields = parse_template(template_text(template), text_col or TEXT_FIELD).fields
    except InputError:  # a file of another featx: nothing to say
        return None
    if label not in fields:
        return None
    return (
        f"--template writes the column '{label}' into every prompt: a probe of '{label}' reads its answer in the "
        "prompt, so its score says nothing of what the model computes; leave it out of the template to probe it"
    )


def other_columns(config) -> tuple[str, ...]:
    """The corpus columns a template names besides the text column (read as they are, kept for rendering)."""
    if not config.template:
        return ()
    fields = parse_template(config.template, config.text_col).fields
    return tuple(name for name in fields if name != TEXT_FIELD and not (config.contrast and name == ANSWER_FIELD))


def uses_prompts(config) -> bool:
    """Whether rows are rendered into prompts (a template or a chat template) before tokenising."""
    return bool(config.template) or bool(config.chat_template)


def check_template_options(config, is_word_input: Callable[[Any], bool]) -> None:
    """``--template``, ``--chat-template``, ``--system`` and ``--contrast``, checked with ``ExtractConfig``."""
    if config.template is not None:
        if not isinstance(config.template, str) or not config.template:
            raise InputError("--template is empty", "give a template with a {text} field, e.g. 'Review: {text}'")
        text = template_text(config.template)
        parse_template(text, config.text_col)
        normalise(config, "template", "@" + text if text.startswith("@") else text)
    if config.system is not None and not config.chat_template:
        raise InputError("--system is a message of the chat template", "add --chat-template, or leave --system out")
    if uses_prompts(config) or config.pool_at is not None:
        _refuse_combinations(config, is_word_input(config))
    if config.contrast is not None:
        normalise(config, "contrast", ",".join(contrast_answers(config)))


def _refuse_combinations(config, word_input: bool) -> None:
    flag = spoken(config, "template" if config.template else "chat_template" if config.chat_template else "pool_at")
    if config.text_pair_col is not None:
        raise InputError(
            f"{flag} does not combine with {spoken(config, 'text_pair_col')}",
            "name both columns in the template instead, e.g. "
            + spoken_value(config, "template", "{premise} ... {hypothesis}", shown="'{premise} ... {hypothesis}'"),
        )
    if word_input:  # before --long: a word input's long is always window, which no one typed
        raise InputError(f"{flag} applies to tables of texts, not word inputs", "extract the table of texts")
    if config.long == "window":
        raise InputError(
            f"{flag} does not combine with {spoken_value(config, 'long', 'window')}",
            f"leave {spoken(config, 'long')} out: the text is cut to fit",
        )


def _chat_messages(system: str | None, user: str) -> list[dict]:
    return ([{"role": "system", "content": system}] if system is not None else []) + [{"role": "user", "content": user}]


def chat_template_of(tokenizer, model: str) -> str:
    """The tokenizer's chat template string, or a clear error when it has none."""
    chat = getattr(tokenizer, "chat_template", None)
    if isinstance(chat, dict):  # several named templates: the default one
        chat = chat.get("default")
    if not isinstance(chat, str) or not chat.strip():
        raise InputError(
            f"--chat-template: the tokenizer of {model} has no chat template",
            "use --template alone, or a model whose tokenizer_config.json (or chat_template.jinja) has one",
        )
    return chat


_SENTINEL = "\ue000featx-user-turn\ue000"  # a private-use marker: where the user turn goes


def chat_renderer(tokenizer, model: str, system: str | None) -> Callable[[str], tuple[str, int, tuple[int, int]]]:
    """A function of the user turn giving the chat prompt, where in it the user turn starts, and which characters
    of the user turn it holds: all of them, or (a template that trims the message, as Llama 3's and Gemma's do)
    those between its leading and trailing whitespace."""
    chat_template_of(tokenizer, model)

    def prompt_of(user: str) -> str:
        try:
            return str(
                tokenizer.apply_chat_template(_chat_messages(system, user), tokenize=False, add_generation_prompt=True)
            )
        except Exception as err:  # the template's own checks (roles it refuses, a system turn it lacks)
            raise InputError(
                f"--chat-template: the chat template of {model} refuses the messages ({err})",
                "leave out --system if the model's chat template has no system turn",
            ) from None

    prefix = prompt_of(_SENTINEL).split(_SENTINEL)[0]

    def render(user: str) -> tuple[str, int, tuple[int, int]]:
        prompt = prompt_of(user)
        whole = (0, len(user))
        if prompt.startswith(prefix) and prompt.startswith(user, len(prefix)):
            return prompt, len(prefix), whole
        begin = len(os.path.commonprefix([prefix, prompt]))
        start = prompt.find(user, begin) if user else -1
        if start >= 0:
            return prompt, start, whole
        trimmed = user.strip()  # `| trim` in the template: the message's own characters, without its edges
        found = prompt.find(trimmed, begin) if trimmed else -1
        if found < 0:
            raise InputError(
                f"--chat-template: the chat template of {model} changes the user message, so its text "
                "cannot be located in the prompt",
                "use --template without --chat-template (and write the model's turn markers into it)",
            )
        lead = len(user) - len(user.lstrip())
        return prompt, found - lead, (lead, lead + len(trimmed))

    return render


class PromptMaker:
    """Renders row ``i`` of a corpus into its prompt and the character spans of its fields."""

    def __init__(self, config, corpus, tokenizer=None, model: str = ""):
        self.template = parse_template(config.template, config.text_col) if config.template else None
        self.corpus = corpus
        self.chat = chat_renderer(tokenizer, model, config.system) if config.chat_template else None
        self.add_special_tokens = not config.chat_template
        self.answer: str | None = None  # --contrast: this maker's answer

    def for_answer(self, answer: str) -> PromptMaker:
        """The same prompts with ``answer`` in the template's ``{answer}``, else after the prompt (a space between
        unless the prompt ends in whitespace)."""
        maker = copy.copy(self)
        maker.answer = answer
        return maker

    def values(self, row: int, text: str | None = None) -> dict[str, str]:
        """The field values of a row (``text``: a replacement of its text, e.g. cut to fit)."""
        values = {TEXT_FIELD: self.corpus.texts[row] if text is None else text}
        for name in self.template.fields if self.template else ():
            if name == ANSWER_FIELD and self.answer is not None:
                values[name] = self.answer
            elif name != TEXT_FIELD:
                values[name] = self.corpus.columns[name][row]
        return values

    def render_values(self, values: Mapping[str, str]) -> tuple[str, list[tuple[int, int]], list[int]]:
        """The prompt, the spans of every field, and which of them are the text's."""
        if self.template is not None:
            user, spans = self.template.render(values)
            names = [name for _, name in self.template.pieces if name is not None]
        else:
            user, spans, names = values[TEXT_FIELD], [(0, len(values[TEXT_FIELD]))], [TEXT_FIELD]
        if self.chat is not None:
            user_prompt, start, (low, high) = self.chat(user)
            spans = [(start + max(first, low), start + max(min(last, high), low)) for first, last in spans]
            user = user_prompt
        if self.answer is not None:  # an answer is no part of the row's own span
            spans = [span for span, name in zip(spans, names, strict=True) if name != ANSWER_FIELD]
            names = [name for name in names if name != ANSWER_FIELD]
            if self.template is None or ANSWER_FIELD not in self.template.fields:
                user += ("" if not user or user[-1].isspace() else " ") + self.answer
        return user, spans, [index for index, name in enumerate(names) if name == TEXT_FIELD]

    def render(self, row: int, text: str | None = None) -> tuple[str, list[tuple[int, int]], list[int]]:
        return self.render_values(self.values(row, text))

    def empty(self) -> str:
        """The prompt with every field empty: the template's own tokens."""
        names = self.template.fields if self.template else (TEXT_FIELD,)
        return self.render_values(dict.fromkeys(names, ""))[0]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_fingerprint(config, loaded) -> dict:
    """The prompt options' part of the fingerprint; empty without them (plain files keep theirs)."""
    if not uses_prompts(config) and config.pool_at is None:
        return {}
    chat = chat_template_of(loaded.tokenizer, loaded.name) if config.chat_template else None
    return {
        "prompt": {
            "template_sha256": sha256_text(config.template) if config.template else None,
            "chat_template_sha256": sha256_text(chat) if chat is not None else None,
            "system": config.system,
            "pool_at": config.pool_at,
            "skip_missing_marker": bool(config.skip_missing_marker),
            **({"contrast": config.contrast} if config.contrast else {}),
        }
    }


def prompt_poolings(config, available: tuple[str, ...]) -> tuple[str, ...]:
    """The poolings ``--pooling`` may name: prompts add ``span_*``, ``--pool-at`` adds ``at``."""
    return (
        tuple(available)
        + (SPAN_POOLINGS if uses_prompts(config) else ())
        + ((AT_POOLING,) if config.pool_at is not None else ())
    )


def with_pool_at(config, poolings: list[str]) -> list[str]:
    """``at`` is stored whenever ``--pool-at`` is given, listed in ``--pooling`` or not."""
    return poolings + [AT_POOLING] if config.pool_at is not None and AT_POOLING not in poolings else poolings


def contrast_answers(config) -> list[str]:
    """The answers of ``--contrast`` (comma-separated, at least two, distinct); a clear error otherwise."""
    answers = [answer.strip() for answer in str(config.contrast).split(",")]
    if len(answers) < 2 or not all(answers) or len(set(answers)) < len(answers):
        raise InputError(
            f"{spoken_value(config, 'contrast', config.contrast, shown=repr(config.contrast))} needs at least two "
            "distinct, non-empty answers",
            "give the answers comma-separated, e.g. "
            + " or ".join(
                spoken_value(config, "contrast", each, shown=repr(each)) for each in ("True,False", "positive,negative")
            ),
        )
    if config.tokens or str(config.sites).strip().lower() != "hidden":
        raise InputError(
            "--contrast stores each answer's pooled hidden states only",
            f"leave out {spoken(config, 'tokens')} and {spoken(config, 'sites')} with {spoken(config, 'contrast')}",
        )
    if not uses_prompts(config):
        raise InputError(
            "--contrast renders each row's prompt once per answer, and there is no template",
            "add --template (e.g. 'Is this review positive? {text}\\nAnswer:') or --chat-template",
        )
    return answers


def contrast_layouts(config, hidden) -> list:
    """``--contrast``: the layouts of answers 1, 2, ... (answer 0's are ``hidden``'s): the same layers and poolings."""
    from ... import store
    from ...store import SiteLayout

    if not config.contrast:
        return []
    answers = range(1, len(contrast_answers(config)))
    return [SiteLayout(store.schema.contrast_site(k), hidden.layers, hidden.width, hidden.poolings) for k in answers]
