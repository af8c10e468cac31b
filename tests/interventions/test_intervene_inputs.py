"""Every bad input of ``featx intervene`` refused with one line (exit 2 on the command line) before any forward pass:
a label the file lacks, a layer outside the model, a bundle of another model, a class the bundle does not know,
alphas NaN or infinite, no LM head when the loss is asked for, a corpus gone or changed, an
amnesic column no probe can read."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.interventions import planted_rows
from support.tiny import write_csv

from featx.cli import main
from featx.errors import InputError
from featx.interventions import InterveneConfig, intervene


@pytest.mark.parametrize(
    "options, message",
    [
        ({"label": "colour", "at": "1"}, "label='colour': .* has no such label column"),
        ({"label": "animal", "at": "9"}, "layer 9 is outside .* whose layers are 0..2"),
        ({"label": "animal", "at": "1", "amnesic": "animal"}, "that is the edited label"),
        ({"edit": "project", "at": "1"}, "edit='project' edits .*: bundle is missing"),
        (
            {"edit": "steer", "at": "1", "toward": "dogs"},
            "edit='steer' reads its dose-response through a bundle's .* or",
        ),
        ({"edit": "project", "bundle": "B", "at": "1"}, "reads layers \\[2\\], so it has no directions at layer 1"),
        ({"edit": "steer", "bundle": "B", "at": "1,2", "toward": "dogs"}, "edit='steer' edits one layer"),
        ({"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "alphas": "0,nan"}, "nan is not a finite"),
        ({"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "alphas": "1,inf"}, "inf is not a finite"),
        ({"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "alphas": "1,-1e300"}, "beyond float32's"),
        ({"edit": "steer", "bundle": "B", "at": "1", "toward": "zebra"}, "does not know class .zebra."),
        (  # a bundle of another label's classes: named both, not "no row of 'other' has that class"
            {"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "label": "other"},
            "predicts the classes cats, dogs, not those of 'other' \\(a, b\\): toward='dogs' is not a class of 'other'",
        ),
        ({"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "pooling": "cls"}, "stores mean"),
        ({"at": "x"}, "'x' is not a layer number"),
        ({"at": "1,²"}, "'²' is not a layer number"),  # str.isdigit takes it, int() did not: a traceback
        ({"label": "animal", "at": "1", "alphas": "1,2"}, "alphas applies to edit='steer' only"),  # not ignored
        ({"edit": "project", "bundle": "B", "at": "2", "method": "inlp"}, "method applies to edit='erase' only"),
        (  # given, not ignored: the dose-response has no bootstrap interval
            {"edit": "steer", "bundle": "B", "at": "1", "toward": "dogs", "n_bootstrap": 200},
            "n_bootstrap sets the probe rows' intervals, and edit='steer' has none",
        ),
    ],
)
def test_a_bad_input_is_one_line_before_any_forward_pass(options, message, planted_features, animal_bundle, no_forward):
    options = {**options, "bundle": animal_bundle} if options.get("bundle") == "B" else options
    with pytest.raises(InputError, match=message) as error:
        intervene(planted_features, write=False, **options)
    assert "\n" not in error.value.message and error.value.hint
    assert "--" not in str(error.value), str(error.value)  # from Python: the keywords (label='colour'), no flag


def test_an_alpha_that_overflows_the_model_is_one_line_naming_it(planted_features, animal_bundle, tmp_path):
    """A steering amount the model's float32 arithmetic cannot carry (1e30: attention and LayerNorm square it) makes
    every state above the edit inf or NaN; that is said of the alpha, with no hint about float16 storage, and nothing
    is written."""
    output = tmp_path / "steered"
    message = r"steering toward dogs at layer 1 with alpha 1e\+30 made .* inf or NaN"
    with pytest.raises(InputError, match=message) as error:
        intervene(
            planted_features, edit="steer", bundle=animal_bundle, toward="dogs", at="1", alphas="0,1e30", output=output
        )
    assert "\n" not in error.value.message and "alphas" in error.value.hint and "float16" not in error.value.hint
    assert not list(tmp_path.iterdir())


def test_a_bundle_of_another_model_is_refused(planted_features, animal_bundle, monkeypatch, no_forward):
    import dataclasses

    import featx
    from featx.interventions import bundle_checks

    probe = featx.load(animal_bundle)
    other = dataclasses.replace(probe, extraction={**probe.extraction, "model_sha256": "0" * 64, "model": "other"})
    monkeypatch.setattr(bundle_checks, "load_bundle", lambda config: other)
    with pytest.raises(InputError, match="was fitted on features of other, not of this file's model"):
        intervene(planted_features, label="animal", at="1", bundle=animal_bundle, write=False)


@pytest.mark.parametrize(
    "option, value, what",
    [
        ("pair_mode", "cross", "sentence pairs"),
        ("option_template", "Review: {text}", "prompts"),
        ("option_chat_template", True, "prompts"),
        ("option_pool_at", "last", "prompts"),
        ("option_contrast", "yes|no", "contrast answers"),
    ],
)
def test_a_bundle_of_another_kind_of_input_is_refused(
    option, value, what, planted_features, animal_bundle, monkeypatch, no_forward
):
    """A bundle fitted on sentence pairs or prompts reads directions the edited single texts do not have."""
    import dataclasses

    import featx
    from featx.interventions import bundle_checks

    probe = featx.load(animal_bundle)
    assert all(probe.extraction.get(key) in (None, False) for key in bundle_checks.OTHER_INPUTS)
    other = dataclasses.replace(probe, extraction={**probe.extraction, option: value})
    monkeypatch.setattr(bundle_checks, "load_bundle", lambda config: other)
    with pytest.raises(InputError, match=f"was fitted on features of {what} .*edits single texts as they are"):
        intervene(planted_features, label="animal", at="2", edit="project", bundle=animal_bundle, write=False)


def test_no_lm_head_is_refused_when_the_loss_is_asked_for(planted_features, no_forward):
    with pytest.raises(InputError, match="loss='yes': the checkpoint of .* holds no LM head weights") as error:
        intervene(planted_features, label="animal", at="1", loss="yes", write=False)
    # the first missing weight by name (transformers reports a set, whose order changed with the hash seed, and
    # with it the note in the JSON of two runs of the same command)
    assert "(missing cls.predictions.bias ...)" in error.value.message


@pytest.mark.parametrize("change", ["gone", "changed"])
def test_a_corpus_gone_or_changed_is_refused(change, planted_features, tmp_path, no_forward):
    from featx.store import open_features

    with open_features(planted_features) as features:
        corpus = features.attrs["corpus_path"]
    copy = tmp_path / "corpus.features.h5"
    shutil.copy(planted_features, copy)
    saved = tmp_path / "saved.csv"
    shutil.copy(corpus, saved)
    try:
        if change == "gone":
            shutil.move(corpus, tmp_path / "moved.csv")
        else:
            with open(corpus, "a", encoding="utf-8") as handle:
                handle.write("one more row,cats,a,train\n")
        with pytest.raises(InputError, match=f"corpus .* {change}" if change == "changed" else "is gone"):
            intervene(copy, label="animal", at="1", write=False)
    finally:
        shutil.copy(saved, corpus)


def test_the_command_line_exits_2_with_one_line(planted_features):
    result = CliRunner().invoke(main, ["intervene", str(planted_features), "--label", "colour", "--at", "1"])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, "--label colour")


def test_results_that_exist_are_refused_without_overwrite(planted_features, tmp_path, no_forward):
    """As featx erase and neurons: PREFIX.csv, .json or the figure .png replaced only with --overwrite, said before
    the model is loaded."""
    kept = tmp_path / "x.png"
    kept.write_text("a user's figure")
    args = ["intervene", str(planted_features), "--label", "animal", "--at", "1", "-o", str(tmp_path / "x")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, f"{kept} already exists .*hint: pass --overwrite to replace it")
    with pytest.raises(InputError, match="already exists") as error:
        intervene(planted_features, label="animal", at="1", output=tmp_path / "x")
    assert error.value.hint == "pass overwrite=True to replace it, or choose another output path"
    assert sorted(tmp_path.iterdir()) == [kept] and kept.read_text() == "a user's figure"


def test_the_config_checks_its_own_options():
    with pytest.raises(InputError, match="--at is missing"):
        InterveneConfig(features="x.h5")
    with pytest.raises(InputError, match="--toward applies to --edit steer only"):
        InterveneConfig(features="x.h5", at="1", toward="pos")


@pytest.mark.parametrize("width", [16, 64])
def test_a_bundle_of_another_width_is_refused(width, planted_features, animal_bundle, monkeypatch, no_forward):
    """A bundle that records this file's model but reads vectors of another width (made from another site or
    checkpoint of it): one line, exit 2 on the command line, before any forward pass."""
    import dataclasses

    import numpy as np

    import featx
    from featx.interventions import bundle_checks

    probe = featx.load(animal_bundle)
    head = dataclasses.replace(probe.head, mean=np.zeros(width))
    monkeypatch.setattr(bundle_checks, "load_bundle", lambda config: dataclasses.replace(probe, head=head))
    with pytest.raises(InputError, match=f"reads vectors of width {width}, not this model's 32"):
        intervene(planted_features, label="animal", at="2", edit="project", bundle=animal_bundle, write=False)
    args = ["intervene", str(planted_features), "--at", "2", "--edit", "project", "--bundle", str(animal_bundle)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert_one_clear_error(result.output, f"reads vectors of width {width}")


@pytest.fixture(scope="module")
def constant_column_features(tiny_model, tmp_path_factory):
    """The planted rows (40) with one more label column holding a single class: no probe can read it."""
    import featx

    folder = tmp_path_factory.mktemp("constant-column")
    rows = [[*row[:3], "same", row[3]] for row in planted_rows(40)]
    corpus = write_csv(folder / "corpus.csv", rows, header=("text", "animal", "other", "constant", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


def test_an_unprobeable_column_named_in_amnesic_is_refused_before_any_forward_pass(
    constant_column_features, no_forward
):
    with pytest.raises(InputError, match="amnesic='constant': .* has only one class") as error:
        intervene(constant_column_features, label="animal", at="1", amnesic="other,constant", write=False)
    assert "--label" not in error.value.hint


def test_an_unprobeable_edited_label_is_refused_by_the_plan(constant_column_features, no_forward):
    """The edited label's task is loaded, and refused, where the plan checks the other columns."""
    from featx.interventions import make_plan

    with pytest.raises(InputError, match="label column 'constant' of .* has only one class"):
        make_plan(InterveneConfig(features=constant_column_features, label="constant", at="1", write=False))


