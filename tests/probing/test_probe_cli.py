"""``featx probe`` on the command line: the remembered extraction, the table, and every error as exit 2."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.probe_data import N_ROWS, make_rows
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.state import last, remember


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _extract_here(tiny_model, folder):
    """``featx extract corpus.csv`` run in ``folder``: the features file beside the corpus, remembered there."""
    corpus = write_csv(folder / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    result = CliRunner().invoke(main, ["extract", str(corpus), "--model", str(tiny_model), "-q"])
    assert result.exit_code == 0, result.output
    return folder / "corpus.features.h5"


@pytest.fixture(scope="module")
def extracted_once(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe-cli")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        return _extract_here(tiny_model, folder)


@pytest.fixture
def extracted(extracted_once, in_tmp):
    """The module's extraction copied into the test's own directory (a test may change it) and remembered there
    as the last extraction, as ``featx extract`` run there would have."""
    target = in_tmp / extracted_once.name
    shutil.copy(extracted_once, target)
    shutil.copy(extracted_once.with_name("corpus.csv"), in_tmp / "corpus.csv")
    remember("features", target, in_tmp)
    return target


@pytest.fixture
def extracted_here(tiny_model, in_tmp):
    """An extraction of the test's own corpus (whose path the features file records), for a test that changes it."""
    return _extract_here(tiny_model, in_tmp)


def invoke(*args):
    return CliRunner().invoke(main, ["probe", *args])


