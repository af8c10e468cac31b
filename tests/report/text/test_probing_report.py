"""The probe's terminal header: a label with many classes is summarised, not printed on one endless line."""

from support.results import synthetic_results

from featx.report.text.probe import class_counts_text, format_table


def test_few_classes_are_listed():
    assert class_counts_text({"neg": 40, "pos": 38}) == "neg 40, pos 38"


def test_many_classes_are_summarised():
    counts = {f"intent_{i}": 100 + i for i in range(77)}
    text = class_counts_text(counts)
    assert text == (
        "77 classes, 100-176 rows each; largest intent_76 176, intent_75 175, intent_74 174; "
        "smallest intent_1 101, intent_0 100"
    )
    frame, meta = synthetic_results()
    frame = frame.assign(is_best=frame["is_best"].astype(bool))
    header = format_table(frame, {**meta, "class_counts": counts, "n_labelled": 10476}).splitlines()[1]
    assert header.startswith("label 'sentiment': 10476 rows (77 classes") and len(header) < 200


def test_the_majority_line_names_each_score_once():
    from featx.report.text.probe import header_lines

    frame, meta = synthetic_results()
    majority = {
        metric: next(line for line in header_lines(frame, {**meta, "metric": metric}) if line.startswith("majority"))
        for metric in ("accuracy", "macro_f1", "balanced_accuracy")
    }
    assert majority["accuracy"] == "majority class: accuracy 0.500 [-, -], macro-F1 0.330"
    assert majority["macro_f1"] == "majority class: macro-F1 0.330 [-, -], accuracy 0.500 [-, -]"
    assert majority["balanced_accuracy"] == (
        "majority class: balanced accuracy 0.500 [-, -], accuracy 0.500 [-, -], macro-F1 0.330"
    )


def _lexical_against(accuracy: float, p: float, significant: bool) -> str:
    import pandas as pd

    from featx.report.text.probe import versus_best

    table = pd.DataFrame(
        {
            "kind": ["single", "single"],
            "features": ["main", "main"],
            "pooling": ["mean", "mean"],
            "layer_spec": ["3", "5"],
            "classifier": ["logreg", "logreg"],
            "is_best": [False, True],
            "selection_score": [0.80, 0.82],
            "accuracy": [0.798, 0.787],
        }
    )
    row = pd.Series({"accuracy": accuracy, "p_vs_best": p, "significant_vs_best": significant})
    return versus_best(row, table, "accuracy")


def test_the_lexical_line_says_which_side_the_test_found():
    # against the layer chosen on the training rows (mean 5, test accuracy 0.787), not the test-best layer 3
    ahead = _lexical_against(0.812, 0.0004, True)
    assert ahead == (
        "vs the best layer (mean 5, logreg) p=<.001! (paired on accuracy, one test): "
        "the baseline is ahead of the layer by 0.025"
    )
    assert _lexical_against(0.700, 0.01, True).endswith(": the baseline is behind the layer by 0.087")
    assert _lexical_against(0.790, 0.4, False).endswith(
        "p=0.400 (paired on accuracy, one test): no difference shown (+0.003)"
    )
    assert _lexical_against(float("nan"), float("nan"), False).endswith("p=- (paired on accuracy, one test)")


def test_the_stack_rows_c_reads_as_short_as_the_others():
    """A stack row's C is the geometric mean of its layers' chosen C (0.01, 0.1, 0.72 -> 0.0896...): printed to
    two significant digits, as short as the grid values of the other rows (the results file keeps it whole)."""
    frame, meta = synthetic_results()
    stack = frame.index[frame["kind"] == "cat"][0]
    mean = float((0.01 * 0.1 * 0.72) ** (1 / 3))
    frame.loc[stack, ["kind", "layer_spec", "C"]] = ["stack", "stack(0,1,2)", mean]
    frame = frame.assign(is_best=frame["is_best"].astype(bool))
    lines = format_table(frame, meta).splitlines()
    row = next(line for line in lines if "stack(0,1,2)" in line)
    assert " 0.09 " in row and f"{mean:g}" not in row
    singles = [line.split()[-2] for line in lines if line.endswith(" 0.0")]  # fit s 0.0: the main single rows
    assert singles == ["1"] * 6  # the single rows' grid value C 1, as before