def test_amnesic_all_skips_an_unprobeable_column_with_a_note(constant_column_features):
    """The default (every other column) leaves out a column with one class, as featx erase does, instead of
    failing after the three forward passes."""
    from featx.interventions import format_table

    result = intervene(constant_column_features, label="animal", at="2", n_bootstrap=100, write=False)
    assert set(result.table[result.table.kind == "probe"].name) == {"animal", "other"}
    assert any(note.startswith("amnesic probing skips 'constant'") for note in result.notes)
    assert "amnesic probing skips 'constant'" in format_table(result)


def test_a_bundle_of_concatenated_layers_is_accepted(planted_features, tmp_path):
    """A ``cat(0,2)`` bundle reads the two layers side by side (twice the width): its width was compared with one
    layer's, and every such bundle was refused as made for another model."""
    import featx
    from featx.interventions import InterveneConfig, make_plan

    bundle = tmp_path / "cat.featx"
    featx.fit(planted_features, label="animal", layer="cat(0,2)", pooling="mean", output=bundle, folds=3)
    steer = dict(edit="steer", bundle=bundle, toward="dogs", at="1", alphas="0,4", write=False)
    assert make_plan(InterveneConfig(features=planted_features, **steer)).bundle.spec.kind == "cat"
    result = intervene(planted_features, edit="project", bundle=bundle, at="2", amnesic="none", write=False)
    table = result.table.set_index("name")
    assert set(table["rank"]) == {1}  # two classes: one direction, the layer-2 block of the head's coefficients
    assert table.loc["animal bundle: flipped", "before"] == 0 and table.loc["animal bundle: accuracy", "before"] > 0.75