@pytest.mark.slow
def test_probe_without_a_path_uses_the_last_extraction(extracted):
    result = invoke("--layer", "all", "--pooling", "mean,cls", "--folds", "3", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert f"using the last extraction in this directory: {extracted.resolve()}" in result.output
    assert "majority class" in result.output and "control" in result.output and " *" in result.output
    csv = extracted.with_name("corpus.features.label.probe.csv")
    assert csv.exists() and csv.with_suffix(".json").exists()
    assert last("results") == csv.resolve()


def test_default_label_is_the_first_column_when_there_is_no_label(tiny_model, in_tmp):
    corpus = write_csv(
        in_tmp / "c.csv", [(r[0], r[2], r[1]) for r in make_rows(N_ROWS)], header=("text", "topic", "sentiment")
    )
    featx.extract(corpus, model=str(tiny_model), output=in_tmp / "c.h5", progress=False)
    result = invoke("c.h5", "--layer", "1", "--pooling", "mean", "--folds", "3", "--jobs", "1", "-o", "out/res")
    assert result.exit_code == 2 and "directory" in result.output  # -o into a missing folder
    (in_tmp / "out").mkdir()
    result = invoke("c.h5", "--layer", "1", "--pooling", "mean", "--folds", "3", "--jobs", "1", "-o", "out/res")
    assert result.exit_code == 0, result.output
    first = featx.open(in_tmp / "c.h5").label_columns[0]  # the store lists label columns by name
    assert f"no 'label' column; probing '{first}'" in result.output and (in_tmp / "out" / "res.csv").exists()


def test_changed_corpus_gives_a_warning_not_an_error(extracted_here):
    with open(extracted_here.with_name("corpus.csv"), "a") as handle:
        handle.write("the cat,pos,a\n")
    result = invoke(str(extracted_here), "--layer", "1", "--pooling", "mean", "--folds", "3", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "labels may not match" in result.output


def _set_labels(path, codes):
    with h5py.File(path, "r+") as file:
        file["labels/label"][...] = codes


def _edit_attr(path, key, value):
    with h5py.File(path, "r+") as file:
        file.attrs[key] = value


@pytest.mark.parametrize(
    "case, message",
    [
        ("no-label-column", "has no label column 'nope'"),
        ("one-class", "only one class"),
        ("small-class", "use fewer folds (--folds 3)"),
        ("incomplete", "incomplete"),
        ("stale", "schema"),
        ("layer-out-of-range", "out of range"),
        ("baseline-rows", "does not hold the same rows"),
        ("baseline-prompts", "was extracted with other prompts than corpus.features.h5 (--template, --pool-at differ)"),
        ("attn-without-tokens", "token-level states"),
        ("no-features", "no extraction is remembered"),
        ("labels-for-label", "hint: to probe a stored label column, use --label topic (singular)"),
    ],
)
def test_errors_exit_2_with_a_clear_message(extracted, tmp_path, case, message):
    args = [str(extracted), "--pooling", "mean", "--jobs", "1"]
    if case == "no-label-column":
        args += ["--label", "nope"]
    elif case == "one-class":
        _set_labels(extracted, np.zeros(N_ROWS, np.int32))
    elif case == "small-class":
        _set_labels(extracted, np.r_[np.ones(3), np.zeros(N_ROWS - 3)].astype(np.int32))
    elif case == "incomplete":
        _edit_attr(extracted, "complete", False)
    elif case == "stale":
        _edit_attr(extracted, "schema_version", 0)
    elif case == "layer-out-of-range":
        args += ["--layer", "7"]
    elif case == "baseline-rows":
        other = tmp_path / "other.csv"
        write_csv(other, make_rows(N_ROWS - 2, seed=3), header=("text", "label", "topic"))
        baseline = tmp_path / "other.h5"
        featx.extract(other, model=featx.open(extracted).attrs["model_path"], output=baseline, progress=False)
        args += ["--baseline", str(baseline)]
    elif case == "baseline-prompts":  # the same rows, prompted with another template and read at another token
        baseline = tmp_path / "prompted.h5"
        shutil.copy(extracted, baseline)
        _edit_attr(baseline, "template_sha256", "0" * 64)
        _edit_attr(baseline, "pool_at", "last")
        args += ["--baseline", str(baseline)]
    elif case == "attn-without-tokens":
        args += ["--classifier", "attn"]
    elif case == "labels-for-label":
        args += ["--labels", "topic"]
    elif case == "no-features":
        shutil.rmtree(tmp_path / ".featx")
        args = ["--jobs", "1"]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("featx: error:") and "Traceback" not in result.output
    assert message in result.output


def test_a_results_prefix_never_replaces_the_corpus_it_came_from(extracted_here, in_tmp):
    """-o corpus would write corpus.csv, the corpus the features file records (read for its digest): refused
    before any probe runs, the corpus intact."""
    corpus = in_tmp / "corpus.csv"
    before = corpus.read_bytes()
    result = invoke(str(extracted_here), "--layer", "1", "--pooling", "mean", "--jobs", "1", "-o", "corpus")
    assert result.exit_code == 2 and "-o would write corpus.csv, which is an input of this run" in result.output
    assert corpus.read_bytes() == before and not (in_tmp / "corpus.json").exists()


def test_allow_partial_probes_the_rows_written(extracted):
    _edit_attr(extracted, "complete", False)
    refused = invoke(str(extracted), "--layer", "1")  # the probe's hint names its option; others have none
    assert refused.exit_code == 2 and "again to resume it, or pass --allow-partial to probe" in refused.output
    for other in (["fit", str(extracted), "-o", "x.featx"], ["similarity", str(extracted)], ["labels", str(extracted)]):
        result = CliRunner().invoke(main, other)
        assert result.exit_code == 2 and "is incomplete" in result.output and "--allow-partial" not in result.output
    with pytest.raises(featx.errors.IncompleteError) as python:
        featx.probe(str(extracted), layers="1")
    assert python.value.hint.endswith("or pass allow_partial=True to probe the rows written so far")
    result = invoke(
        str(extracted), "--allow-partial", "--layer", "1", "--pooling", "mean", "--folds", "3", "--jobs", "1"
    )
    assert result.exit_code == 0, result.output
    assert "incomplete" in result.output


def test_probing_a_label_the_template_wrote_into_every_prompt_repeats_extracts_warning(features_copy):
    """A file extracted with --template '{text} (type {label})': extract noted that the label is in every prompt;
    featx probe --label label printed its accuracy 1.000 without a word, and now repeats the warning among the
    notes it prints (read from the options the file records); another label gets none."""
    import json

    from featx.extraction import prompted_label_note
    from featx.probing.plan import probe_config, resolve_plan
    from featx.store import schema

    with h5py.File(features_copy, "r+") as file:
        options = json.loads(file.attrs[schema.OPTIONS])
        file.attrs[schema.OPTIONS] = json.dumps({**options, "template": "{text} (type {label})"})
    warning = prompted_label_note("{text} (type {label})", "text", "label")
    assert warning and f"warning: {warning}" in resolve_plan(probe_config(features_copy, label="label")).notes
    assert not [note for note in resolve_plan(probe_config(features_copy, label="topic")).notes if "--template" in note]
    with h5py.File(features_copy, "r+") as file:  # the template as the file's own attribute records it
        file.attrs[schema.OPTIONS] = json.dumps(options)
        file.attrs[schema.TEMPLATE] = "{text} (type {topic})"
    note = prompted_label_note("{text} (type {topic})", "text", "topic")
    assert note and f"warning: {note}" in resolve_plan(probe_config(features_copy, label="topic")).notes


# One refusal each, as featx.probe's Python caller reads it (the keyword, the value as Python spells it; a whole
# command line as a Python call) and as featx probe prints it (the flags): (options, python, flags, cli, file).
PHRASED = [
    ({"folds": 1}, "folds=1 is too small", ["--folds", "1"], "--folds 1 is too small", "tiny"),
    (
        {"labels": "sentiment"},
        "labels='sentiment': no such label file (labels joins a file of label columns)\n"
        "  hint: to probe a stored label column, use label='sentiment' (singular)",
        ["--labels", "sentiment"],
        "--labels sentiment: no such label file (--labels joins a file of label columns)\n"
        "  hint: to probe a stored label column, use --label sentiment (singular)",
        "tiny",
    ),
    (
        {"curve_layers": "1"},
        "curve_layers applies to train_sizes only\n  hint: add train_sizes='0.1,0.25,0.5,1.0', or leave curve_layers",
        ["--curve-layers", "1"],
        "--curve-layers applies to --train-sizes only\n  hint: add --train-sizes 0.1,0.25,0.5,1.0, or leave",
        "tiny",
    ),
    (
        {"join": "x", "labels": "l.csv"},
        "join='x' is not understood\n  hint: use join='id' or join='row'",
        ["--join", "x", "--labels", "l.csv"],
        "--join 'x' is not understood\n  hint: use --join id or --join row",
        "tiny",
    ),
    (
        {"n_bootstrap": 100_001},
        "n_bootstrap=100001 is too large: at most 100000\n  hint: give n_bootstrap a whole number from 1 to 100000",
        ["--n-bootstrap", "100001"],
        "--n-bootstrap 100001 is too large: at most 100000\n  hint: give --n-bootstrap a whole number from 1",
        "tiny",
    ),
    (
        {"group": "nope"},
        "group='nope': no label column 'nope'",
        ["--group", "nope"],
        "--group nope: no label column 'nope'",
        "tiny",
    ),
    (
        {"label": "head"},
        "label='head' is probed as arcs\n  hint: add arcs=True: featx.probe(features, label='head', arcs=True)",
        ["--label", "head"],
        "--label head is probed as arcs\n  hint: add --arcs: featx probe FEATURES --label head --arcs",
        "words",
    ),
    (  # a word probe reads the hidden states' word vectors only: another site was probed as hidden, unsaid
        {"label": "upos", "sites": "hidden,ffn"},
        "sites='hidden,ffn': a word probe reads the word vectors, and featx extract stores them for the hidden states "
        "only\n  hint: leave out sites",
        ["--label", "upos", "--site", "hidden,ffn"],
        "--site hidden,ffn: a word probe reads the word vectors, and featx extract stores them for the hidden states "
        "only\n  hint: leave out --site",
        "words",
    ),
    (
        {"layers": "1,cat()"},
        "layers='cat()' concatenates no layers",
        ["--layer", "1,cat()"],
        "--layer 'cat()' concatenates no layers",
        "tiny",
    ),
    (
        {"train_sizes": "0.5,1.0", "curve_layers": "stack()"},
        "site 'hidden' (layers [0, 1, 2]): curve_layers='stack()' stacks no layers",
        ["--train-sizes", "0.5,1.0", "--curve-layers", "stack()"],
        "site 'hidden' (layers [0, 1, 2]): --curve-layers 'stack()' stacks no layers",
        "tiny",
    ),
]


@pytest.mark.parametrize("options, python, flags, cli, file", PHRASED, ids=[str(case[0]) for case in PHRASED])
def test_a_refusal_names_what_the_caller_gave(tiny_features, word_features, options, python, flags, cli, file):
    """featx.probe names the keywords (folds=1), featx probe the flags (--folds 1); a hint quoting a whole command
    line stays one on the command line and is a Python call from Python; neither wording leaks into the other."""
    features = str(tiny_features if file == "tiny" else word_features[0])
    with pytest.raises(featx.FeatxError) as error:
        featx.probe(features, write=False, **options)
    assert str(error.value).startswith(python) and "--" not in str(error.value), str(error.value)
    result = invoke(features, *flags)
    assert result.exit_code == 2 and result.output.startswith(f"featx: error: {cli}"), result.output


def test_a_label_too_long_for_a_file_name_is_refused_before_any_probe(tiny_features, tmp_path):
    """Results are named after the label (or -o): a 300-character label failed with "File name too long" once every
    probe had run; the longest name the run writes is measured before the first probe, with the 14 bytes its
    temporary file's name adds (a name of 242 to 255 bytes passed, then failed as .NAME.XXXXXXXX.tmp)."""
    from featx.errors import InputError
    from featx.probing.results import check_name_length, probe_names

    with pytest.raises(InputError, match=r"\.\.\.x{4}\.predictions\.csv, 3\d\d bytes: more than the 241 a results"):
        check_name_length(probe_names(tiny_features, "x" * 300, None))
    fits = 241 - len(probe_names(tiny_features, "", None)[0].name)  # the longest label whose names fit
    check_name_length(probe_names(tiny_features, "x" * fits, None))
    with pytest.raises(InputError, match=r"242 bytes: more than the 241 .* less 14 for the temporary file"):
        check_name_length(probe_names(tiny_features, "x" * (fits + 1), None))
    result = CliRunner().invoke(main, ["probe", str(tiny_features), "--layer", "0", "-o", str(tmp_path / ("y" * 250))])
    assert result.exit_code == 2 and "bytes: more than the 241 a results file name may have here" in result.output
    assert "hint: give them a shorter name with -o PREFIX" in result.output and not list(tmp_path.iterdir())
