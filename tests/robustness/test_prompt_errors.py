"""Prompt options refused through the CLI: exit 2, one clear line (and a hint), before the first forward pass
(no features file, not even a partial one); and the accepted forms (@FILE, escapes, several columns, rows left
out for lacking the marker) doing what their help says."""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.families import BY_NAME, build_family

import featx
from featx.cli import main

ROWS = [("the cat loved the film", "pos", "a film"), ("a dog hated it", "neg", "a dog"), ("blue", "pos", "blue")]
TEMPLATE = "Review: {text}\\nSentiment:"

REFUSED = [
    ("no text field", ["--template", "Review: {review}"], r"--template has no \{text\} field.*hint: put \{text\}"),
    (
        "missing column",
        ["--template", "{text} {premise}"],
        r"--template names column\(s\) premise that c\.csv lacks; columns found: text, label, topic",
    ),
    ("positional field", ["--template", "{text} {}"], r"--template has a positional field \{\}"),
    ("format spec", ["--template", "{text:10}"], r"has a format, attribute or index"),
    ("malformed", ["--template", "{text"], r"--template is malformed"),
    ("template file missing", ["--template", "@nope.txt"], r"--template @nope\.txt: nope\.txt is not a file"),
    (
        "marker missing in rows",
        ["--template", "Review: {text}", "--pool-at", "marker:film"],
        r"marker:film: the marker does not occur in the prompt of 2 of 3 row\(s\) \(ids 1, 2\).*--skip-missing-marker",
    ),
    (
        "no chat template",
        ["--chat-template"],
        r"--chat-template: the tokenizer of \S*gpt2\S* has no chat template.*hint: use --template alone",
    ),
    (
        "template longer than the maximum",
        ["--template", TEMPLATE, "--max-length", "8"],
        r"the prompt template alone is \d+ tokens, which leaves no room for text within the 8-token maximum",
    ),
    ("marker without a template", ["--pool-at", "marker:x"], r"--pool-at marker:x needs a prompt template"),
    ("bad --pool-at", ["--pool-at", "first"], r"--pool-at 'first' is not understood.*hint: use last, marker"),
    ("bad index", ["--pool-at", "index:x"], r"--pool-at index:x: 'x' is not a whole number"),
    (
        "index beyond rows",
        ["--pool-at", "index:-40"],
        r"--pool-at index:-40 is beyond 3 row\(s\) \(ids 0, 1, 2\)",
    ),
    (
        "spans without a template",
        ["--pooling", "mean,span_mean"],
        r"pooling span_mean reads the text's span inside a prompt, and there is no template",
    ),
    ("at without --pool-at", ["--pooling", "at"], r"pooling 'at' needs --pool-at"),
    ("system without chat", ["--system", "Be brief."], r"--system is a message of the chat template"),
    (
        "skip without marker",
        ["--template", TEMPLATE, "--skip-missing-marker"],
        r"--skip-missing-marker applies to --pool-at marker:TEXT only",
    ),
    (
        "template with pairs",
        ["--template", TEMPLATE, "--text-pair-col", "topic"],
        r"--template does not combine with --text-pair-col.*hint: name both columns in the template",
    ),
    ("template with windows", ["--template", TEMPLATE, "--long", "window"], r"does not combine with --long window"),
    (  # GPT-2's tokenizer has no pair format: 'a film' and its topic would be one run-on text
        "cross pairs glued",
        ["--text-pair-col", "topic"],
        r"--pair-mode cross: the tokenizer's pair format puts nothing between the two texts.*"
        r"hint: name both columns in a template instead of --text-pair-col, e.g. --template '\{text\}\\n\{topic\}'",
    ),
]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return build_family(BY_NAME["gpt2"], tmp_path_factory.mktemp("gpt2"))


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open(tmp_path / "c.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label", "topic"])
        writer.writerows(ROWS)
    return tmp_path / "c.csv"


def _run(gpt2, *args):
    return CliRunner().invoke(main, ["extract", "c.csv", "--model", str(gpt2), "-q", "-o", "out.h5", *args])


@pytest.mark.parametrize("case,args,pattern", REFUSED, ids=[case[0] for case in REFUSED])
def test_refused_before_the_first_forward_pass(gpt2, corpus, case, args, pattern):
    result = _run(gpt2, *args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)
    assert not list(corpus.parent.glob("out.h5*"))  # nothing was written: refused before the batch loop


def test_rows_lacking_the_marker_are_left_out_when_asked(gpt2, corpus):
    result = _run(gpt2, "--template", "Review: {text}", "--pool-at", "marker:film", "--skip-missing-marker")
    assert result.exit_code == 0, result.output
    assert "2 row(s) whose prompt lacks the marker 'film' left out (--skip-missing-marker): ids 1, 2" in result.output
    with featx.open(corpus.parent / "out.h5") as features:
        assert features.texts == [ROWS[0][0]] and features.ids == ["0"]
        assert features.attrs["skipped_marker_rows"] == '["1", "2"]'


def test_several_columns_escapes_and_a_template_file(gpt2, corpus):
    """``{topic}`` reads another column; ``\\n`` typed on the command line is a newline; @FILE is read as it is."""
    result = _run(gpt2, "--template", "About {topic}: {text}\\nSentiment:", "--pool-at", "marker:Sentiment:")
    assert result.exit_code == 0, result.output
    with featx.open(corpus.parent / "out.h5") as features:
        assert features.attrs["prompt_example"] == "About a film: the cat loved the film\nSentiment:"
        assert "topic" in features.label_columns  # the column stays a label too
    (corpus.parent / "prompt.txt").write_text("Text: {text}\\n{{literal}}\n", encoding="utf-8")
    result = _run(gpt2, "--template", "@prompt.txt", "--overwrite")
    assert result.exit_code == 0, result.output
    with featx.open(corpus.parent / "out.h5") as features:
        assert features.attrs["prompt_example"] == "Text: the cat loved the film\\n{literal}"
        assert features.attrs["template"] == "Text: {text}\\n{{literal}}"


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["--template", TEMPLATE, "--contrast", "True"], r"--contrast 'True' needs at least two distinct, non-empty"),
        (["--template", TEMPLATE, "--contrast", "a,a"], r"needs at least two distinct"),
        (["--template", TEMPLATE, "--contrast", "a,b", "--tokens"], r"--contrast stores each answer's pooled hidden"),
        (
            ["--contrast", "True,False"],
            r"--contrast renders each row's prompt once per answer, and there is no template",
        ),
    ],
)
def test_contrast_refused(gpt2, corpus, args, pattern):
    result = _run(gpt2, *args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, pattern)


def test_embedded_pairs_glued_say_how_to_join_them(gpt2):
    """featx.embed's texts have no columns a template could name: the refusal says to join the pairs, where it
    offered a template (which embed's pairs do not combine with)."""
    import featx
    from featx.errors import InputError

    with pytest.raises(InputError, match="puts nothing between the two texts") as refused:
        featx.embed(["a film"], text_pairs=["cinema"], model=str(gpt2))
    assert refused.value.hint == (
        "join each pair into one text yourself (e.g. a + '\\n' + b) and leave text_pairs out, or use "
        "pair_mode='separate'"
    )
