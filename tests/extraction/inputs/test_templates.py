"""Prompts: templated features equal a plain ``transformers`` forward of the rendered prompt at the same tokens.

For every decoder family of the zoo, a SentencePiece-style Llama and BERT: ``last``, ``at`` (``--pool-at marker:``)
and the span poolings match a per-row forward without padding (fp32, 1e-4 relative to the activations' scale),
with rows of different lengths batched together (so neighbours and right padding never matter); the pooling
masks hold for a left-padded batch too; a chat template renders exactly what ``apply_chat_template`` gives.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from support.families import FAMILIES, build_family
from support.parity import relative_error
from support.prompt_models import CHATML, add_chat_template, build_sentencepiece_llama, prompt_reference
from support.tiny import SENTENCES, write_csv

import featx
from featx.extraction import ExtractConfig, extract

TEXTS = [row[0] for row in SENTENCES]
TEMPLATE = "Review: {text}\nSentiment:"
MARKER = "Sentiment:"
TOLERANCE = 1e-4
PROMPT_FAMILIES = [family.name for family in FAMILIES if family.causal] + ["llama-sentencepiece", "bert"]


@pytest.fixture(scope="module")
def prompt_models(tmp_path_factory):
    cache = {}
    by_name = {family.name: family for family in FAMILIES}

    def get(name):
        if name not in cache:
            folder = tmp_path_factory.mktemp(name)
            cache[name] = (
                build_sentencepiece_llama(folder)
                if name == "llama-sentencepiece"
                else build_family(by_name[name], folder)
            )
        return cache[name]

    return get


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_csv(tmp_path_factory.mktemp("prompt-corpus") / "corpus.csv", SENTENCES)


def _extract(model, corpus, output, **options):
    return extract(
        ExtractConfig(
            corpus=corpus,
            output=output,
            model=str(model),
            progress=False,
            batch_size=5,
            store_dtype="float32",
            **options,
        )
    )


def _worst(features, reference: dict, pooling: str) -> tuple[float, float]:
    """Largest relative error (to the reference's scale) and largest absolute difference over the layers."""
    relative = absolute = 0.0
    for layer in features.layers:
        got, expected = features.features(pooling, layer), reference[pooling][:, layer]
        relative = max(relative, relative_error(got, expected))
        absolute = max(absolute, float(np.abs(got - expected).max()))
    return relative, absolute


@pytest.mark.parametrize("name", PROMPT_FAMILIES)
def test_templated_features_match_a_plain_forward_of_the_prompt(name, prompt_models, corpus, tmp_path):
    model = prompt_models(name)
    summary = _extract(model, corpus, tmp_path / "out.h5", template=TEMPLATE, pool_at=f"marker:{MARKER}")
    prompts = [TEMPLATE.replace("{text}", text) for text in TEXTS]
    spans = [(len("Review: "), len("Review: ") + len(text)) for text in TEXTS]
    reference = prompt_reference(model, prompts, spans, MARKER)
    with featx.open(summary.output) as features:
        assert {"at", "span_mean", "span_max", "span_last", "last", "mean"} <= set(features.poolings)
        assert features.texts == TEXTS  # the stored texts stay the corpus's
        attrs = features.attrs
        assert attrs["template"] == TEMPLATE and attrs["prompt_example"] == prompts[0]
        assert attrs["pool_at"] == f"marker:{MARKER}" and len(attrs["template_sha256"]) == 64
        figures = {pooling: _worst(features, reference, pooling) for pooling in reference}
    print(name, {pooling: f"{absolute:.1e}" for pooling, (_, absolute) in figures.items()})
    assert all(relative <= TOLERANCE for relative, _ in figures.values()), figures


def test_the_marker_token_is_the_last_token_of_the_marker(prompt_models, corpus, tmp_path):
    """With the marker ending the prompt, ``at`` is the ``last`` token; with it inside, an earlier one."""
    model, texts = prompt_models("gpt2"), TEXTS[:5]
    short = write_csv(tmp_path / "short.csv", SENTENCES[:5])
    template = "Is it good? {text}\nAnswer: yes"
    summary = _extract(model, short, tmp_path / "inside.h5", template=template, pool_at="marker:Answer:")
    prompts = [template.replace("{text}", text) for text in texts]
    spans = [(prompt.index(text), prompt.index(text) + len(text)) for prompt, text in zip(prompts, texts, strict=True)]
    reference = prompt_reference(model, prompts, spans, "Answer:")
    with featx.open(summary.output) as features:
        assert _worst(features, reference, "at")[0] <= TOLERANCE
        assert not np.allclose(features.features("at", 2), features.features("last", 2))


def test_a_templated_row_does_not_depend_on_its_batch(prompt_models, corpus, tmp_path):
    """The same rows alone (batch size 1) and batched with longer and shorter neighbours give the same features."""
    model = prompt_models("llama")
    options = dict(template=TEMPLATE, pool_at="index:-2")
    alone = _extract(model, corpus, tmp_path / "alone.h5", **options, max_tokens=64)
    with featx.open(alone.output) as one, featx.open(_extract(model, corpus, tmp_path / "b.h5", **options).output) as b:
        for pooling in one.poolings:
            assert np.abs(one.features(pooling, 2) - b.features(pooling, 2)).max() <= 1e-5, pooling


def test_the_prompt_poolings_hold_for_left_padding(prompt_models):
    """The span and ``at`` masks of a left-padded batch (HF's decoder default) pick the same tokens as unpadded rows."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from featx.extraction.forward.pooling import PROMPT_FUNCTIONS, prompt_masks
    from featx.store import hidden_layout

    folder = prompt_models("llama")
    tokenizer = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    tokenizer.pad_token = tokenizer.eos_token  # Llama has none; the padding is masked
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    prompts = [TEMPLATE.replace("{text}", text) for text in TEXTS[:4]]
    spans = [(8, 8 + len(text)) for text in TEXTS[:4]]
    reference = prompt_reference(folder, prompts, spans, MARKER)
    batch = tokenizer(prompts, padding=True, return_offsets_mapping=True, return_tensors="pt")
    offsets = batch.pop("offset_mapping")
    mask = batch["attention_mask"]
    span = (
        torch.stack(
            [(offsets[row, :, 0] < last) & (offsets[row, :, 1] > first) for row, (first, last) in enumerate(spans)]
        )
        & mask.bool()
    )
    at = mask.sum(1) - 1  # counted from each row's first real token: the marker ends the prompt
    with torch.no_grad():
        positions = (mask.cumsum(1) - 1).clamp_min(0)
        states = model(**batch, position_ids=positions, output_hidden_states=True).hidden_states[-1]
    layout = hidden_layout([2], 32, ["at", "span_mean", "span_max", "span_last"])
    masks = prompt_masks([layout], mask, span.to(torch.int8), at)
    for pooling, path in layout.pooled_paths.items():
        got = PROMPT_FUNCTIONS[pooling](states, masks[path]).double().numpy()
        assert relative_error(got, reference[pooling][:, -1]) <= TOLERANCE, pooling


@pytest.mark.parametrize("name", ["gpt2", "llama-sentencepiece"])
def test_a_token_that_merges_template_characters_into_the_text_is_in_the_span(name, prompt_models):
    """Byte-level BPE's ``Ġthe`` and SentencePiece's ``▁the`` hold the template's space and the text's first word:
    they overlap the text, so they belong to the span; the template's ``:`` touches it and does not."""
    from transformers import AutoTokenizer

    from featx.extraction.inputs.positions import tokenize_prompts
    from featx.extraction.inputs.templates import PromptMaker

    tokenizer = AutoTokenizer.from_pretrained(str(prompt_models(name)))
    config = SimpleNamespace(template="Review: {text} ok", text_col="text", chat_template=False, system=None)
    corpus = SimpleNamespace(texts=["the cat"], columns={})
    maker = PromptMaker(config, corpus)
    tokenized = tokenize_prompts(maker, [maker.render(0)], tokenizer, 64, None, False, ["0"])
    tokens = tokenizer.convert_ids_to_tokens(tokenized.input_ids.tolist())
    in_span = [token for token, flag in zip(tokens, tokenized.span, strict=True) if flag]
    space = "Ġ" if name == "gpt2" else "▁"
    assert in_span[0] == f"{space}the" and "".join(in_span).replace(space, " ") == " the cat", tokens
    assert tokens[tokens.index(in_span[-1]) + 1] == space  # the template's space before "ok" is not the text's


def test_a_chat_template_renders_what_apply_chat_template_gives(prompt_models, corpus, tmp_path):
    from transformers import AutoTokenizer

    folder = add_chat_template(prompt_models("qwen2"))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    system, template, texts = "Be brief.", "Review: {text}", TEXTS[:5]  # the longer rows would be cut
    short = write_csv(tmp_path / "short.csv", SENTENCES[:5])
    summary = _extract(folder, short, tmp_path / "chat.h5", template=template, chat_template=True, system=system)

    def messages(text):
        return [{"role": "system", "content": system}, {"role": "user", "content": template.replace("{text}", text)}]

    prompts = [tokenizer.apply_chat_template(messages(t), tokenize=False, add_generation_prompt=True) for t in texts]
    assert prompts[0].endswith("<|im_start|>assistant\n") and "Be brief." in prompts[0]
    spans = [(prompt.index(text), prompt.index(text) + len(text)) for prompt, text in zip(prompts, texts, strict=True)]
    ids = tokenizer.apply_chat_template(messages(texts[0]), tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    reference = prompt_reference(folder, prompts, spans, None, add_special_tokens=False)
    with featx.open(summary.output) as features:
        assert features.attrs["prompt_example"] == prompts[0]
        assert bool(features.attrs["chat_template"]) and features.attrs["system_message"] == system
        assert int(features.n_kept[0]) == len(ids)
        for pooling in ("last", "span_mean", "span_max", "span_last"):
            assert _worst(features, reference, pooling)[0] <= TOLERANCE, pooling


TRIMMING_CHATML = CHATML.replace("{{ message['content'] }}", "{{ message['content'] | trim }}")  # as Llama 3's


@pytest.mark.parametrize("template", [None, "{text} ok"])
def test_a_chat_template_that_trims_the_message_reads_the_text_it_kept(prompt_models, tmp_path, template):
    """Llama 3's and Gemma's chat templates `| trim` the user message: a row whose text has leading or trailing
    whitespace was refused ("changes the user message"). Its span is now the text's characters the prompt holds,
    and the features equal a plain forward of apply_chat_template's prompt."""
    import shutil

    from transformers import AutoTokenizer

    folder = add_chat_template(shutil.copytree(prompt_models("qwen2"), tmp_path / "qwen2"), TRIMMING_CHATML)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    rows = [(f"  {text} " if index % 2 else f"{text}\n", *rest) for index, (text, *rest) in enumerate(SENTENCES[:4])]
    corpus = write_csv(tmp_path / "edges.csv", rows)
    summary = _extract(folder, corpus, tmp_path / "trim.h5", template=template, chat_template=True)
    users = [(template or "{text}").replace("{text}", row[0]) for row in rows]
    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)
        for user in users
    ]
    kept = [row[0].lstrip() if template else row[0].strip() for row in rows]  # whitespace inside the message stays
    spans = [(prompt.index(text), prompt.index(text) + len(text)) for prompt, text in zip(prompts, kept, strict=True)]
    reference = prompt_reference(folder, prompts, spans, None, add_special_tokens=False)
    with featx.open(summary.output) as features:
        for pooling in ("last", "span_mean", "span_max", "span_last"):
            assert _worst(features, reference, pooling)[0] <= TOLERANCE, pooling
    if template is None:  # the message trimmed is the text stripped: the same prompts, cut at the same token
        stripped = write_csv(tmp_path / "stripped.csv", [(row[0].strip(), *row[1:]) for row in rows])
        options = dict(chat_template=True, max_length=20)
        cut = _extract(folder, corpus, tmp_path / "cut.h5", **options)
        plain = _extract(folder, stripped, tmp_path / "plain.h5", **options)
        with featx.open(cut.output) as features, featx.open(plain.output) as expected:
            assert features.truncated.any() and (features.n_kept <= 20).all()
            np.testing.assert_array_equal(features.n_kept, expected.n_kept)
            for pooling in ("last", "span_mean"):
                np.testing.assert_allclose(features.features(pooling, 2), expected.features(pooling, 2), atol=1e-6)