def test_a_continuous_label_is_refused_and_left_out_of_amnesic_all(scored_features, no_forward):
    from featx.interventions.plan import make_plan

    for options in ({"label": "score"}, {"label": "a", "amnesic": "score"}):
        with pytest.raises(InputError, match="'score' of .* is a continuous number .* work on classes only"):
            intervene(scored_features, at="1", write=False, **options)
    plan = make_plan(InterveneConfig(features=scored_features, label="a", at="1", write=False))
    assert plan.amnesic == ()
    assert len(plan.notes) == 1 and plan.notes[0].startswith("amnesic probing skips 'score': label 'score' of ")


# As featx.interventions.intervene's Python caller reads a refusal (keywords) and as featx intervene prints it
# (flags), checked when the options are made: (options, python, cli arguments, cli).
PHRASED = [
    (
        {"at": "1,x"},
        "at='1,x': 'x' is not a layer number\n  hint: e.g. at='1,3' (0 the embeddings)",
        ["--at", "1,x"],
        "--at '1,x': 'x' is not a layer number\n  hint: e.g. --at 1,3 (0 the embeddings)",
    ),
    (
        {"edit": "steer", "bundle": "b.featx", "at": "1"},
        "edit='steer' needs toward=CLASS\n  hint: name the class to steer toward, e.g. toward='pos'",
        ["--edit", "steer", "--bundle", "b.featx", "--at", "1"],
        "--edit steer needs --toward CLASS\n  hint: name the class to steer toward, e.g. --toward pos",
    ),
    (  # as featx probe's --n-bootstrap: 1 to 100000 (no floor of its own)
        {"at": "1", "n_bootstrap": 0},
        "n_bootstrap=0 must be a whole number of at least 1\n  hint: give n_bootstrap a value of at least 1",
        ["--at", "1", "--n-bootstrap", "0"],
        "--n-bootstrap 0 must be a whole number of at least 1\n  hint: give --n-bootstrap a value of at least 1",
    ),
]


@pytest.mark.parametrize("options, python, args, cli", PHRASED, ids=[str(case[0]) for case in PHRASED])
def test_a_refusal_names_what_the_caller_gave(tmp_path, options, python, args, cli):
    missing = str(tmp_path / "no-such.features.h5")  # never opened: the options are refused first
    with pytest.raises(InputError) as error:
        intervene(missing, **options)
    assert str(error.value) == python, str(error.value)
    result = CliRunner().invoke(main, ["intervene", missing, *args])
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli}"), result.output