def test_mdl_columns_stand_beside_the_control_tasks_code():
    """--mdl adds the codelength and compression; with the control task, its compression and the bits the real
    labels save over it (MDL sel.); without it (--no-control), those two columns are left out."""
    frame, meta = synthetic_results()
    frame = frame.assign(is_best=frame["is_best"].astype(bool))
    probes = frame["kind"] != "majority"
    frame.loc[probes, ["mdl_bits", "mdl_compression"]] = [500.0, 1.4]
    frame.loc[probes, ["control_mdl_bits", "control_mdl_compression", "mdl_selectivity"]] = [690.0, 1.01, 190.0]
    lines = format_table(frame, meta).splitlines()
    header = next(line for line in lines if line.startswith("pooling"))
    assert header.split("  ")[-4:] == ["MDL bits", "compr.", "ctl compr.", "MDL sel."]
    row = next(line for line in lines if line.startswith("mean ")).split()
    assert row[-4:] == ["500", "1.40", "1.01", "+190"]
    assert "ctl compr. = the control task's; MDL sel. = control's bits - MDL bits" in lines[-1]
    frame[["control_mdl_bits", "control_mdl_compression", "mdl_selectivity"]] = float("nan")
    lines = format_table(frame, meta).splitlines()
    assert next(line for line in lines if line.startswith("pooling")).endswith("MDL bits  compr.")
    assert "ctl compr." not in "\n".join(lines)


def test_rows_left_out_for_their_split_value_are_not_called_unlabelled():
    """Rows of a split value featx does not use (or of a class --min-class-rows drops) are left out with a note; the
    label line called every row left out one "without a label" (GUM-like corpus: 102 'heldout' rows, all labelled).
    """
    import numpy as np

    from featx.probing import usable_split
    from featx.report.text.probe import header_lines

    frame, meta = synthetic_results()
    _, note = usable_split(np.array(["train", "heldout", "heldout", "test"]))
    plain = header_lines(frame, {**meta, "n_missing_labels": 2})[1]
    split = header_lines(frame, {**meta, "n_missing_labels": 2, "notes": [note]})[1]
    rare = header_lines(frame, {**meta, "n_missing_labels": 3, "notes": ["--min-class-rows 5: dropped 1 class(es)"]})[1]
    assert plain.endswith("), 2 without a label left out")
    assert split.endswith("), 2 left out (without a label, or as a note above says)")  # a file before n_unlabelled
    assert rare.endswith("), 3 left out (without a label, or as a note above says)")
    # a run's meta says how many had no label (n_unlabelled), not the notes' words: a note of other words that reads
    # like one of these (a label file or value named so) no longer makes unlabelled rows "as a note above says"
    label = {**meta, "n_missing_labels": 2, "notes": ["labels joined from 'x: dropped .csv'"]}
    assert header_lines(frame, {**label, "n_unlabelled": 2})[1].endswith("), 2 without a label left out")
    assert header_lines(frame, {**label, "n_unlabelled": 0})[1].endswith("), 2 left out as a note above says")
    mixed = {**meta, "n_missing_labels": 5, "n_unlabelled": 2, "notes": [note]}
    assert header_lines(frame, mixed)[1].endswith("), 5 left out (2 without a label, 3 as a note above says)")


def test_the_pair_line_says_what_a_pair_b_probe_reads():
    """A separate-mode pair run of site pair_b probes text b's vectors alone; the line under the cosine baseline said
    every probe read [u, v, |u-v|, u*v]."""
    from featx.report.text.run import baseline_lines

    meta = {
        "pair_feature": "[u, v, |u-v|, u*v]",
        "cosine_baseline": [
            {"pooling": "mean", "layer": 3, "accuracy": 0.6, "accuracy_low": 0.5, "accuracy_high": 0.7}
        ],
    }
    said = {sites: baseline_lines({**meta, "sites": list(sites)})[-1] for sites in [("hidden",), ("pair_b",)]}
    assert said[("hidden",)] == "probe features: [u, v, |u-v|, u*v] per layer and pooling"
    assert said[("pair_b",)] == "probe features: text b's vectors alone (site pair_b)"
    both = baseline_lines({**meta, "sites": ["hidden", "pair_b"]})[-1]
    assert both == "probe features: [u, v, |u-v|, u*v] per layer and pooling; text b's vectors alone (site pair_b)"
