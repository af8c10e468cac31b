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
