"""Bad input to ``featx lens`` is one clear error before any forward pass: answers that are not single tokens, a
checkpoint without the head, answers that do not match the label, a template without an answer position."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.families import BY_NAME, build_family
from support.lens_models import build_with_head

import featx
from featx.cli import main
from featx.errors import InputError, ModelError

DECODER = "Review: {text}\nSentiment:"


def _lens(corpus, tmp_path, model, **options):
    settings = dict(template=DECODER, answers=" the, walk", label="sentiment", output=str(tmp_path / "lens"))
    return featx.lens(corpus, model=str(model), progress=False, **{**settings, **options})


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"answers": " good, walk"}, InputError, r"' good' is 3 tokens of the .* tokenizer \(\['Ġg', 'oo', 'd'\]\)"),
        ({"answers": "positive= the,neg= walk"}, InputError, r"names 'positive', not a class of it"),
        ({"answers": " the, walk, a"}, InputError, r"3 answer\(s\) by order, and label 'sentiment' has 2"),
        ({"label": "mood"}, InputError, r"label='mood': .* has no such column"),
        ({"template": "Review: {text}"}, InputError, r"has no answer position: it ends in a field"),
    ],
    ids=["multi-token", "unknown-class", "count", "no-label", "no-position"],
)
def test_bad_input_is_refused_before_any_forward_pass(options, error, message, head_models, corpus, tmp_path):
    with pytest.raises(error, match=message):
        _lens(corpus, tmp_path, head_models("gpt2"), **options)
    assert not list(tmp_path.glob("lens*"))  # nothing extracted, nothing written


def test_a_checkpoint_without_its_lm_head_is_refused(corpus, tmp_path):
    bare = build_family(BY_NAME["llama"], tmp_path / "llama")  # a LlamaModel: no lm_head, embeddings untied
    with pytest.raises(ModelError, match=r"has no LM head: its checkpoint stores no lm_head.weight \(and tie_word"):
        _lens(corpus, tmp_path, bare)
    assert not list(tmp_path.glob("lens*"))


def test_a_tied_head_is_the_stored_embedding(tmp_path):
    from featx.extraction import weight_files
    from featx.logit_lens import load_head

    tied = build_with_head("qwen2", tmp_path / "qwen2", tie_word_embeddings=True)
    head = load_head(tied, weight_files(tied), "tied")
    assert head.tensors == {"norm": "model.norm.weight", "unembedding": "model.embed_tokens.weight"}
    gpt2 = build_family(BY_NAME["gpt2"], tmp_path / "gpt2")  # a GPT2Model: GPT-2's head is its tied wte
    assert load_head(gpt2, weight_files(gpt2), "gpt2").tensors["unembedding"] == "wte.weight"


def test_an_encoder_without_its_mlm_head_or_mask_is_refused(tiny_model, head_models, corpus, tmp_path):
    with pytest.raises(ModelError, match=r"has no MLM head: its checkpoint stores no cls.predictions"):
        _lens(corpus, tmp_path, tiny_model, template="{text} it was [MASK] .", answers="good,bad")
    with pytest.raises(InputError, match=r"has no answer position for the MLM .* mask token '\[MASK\]' exactly once"):
        _lens(corpus, tmp_path, head_models("bert"), template="{text} it was good .", answers="good,bad")


def test_the_command_line_says_it_in_one_line_with_exit_2(head_models, corpus, tmp_path):
    args = ["lens", str(corpus), "--model", str(head_models("gpt2")), "--template", "Review: {text}\\nSentiment:"]
    result = CliRunner().invoke(main, [*args, "--answers", " good, bad", "--label", "sentiment", "-q"])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, r"--answers: ' good' is 3 tokens")


def test_a_chat_template_is_for_decoders(head_models, corpus, tmp_path):
    with pytest.raises(InputError, match=r"chat_template=True is for decoders, and .* is read through its MLM head"):
        _lens(corpus, tmp_path, head_models("bert"), template="{text} it was [MASK] .", chat_template=True)


def test_an_output_on_the_corpus_or_a_users_file_is_refused_before_the_model_loads(corpus, tmp_path):
    """``-o corpus`` would write its table over corpus.csv; a user's figure at PREFIX.png would be replaced: each
    refused before the model is even read (no model here), nothing changed; without the figure, its path is free."""
    before = corpus.read_bytes()
    with pytest.raises(InputError, match=r"would write .*corpus\.csv, which is an input of this run"):
        _lens(corpus, tmp_path, tmp_path / "no-model", output=str(corpus.with_suffix("")))
    (tmp_path / "mine.png").write_bytes(b"\x89PNG\r\n\x1a\nmine")
    from featx.logit_lens import LensConfig, check_outputs

    config = LensConfig(corpus, template=DECODER, answers=" the, walk", output=str(tmp_path / "mine"))
    with pytest.raises(InputError, match=r"mine\.png exists and is not a figure featx wrote: not replaced"):
        check_outputs(config)
    check_outputs(config.replace(figure=False))  # --no-figure: no figure to write
    (tmp_path / "mine.json").write_text('{"meta": {"command": "probe"}}')
    with pytest.raises(InputError, match=r"mine\.json exists and is not a lens record featx wrote"):
        check_outputs(config.replace(figure=False))
    assert corpus.read_bytes() == before and (tmp_path / "mine.png").read_bytes().endswith(b"mine")


def test_more_folds_than_a_class_has_rows_is_refused_before_the_forward_pass(head_models, corpus, tmp_path):
    """Without a split column the probe beside the lens runs --folds stratified folds: 50 folds for classes of 6
    rows was refused by the probe after the extraction; the same plan is made from the corpus first."""
    import csv

    rows = list(csv.reader(corpus.open()))
    unsplit = tmp_path / "unsplit.csv"
    with unsplit.open("w", newline="") as handle:
        csv.writer(handle).writerows([row[: rows[0].index("split")] for row in rows])
    with pytest.raises(InputError, match=r"has only \d labelled row\(s\), fewer than the 50 cross-validation folds"):
        _lens(unsplit, tmp_path, head_models("gpt2"), folds=50)
    assert not list(tmp_path.glob("lens*"))  # nothing extracted


def test_a_corpus_in_another_encoding_or_delimiter_is_read_with_the_lens_own_options(head_models, corpus, tmp_path):
    """The corpus's refusals name --encoding and --sep: the lens has them, as featx extract does."""
    from featx.logit_lens import LensConfig
    from featx.logit_lens.answers import parse_answers
    from featx.logit_lens.preflight import label_classes

    other = tmp_path / "latin.csv"
    header, rows = corpus.read_text(encoding="utf-8").replace(",", ";").split("\n", 1)
    other.write_bytes(f"{header}\n{rows.replace('e', 'é', 1)}".encode("latin-1"))
    with pytest.raises(InputError, match="is not valid utf-8") as refused:
        _lens(other, tmp_path, head_models("gpt2"))
    assert "encoding" in refused.value.hint
    with pytest.raises(InputError, match="unknown encoding 'latin-9x'"):
        _lens(other, tmp_path, head_models("gpt2"), encoding="latin-9x")
    config = LensConfig(other, answers=" the, walk", template=DECODER, label="sentiment", encoding="latin-1", sep=";")
    assert label_classes(config, parse_answers(config.answers))[0] == ["neg", "pos"]
    assert not list(tmp_path.glob("lens*"))
