"""``featx directions``: a bundle's per-layer directions as safetensors (``featx/deploy/directions.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.deploy import DirectionsConfig, export_directions
from featx.errors import InputError


@pytest.fixture(scope="module")
def cat_bundle(split_features, tmp_path_factory):
    """A logreg probe of 'label' on the concatenation of layers 1 and 2 (mean pooling)."""
    output = tmp_path_factory.mktemp("directions") / "cat.featx"
    featx.fit(split_features, label="label", layer="cat(1,2)", pooling="mean", output=output, folds=3)
    return output


def test_directions_are_the_heads_coefficients_per_layer(cat_bundle, tmp_path):
    from safetensors import safe_open

    output = export_directions(cat_bundle, output=tmp_path / "dirs.safetensors")
    probe = featx.load(cat_bundle)
    head = probe.head
    d = head.n_features // 2
    with safe_open(str(output), framework="numpy") as handle:
        meta = handle.metadata()
        names = set(handle.keys())
        arrays = {name: handle.get_tensor(name) for name in names}
    assert json.loads(meta["classes"]) == probe.classes and json.loads(meta["layers"]) == [1, 2]
    assert meta["model"] == probe.extraction["model"] and meta["format"] == "featx-directions"
    for i, layer in enumerate((1, 2)):
        rows = slice(i * d, (i + 1) * d)
        for k, name in enumerate(probe.classes):
            want = head.weights["coef"][rows, k] / head.scale[rows]
            np.testing.assert_allclose(arrays[f"layer.{layer}.class.{name}"], want, rtol=1e-6)
        np.testing.assert_allclose(arrays[f"layer.{layer}.mean"], head.mean[rows])
        toward = arrays[f"layer.{layer}.toward.{probe.classes[1]}"]
        assert abs(np.linalg.norm(toward) - 1) < 1e-5
        assert toward @ arrays[f"layer.{layer}.class.{probe.classes[1]}"] > 0


def test_the_cli_writes_and_refuses(cat_bundle, tmp_path):
    output = tmp_path / "d.safetensors"
    result = CliRunner().invoke(main, ["directions", str(cat_bundle), "-o", str(output)])
    assert result.exit_code == 0 and output.is_file(), result.output
    again = CliRunner().invoke(main, ["directions", str(cat_bundle), "-o", str(output)])
    assert again.exit_code == 2 and "exists" in again.output and "hint:" in again.output
    with pytest.raises(InputError, match="should end in .safetensors"):
        DirectionsConfig(bundle=cat_bundle, output=tmp_path / "d.npz")


@pytest.mark.parametrize(
    ("python", "message", "hint"),
    [
        (False, "-o d.txt should end in .safetensors", "name the file, e.g. -o dirs.safetensors"),
        (True, "output='d.txt' should end in .safetensors", "name the file, e.g. output='dirs.safetensors'"),
    ],
)
def test_a_directions_output_is_named_as_its_caller_does(tmp_path, python, message, hint):
    """The output's suffix and an existing output: ``-o``/``--overwrite`` on the command line, the keywords from
    Python."""
    from featx.options import command_line, keywords_of

    (tmp_path / "d.safetensors").write_bytes(b"")
    with keywords_of(DirectionsConfig) if python else command_line():
        with pytest.raises(InputError) as raised:
            DirectionsConfig("b.featx", output="d.txt")
        assert (raised.value.message, raised.value.hint) == (message, hint)
        with pytest.raises(InputError) as raised:
            DirectionsConfig("b.featx", output=tmp_path / "d.safetensors")
    assert raised.value.hint == (
        "pass overwrite=True to replace it, or choose another output path"
        if python
        else "pass --overwrite to replace it, or choose another path with -o"
    )


@pytest.mark.parametrize(("python", "hint"), [(False, "choose another -o path"), (True, "choose another output path")])
def test_a_bundle_target_that_is_a_file_is_named_as_its_caller_does(tmp_path, python, hint):
    from featx.deploy.bundle import write_bundle
    from featx.options import command_line, keywords_of

    (tmp_path / "file").write_text("not a bundle")
    with pytest.raises(InputError) as raised, keywords_of(DirectionsConfig) if python else command_line():
        write_bundle(None, tmp_path / "file")  # refused before the probe is read
    assert raised.value.hint == hint