@pytest.mark.parametrize("chat", [CHATML, TRIMMING_CHATML], ids=["verbatim", "trimming"])
def test_a_chat_prompt_cut_to_fit_renders_the_template_twice_per_row(prompt_models, chat, tmp_path, monkeypatch):
    """A row too long for --max-length was cut by a binary search that rendered the chat template once per
    candidate (about nine times a row); a template that puts the message in verbatim is now rendered once per row
    and once for the cut found (checked), with the same tokens, spans and positions. A trimming one is not taken
    as verbatim and keeps rendering each candidate: the same result either way. --contrast's answers too."""
    import shutil

    from transformers import AutoTokenizer

    from featx.extraction.inputs import positions
    from featx.extraction.inputs.templates import PromptMaker

    folder = add_chat_template(shutil.copytree(prompt_models("qwen2"), tmp_path / "qwen2"), chat)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    config = SimpleNamespace(template="Review: {text}", text_col="text", chat_template=True, system=None)
    corpus = SimpleNamespace(texts=[" ".join(TEXTS[i : i + 3]) + " " for i in range(8)], columns={})
    maker = PromptMaker(config, corpus, tokenizer, "qwen2")
    answers = [maker.for_answer(" yes"), maker.for_answer(" not at all")]
    calls, render = [], tokenizer.apply_chat_template
    monkeypatch.setattr(tokenizer, "apply_chat_template", lambda *a, **k: calls.append(1) or render(*a, **k))

    def run(makers):
        rendered = [makers[0].render(row) for row in range(len(corpus.texts))]
        ids = [str(row) for row in range(len(corpus.texts))]
        return positions.tokenize_prompts(makers[0], rendered, tokenizer, 56, None, False, ids, fits_too=makers[1:])

    got = [run([maker]), run(answers)]
    n_calls, rows, cut = len(calls), len(corpus.texts), int((got[0].full_lengths > 56).sum())
    if chat == CHATML:  # per row its prompt (each answer's), per row cut the check of each answer's; two per maker
        assert n_calls == (rows + cut + 2) + (2 * rows + 2 * cut + 2 * 2), n_calls
    monkeypatch.setattr(positions, "_framed", lambda maker: None)  # every candidate rendered by the template
    expected = [run([maker]), run(answers)]
    assert cut >= 6 and (got[0].lengths <= 56).all(), got[0].full_lengths
    for each, reference in zip(got, expected, strict=True):
        for name in ("input_ids", "offsets", "span"):
            np.testing.assert_array_equal(getattr(each, name), getattr(reference, name))
    assert len(calls) - n_calls > 5 * cut  # the slow search renders each candidate


