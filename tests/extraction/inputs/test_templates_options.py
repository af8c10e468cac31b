"""The prompt options themselves: template parsing and rendering, command-line escapes, ``--pool-at`` parsing, and
the fingerprint and request key, which a run without prompts keeps exactly."""

from __future__ import annotations

import json

import pytest

from featx.errors import InputError
from featx.extraction import ExtractConfig
from featx.extraction.inputs.corpus import read_corpus
from featx.extraction.inputs.positions import PoolAt, parse_pool_at
from featx.extraction.inputs.templates import cli_text, parse_template
from featx.extraction.model.loading import load_model
from featx.extraction.run.freshness import request_key
from featx.extraction.run.resolve import resolve_plan


def test_a_template_renders_fields_by_name_with_their_spans():
    template = parse_template("{{x}} {premise} / {sentence}?", text_col="sentence")
    assert template.fields == ("premise", "text")  # the text column is {text}, whatever its name
    prompt, spans = template.render({"premise": "a b", "text": "c"})
    assert prompt == "{x} a b / c?"
    assert [prompt[first:last] for first, last in spans] == ["a b", "c"]
    # {0} is positional (refused); {\u00b2} names a column, as featx renders by name (isdigit took it for {0})
    assert parse_template("{text} {\u00b2}").fields == ("text", "\u00b2")
    with pytest.raises(InputError, match="positional field"):
        parse_template("{text} {0}")


def test_command_line_escapes():
    assert cli_text("a\\nb\\tc\\\\n") == "a\nb\tc\\n"
    assert cli_text("C:\\temp\\x") == "C:\temp\\x"  # \t is a tab; an unknown escape is kept
    assert cli_text(None) is None


@pytest.mark.parametrize(
    "spec,parsed",
    [
        ("last", PoolAt("last")),
        ("marker:Sentiment:", PoolAt("marker", marker="Sentiment:")),
        ('marker:"Answer: "', PoolAt("marker", marker="Answer: ")),
        ("index:-2", PoolAt("index", index=-2)),
        ("index:0", PoolAt("index", index=0)),
    ],
)
def test_pool_at_forms(spec, parsed):
    assert parse_pool_at(spec) == parsed


@pytest.mark.parametrize("spec", ["index:\u0663", "index:1_0", "index:x", "index:"])
def test_pool_at_index_takes_ascii_digits_only(spec):
    """``index:N`` is read by ``checks.parse_whole``: int took another script's digit ('٣', 3) and '1_0'."""
    with pytest.raises(InputError, match=r"is not a whole number") as error:
        parse_pool_at(spec)
    assert "index:N" in error.value.hint


def test_a_span_pooling_given_as_pool_at_is_pointed_to_pooling():
    with pytest.raises(InputError, match="span_mean is a pooling over the text's own tokens") as error:
        parse_pool_at("span_mean")
    assert "--pooling span_mean" in error.value.hint


def test_a_template_file_starting_with_at_is_kept_apart_from_a_file_name(tmp_path, corpus_csv):
    (tmp_path / "t.txt").write_text("@user {text}\n", encoding="utf-8")
    config = ExtractConfig(corpus=corpus_csv, template=f"@{tmp_path / 't.txt'}")
    assert config.template == "@@user {text}"  # read once; a second check reads the same template, not a file
    assert ExtractConfig(corpus=corpus_csv, template=config.template).template == config.template
    with pytest.raises(InputError, match="is not a file"):
        ExtractConfig(corpus=corpus_csv, template="@missing.txt")


def test_a_run_without_prompts_keeps_its_fingerprint_and_request_key(tiny_model, corpus_csv):
    loaded = load_model(str(tiny_model), "cpu", "float32")
    sha = read_corpus(corpus_csv).sha256
    plain = resolve_plan(ExtractConfig(corpus=corpus_csv, model=str(tiny_model)), sha, loaded)
    assert "prompt" not in json.loads(plain.fingerprint) and plain.poolings == ["cls", "mean", "max", "last", "pooler"]
    options = json.loads(request_key(plain.config, sha))["options"]
    assert not {"template", "chat_template", "system", "pool_at", "skip_missing_marker"} & set(options)
    templated = [
        resolve_plan(ExtractConfig(corpus=corpus_csv, model=str(tiny_model), template=template), sha, loaded)
        for template in ("A {text}", "B {text}")
    ]
    assert templated[0].fingerprint != templated[1].fingerprint != plain.fingerprint
    assert json.loads(templated[0].fingerprint)["prompt"]["template_sha256"]
    assert templated[0].poolings[-3:] == ["span_mean", "span_max", "span_last"]


def test_a_template_that_writes_a_label_into_the_prompt_is_noted(corpus_csv):
    """'{text} ({sentiment})' hands every prompt its label: a probe of it scores 1.0 on any model (TREC, MiniLM:
    1.000 against the words' 0.683), which extract now says beside its other label notes."""
    from featx.extraction import prompted_label_note, read_input

    corpus = read_input(ExtractConfig(corpus=corpus_csv, template="{text} ({sentiment})"))
    noted = [note for note in corpus.label_notes if "--template writes" in note]
    assert noted == [
        "--template writes the column 'sentiment' into every prompt: a probe of 'sentiment' reads its answer in the "
        "prompt, so its score says nothing of what the model computes; leave it out of the template to probe it"
    ]
    assert not [
        note
        for note in read_input(ExtractConfig(corpus=corpus_csv, template="A {text}")).label_notes
        if "--template" in note
    ]
    assert prompted_label_note("@@x {review}: {tense}", "review", "tense")  # as a file records a template
    assert prompted_label_note("{review}: {tense}", "review", "review") is None  # the text is no label
    assert prompted_label_note("", "text", "tense") is None
