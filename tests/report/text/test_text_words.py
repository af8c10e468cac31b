"""The word-level table's layer summaries say where the scalar mix was fitted: the training part under a
train/test split, the first fold's training part under cross-validation."""

from featx.report.text.words import footer, header

SUMMARY = {
    "layers": [0, 1],
    "weights": [0.4, 0.6],
    "center_of_gravity": 0.6,
    "expected_layer": 1.0,
    "mix_accuracy": 0.9,
    "cumulative_accuracy": [0.8, 0.9],
}


def test_a_split_run_names_the_training_part():
    lines = footer({"evaluation": "split", "layer_summary": {"first": SUMMARY}})
    assert "scalar-mix probe on the training part, scored on the test part" in lines[1]
    assert not any("fold" in line for line in lines)


def test_a_cross_validated_run_names_the_first_fold():
    lines = footer({"evaluation": "5-fold cv", "layer_summary": {"first": SUMMARY}})
    assert "scalar-mix probe on the first fold's training part, scored on its test part" in lines[1]


def test_the_cumulative_accuracies_name_the_probed_layers():
    """Layers 3 and 6 probed: each cumulative accuracy is named by its layer, not read as layers 0..l."""
    summary = {**SUMMARY, "layers": [3, 6]}
    lines = footer({"evaluation": "split", "layer_summary": {"first": summary}})
    assert "cumulative accuracy (the probed layers up to l mixed), l: 3: 0.800  6: 0.900" in "\n".join(lines)
    assert "0..l" not in "\n".join(lines)


def test_an_attachment_run_counts_its_word_pairs_not_gold_arcs():
    """--label head --arcs: the items are the gold arcs and the sampled non-arc pairs together; the header read
    "4999 gold arcs and as many non-arc word pairs" for 2,501 arcs and 2,498 non-arcs."""
    meta = {"level": "arc", "label": "head", "n_labelled": 4999, "n_sentences": 79,
            "class_counts": {"no-arc": 2498, "arc": 2501}, "evaluation": "5-fold cv", "seed": 0}  # fmt: skip
    line = header(meta)[1]
    assert ": 4999 word pairs (gold arcs and non-arc pairs) in 79 sentences (" in line
    assert "gold arcs and as many" not in line