def test_rows_too_long_are_cut_in_their_text_and_keep_the_template(prompt_models, corpus, tmp_path):
    """With --max-length below the longest prompt, the text is cut at a token boundary; the marker stays."""
    model = prompt_models("gpt2")
    summary = _extract(model, corpus, tmp_path / "cut.h5", template=TEMPLATE, pool_at=f"marker:{MARKER}", max_length=32)
    with featx.open(summary.output) as features:
        assert features.truncated.any() and (features.n_kept <= 32).all()
        assert np.allclose(features.features("at", 2), features.features("last", 2))


@pytest.mark.parametrize("template", ["Is it good? {text}\nAnswer:", "Is it good? {text}\nAnswer: {answer}!"])
def test_contrast_pairs_store_each_answer_as_a_plain_forward_would(template, prompt_models, tmp_path):
    """--contrast 'yes,no': answer 0 in the ordinary datasets, answer 1 as site answer_1, each equal to a plain
    forward of its prompt (the answer in {answer}, else after a space); the probe reads their difference."""
    from featx.probing.tasks.pairs import pooled_block

    model, texts = prompt_models("llama"), TEXTS[:5]
    short = write_csv(tmp_path / "short.csv", SENTENCES[:5])
    summary = _extract(model, short, tmp_path / "contrast.h5", template=template, contrast="yes, no", pool_at="last")
    with featx.open(summary.output) as features:
        assert features.attrs["contrast"] == '["yes", "no"]'
        for answer, site in (("yes", "hidden"), ("no", "answer_1")):
            if "{answer}" in template:
                prompts = [template.replace("{text}", text).replace("{answer}", answer) for text in texts]
            else:
                prompts = [template.replace("{text}", text) + " " + answer for text in texts]
            spans = [(len("Is it good? "), len("Is it good? ") + len(text)) for text in texts]
            reference = prompt_reference(model, prompts, spans, None)
            for pooling in ("at", "last", "span_mean", "span_last"):
                got = np.stack([features.features(pooling, layer, site=site) for layer in features.layers], 1)
                assert relative_error(got, reference[pooling]) <= TOLERANCE, (site, pooling)
        difference = features.features("at", 2) - features.features("at", 2, site="answer_1")
        assert np.allclose(pooled_block(features, "at", 2), difference)


