import re

import pytest

import featx
from featx.errors import InputError
from featx.selection import LayerSpec, check_layer_spelling, parse_layer_specs, parse_poolings, select_layers

LAYERS = list(range(7))


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("all", [LayerSpec("single", (i,)) for i in range(7)]),
        ("0,3,6", [LayerSpec("single", (0,)), LayerSpec("single", (3,)), LayerSpec("single", (6,))]),
        ("-1", [LayerSpec("single", (6,))]),
        ("-4:", [LayerSpec("single", (i,)) for i in (3, 4, 5, 6)]),
        ("1:3", [LayerSpec("single", (1,)), LayerSpec("single", (2,))]),
        ("cat(-4:)", [LayerSpec("cat", (3, 4, 5, 6))]),
        ("cat(0,6),6", [LayerSpec("cat", (0, 6)), LayerSpec("single", (6,))]),
        ("stack", [LayerSpec("stack", tuple(range(7)))]),
        ("stack(1:3)", [LayerSpec("stack", (1, 2))]),
        ("3,3", [LayerSpec("single", (3,))]),
        # a layer named twice in one feature set is one block of it: cat(4,4) concatenated layer 4 with itself
        # (half the L2 penalty of layer 4's probe, reported as a feature set of its own), stack(1,1) stacked it twice
        ("cat(4,4)", [LayerSpec("cat", (4,))]),
        ("cat(-2:,6)", [LayerSpec("cat", (5, 6))]),
        ("stack(1,1,2)", [LayerSpec("stack", (1, 2))]),
    ],
)
def test_layer_specs(spec, expected):
    assert parse_layer_specs(spec, LAYERS) == expected


def test_spec_names():
    assert [spec.name for spec in parse_layer_specs("2,cat(-2:),stack(0,1)", LAYERS)] == ["2", "cat(5,6)", "stack(0,1)"]


@pytest.mark.parametrize("spec", ["7", "-8", "x", "9:", "cat(12)", "0_1", "\u0663", "\u0661:", "cat(\u0663)"])
def test_bad_layer_specs_are_refused(spec):
    with pytest.raises(InputError):
        parse_layer_specs(spec, LAYERS)


def test_extraction_accepts_only_plain_layers():
    assert select_layers("-2:,0", 7) == [0, 5, 6]
    with pytest.raises(InputError, match="probe option"):
        select_layers("cat(-4:)", 7)


def test_negative_index_counts_from_top_of_stored_layers():
    assert parse_layer_specs("-1", [0, 3, 6]) == [LayerSpec("single", (6,))]
    with pytest.raises(InputError, match="available layers are 0, 3, 6"):
        parse_layer_specs("2", [0, 3, 6])


def test_poolings():
    assert parse_poolings("all") == ["cls", "mean", "max", "last", "pooler"]
    assert parse_poolings("mean, cls") == ["mean", "cls"]
    with pytest.raises(InputError, match="not available") as refused:
        parse_poolings("median", ["cls", "mean"])  # featx erase --pooling median: the hint names the file's
    assert refused.value.hint == "give one of cls, mean, a comma list of them, or all"
    # a cross-encoded pair's own pooling asked of a file without it: the hint says where it exists, and what else
    with pytest.raises(InputError, match="pooling 'mean_a' is not available") as refused:
        parse_poolings("mean,mean_a")
    assert "only for sentence pairs encoded as one sequence (featx extract --text-pair-col COL --pair-mode cross)" in (
        refused.value.hint
    )
    assert "featx probe --site pair_b probes text b's vectors alone" in refused.value.hint


@pytest.mark.parametrize("spec", ["all", "3", "-1", "+2", "2:5", "-4:", "cat(-4:)", "cat(1,3),5", "stack", "stack(1:)"])
def test_every_layer_spelling_the_parser_reads_passes_the_spelling_check(spec):
    check_layer_spelling(spec, "--layer")
    parse_layer_specs(spec, list(range(13)))


@pytest.mark.parametrize(
    ("spec", "words"),
    [("1;3", "layer '1;3'"), ("cat(1,x)", "layer 'x'"), ("lats", "'lats'"), ("0_1", "'0_1'"), ("\u0663", "'\u0663'")],
)
def test_a_misspelt_layer_is_refused_before_any_model_or_file(spec, words):
    with pytest.raises(InputError, match=f"--layer {re.escape(spec)}: .*{re.escape(words)} is not a number"):
        check_layer_spelling(spec, "--layer")


def test_an_extraction_refuses_cat_and_a_misspelt_layer_or_pooling_when_made(tmp_path):
    from featx.extraction import ExtractConfig

    with pytest.raises(InputError, match=r"^--layer cat\(1,2\): cat\(...\) is a probe option") as raised:
        ExtractConfig(corpus="c.csv", layers="cat(1,2)")
    assert raised.value.hint.startswith("give --layer all, a list or a slice, without cat or stack")
    with pytest.raises(InputError, match=r"^layers='cat\(1,2\)': cat") as raised:
        featx.extract(str(tmp_path / "c.csv"), layers="cat(1,2)")  # refused before the corpus is looked for
    assert raised.value.hint.startswith("give layers='all', a list or a slice")
    with pytest.raises(InputError, match="--layer 1;2"):
        ExtractConfig(corpus="c.csv", layers="1;2")
    with pytest.raises(InputError, match="pooling 'maen' is not available"):
        ExtractConfig(corpus="c.csv", poolings="mean,maen")
