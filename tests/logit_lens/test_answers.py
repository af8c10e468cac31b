"""``--answers``: parsing, the label mapping (by order and by name) and its refusals."""

from __future__ import annotations

import pytest

from featx.errors import InputError
from featx.logit_lens import Answers, parse_answers


def test_answers_keep_their_leading_spaces_in_order():
    assert parse_answers(" yes, no") == Answers((" yes", " no"))
    assert parse_answers(" yes, no").classes_to_answers(["neg", "pos"], "sentiment") == [0, 1]


def test_a_mapping_names_each_class_and_its_answer():
    answers = parse_answers("pos= great,neg= awful")
    assert answers == Answers((" great", " awful"), ("pos", "neg"))
    assert answers.classes_to_answers(["neg", "pos"], "sentiment") == [1, 0]
    assert answers.describe(["neg", "pos"], "sentiment") == "neg -> ' awful', pos -> ' great'"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "--answers is empty"),
        (" yes", "gives one answer"),
        ("pos= great, awful", "mixes LABEL=ANSWER"),
        (" yes, yes", "repeats the answer ' yes'"),
        ("pos= a,pos= b", "repeats the label 'pos'"),
        (" yes,", "has an empty answer"),
    ],
)
def test_bad_answers_are_refused(spec, message):
    with pytest.raises(InputError, match=message):
        parse_answers(spec)


def test_answers_that_do_not_match_the_label_are_refused():
    with pytest.raises(InputError, match=r"3 answer\(s\) by order, and label 'sentiment' has 2 class"):
        parse_answers("a,b,c").classes_to_answers(["neg", "pos"], "sentiment")
    with pytest.raises(InputError, match=r"names 'positive', not a class of it; leaves out class\(es\) 'pos'"):
        parse_answers("positive=a,neg=b").classes_to_answers(["neg", "pos"], "sentiment")


def test_a_refusal_names_the_keyword_from_python_and_the_flag_on_the_command_line(tmp_path):
    """featx.lens words its refusals for its caller: ``answers='pos= a, b'`` and a keyword hint from Python,
    ``--answers 'pos= a, b'`` and the flag on the command line (checked when the config is made: no model)."""
    from click.testing import CliRunner

    import featx
    from featx.cli import main

    corpus = tmp_path / "c.csv"
    corpus.write_text("text,label\na,x\n")
    with pytest.raises(InputError) as error:
        featx.lens(corpus, answers="pos= a, b", template="{text}")
    assert str(error.value) == (
        "answers='pos= a, b' mixes LABEL=ANSWER items and plain answers\n  hint: write answers=' yes, no' (answer i "
        "for the label's i-th class) or 'positive= great,negative= awful'"
    )
    result = CliRunner().invoke(main, ["lens", str(corpus), "--answers", "pos= a, b", "--template", "{text}"])
    assert result.exit_code == 2 and result.output.startswith(
        "featx: error: --answers 'pos= a, b' mixes LABEL=ANSWER items and plain answers\n  hint: write --answers "
        "' yes, no'"
    ), result.output
    # --n-bootstrap is featx probe's, checked alike: 1 to 100000 (no floor of the lens's own)
    with pytest.raises(InputError) as error:
        featx.lens(corpus, answers=" a, b", template="{text}", n_bootstrap=0)
    assert (
        str(error.value)
        == "n_bootstrap=0 must be a whole number of at least 1\n  hint: give n_bootstrap a value of at least 1"
    )
    result = CliRunner().invoke(
        main, ["lens", str(corpus), "--answers", " a, b", "--template", "{text}", "--n-bootstrap", "0"]
    )
    assert result.exit_code == 2 and result.output.startswith(
        "featx: error: --n-bootstrap 0 must be a whole number of at least 1\n  hint: give --n-bootstrap a value"
    ), result.output