def test_contrast_answers_of_different_lengths_cut_a_long_text_alike(prompt_models, tmp_path, monkeypatch):
    """A row too long is cut where every answer's prompt fits, so all answers hold the same text: its tokens'
    embeddings (layer 0, context-free) pool alike, where a longer answer used to cut the text shorter for itself.
    The summary and the progress bar's rate count every answer's tokens (answer 0's only before)."""
    import shutil

    import h5py

    from featx.errors import StoreError
    from featx.extraction.run import loop

    counted: list[int] = []  # the tokens the progress bar's rate counts, batch by batch
    add = loop._Speed.add
    monkeypatch.setattr(loop._Speed, "add", lambda speed, n_tokens: counted.append(n_tokens) or add(speed, n_tokens))
    short = write_csv(tmp_path / "short.csv", SENTENCES[:6])
    options = dict(template="{text}\nA: {answer}", contrast="yes, not at all good", pool_at="last", max_length=20)
    summary = _extract(prompt_models("llama"), short, tmp_path / "cut.h5", layers="0", **options)
    with featx.open(summary.output) as features:
        assert features.contrast_n_kept.shape == (6, 1) and (features.contrast_n_kept[:, 0] > features.n_kept).all()
        assert summary.tokens == sum(counted) == int(features.n_kept.sum() + features.contrast_n_kept.sum())
    damaged = shutil.copy(summary.output, tmp_path / "damaged.h5")  # one column per further answer, or refused
    with h5py.File(damaged, "r+") as file:
        del file["rows/contrast_n_kept"]
        file.create_dataset("rows/contrast_n_kept", data=np.zeros((6, 2), dtype=np.int32))
    with pytest.raises(StoreError, match=r"dataset 'rows/contrast_n_kept' has shape \(6, 2\), expected \(6, 1\)"):
        featx.open(damaged)
    with featx.open(summary.output) as features:
        assert features.truncated.any()
        for pooling in ("span_mean", "span_max"):
            np.testing.assert_array_equal(features.features(pooling, 0), features.features(pooling, 0, site="answer_1"))
