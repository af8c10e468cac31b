"""``--intervene SPEC`` parsed without the model (``featx/extraction/edits/spec.py``), and every malformed spec
refused by ``ExtractConfig`` and the command line: one line with a hint, exit 2, before anything is read."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.errors import InputError
from featx.extraction import ExtractConfig, parse_intervention, parse_interventions


def test_each_kind_parses(tmp_path):
    bundle = tmp_path / "b.featx"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    erasers = tmp_path / "x.erasers.npz"
    erasers.write_bytes(b"")
    steer = parse_intervention(f"steer:{bundle}:pos:-2.5@3")
    assert (steer.kind, steer.layer, steer.source, steer.target, steer.alpha) == ("steer", 3, bundle, "pos", -2.5)
    assert parse_intervention(f"erase:{erasers}:cls@0").target == "cls"
    assert parse_intervention(f"mean:{bundle}@2").kind == "mean"
    assert parse_intervention("random:8@1", seed=7).rank == 8 and parse_intervention("random:8@1", seed=7).seed == 7
    centred = parse_intervention(f"random:{erasers}:cls@2", seed=3)  # the control of erase:ERASERS@2
    assert (centred.source, centred.target, centred.rank, centred.seed) == (erasers, "cls", None, 3)
    assert centred.record()["source_sha256"] != parse_intervention("random:8@2", seed=3).record()["source_sha256"]
    several = parse_interventions(f"project:{bundle}@1, random:2@4")
    assert [edit.kind for edit in several] == ["project", "random"] and several[1].layer == 4
    assert len(parse_intervention(f"project:{bundle}@1").source_sha256()) == 64
    features = tmp_path / "f.h5"
    features.write_bytes(b"")
    by_means = parse_intervention(f"steer:{features}:topic:b:2@1")
    assert (by_means.source, by_means.label, by_means.target, by_means.alpha) == (features, "topic", "b", 2.0)


def test_a_site_inside_a_layer_parses_and_is_recorded_only_when_given(tmp_path):
    from featx.extraction.edits.spec import SITES
    from featx.extraction.forward.sites import NAMED_SITES

    assert set(SITES) <= set(NAMED_SITES)
    bundle = tmp_path / "b.featx"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    inside = parse_intervention(f"steer:{bundle}:pos:2@3:FFN")
    assert (inside.layer, inside.site, inside.target, inside.alpha) == (3, "ffn", "pos", 2.0)
    assert inside.record()["site"] == "ffn" and inside.where == "layer 3's ffn"
    assert parse_intervention("random:4@2:attn_out", seed=1).site == "attn_out"
    plain = parse_intervention("random:4@2", seed=1)
    assert plain.site is None and plain.where == "layer 2"
    assert list(plain.record()) == ["kind", "layer", "source", "source_sha256", "target", "alpha", "rank", "seed"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("blur:3@1", "the kind must be one of"),
        ("random:3", "no @LAYER"),
        ("random:3@x", "layer 'x' is not a layer number"),
        ("random:0@1", "rank '0' is not a positive whole number"),
        ("random:3@1:mlp", "unknown site 'mlp' \\(sites: attn_out, ffn, pre_ln\\)"),
        ("random:3@0:ffn", "site ffn is inside a layer, and layer 0 is the embeddings' output"),
        ("random:3@x:ffn", "layer 'x' is not a layer number"),
        ("random:3@²", "layer '²' is not a layer number"),  # str.isdigit takes it, int() did not: a traceback
        ("random:²@1", "rank '²' is not a positive whole number"),
        ("steer:B.featx:pos@1", "it needs a bundle, a class and an alpha"),
        ("steer:{bundle}:pos:nan@1", "alpha nan is not a finite number"),
        ("steer:{bundle}:pos:inf@1", "alpha inf is not a finite number"),
        ("steer:{bundle}:pos:lots@1", "alpha 'lots' is not a number"),
        ("project:{missing}@1", "bundle folder .* does not exist"),
        ("erase:{missing}@1", "erasers file .* does not exist"),
        ("steer:{missing}.h5:topic:b:1@1", "features file .* does not exist"),
        ("  ", "--intervene is empty"),
        ("random:1@1,", "edit 2 of 2 is empty"),  # an item dropped silently before: an edit lost to a typo
        ("random:1@1,,random:2@2", "edit 2 of 3 is empty"),
        (",random:1@1", "edit 1 of 2 is empty"),
        ("random:x@1", "rank 'x' is not a positive whole number \\(nor an erasers file\\)"),
        ("random:{missing}.erasers.npz@1", "random: erasers file .* does not exist"),
    ],
)
def test_a_bad_spec_is_one_clear_line(tmp_path, spec, message):
    import re

    bundle = tmp_path / "b.featx"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    spec = spec.format(bundle=bundle, missing=tmp_path / "none")
    with pytest.raises(InputError) as error:
        ExtractConfig(corpus=tmp_path / "never-read.csv", intervene=spec)
    assert re.search(message, error.value.message) and error.value.hint
    result = CliRunner().invoke(main, ["extract", str(tmp_path / "never-read.csv"), "--intervene", spec])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert re.search(message, result.output) and "hint:" in result.output


def test_the_seed_is_checked():
    with pytest.raises(InputError, match="--intervene-seed"):
        ExtractConfig(corpus="c.csv", intervene="random:2@1", intervene_seed=-1)
