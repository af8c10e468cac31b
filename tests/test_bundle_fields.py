"""Every field of a bundle's manifest, resealed with a value of another JSON type, is one clear error of both bundle
readers (``featx.load`` and the directions reader), never a traceback or a list printed as a label."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error

import featx
from featx.bundle_fields import FIELDS
from featx.cli import main
from featx.errors import InputError
from featx.json_fields import ANY, FLAG, LIST, NUMBER, OBJECT, TEXT, WHOLE

WRONG = {"number": 3, "list": ["x"], "object": {"a": 1}, "null": None, "flag": True}


@pytest.fixture(scope="module")
def bundle(split_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("field-types") / "valid.featx"
    return featx.fit(split_features, label="label", layer="1", pooling="mean", output=output, folds=2).path


def _reseal(folder, manifest):
    """The manifest written with both digests made anew, as anyone who can write the bundle can."""
    from safetensors.numpy import load, save

    from featx.deploy.checks import MANIFEST_DIGEST, manifest_digest

    arrays = dict(load((folder / "weights.safetensors").read_bytes()))
    data = save(arrays, metadata={MANIFEST_DIGEST: manifest_digest(manifest)})
    (folder / "weights.safetensors").write_bytes(data)
    manifest["files"] = {"weights.safetensors": {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _places(manifest):
    """Each place ``FIELDS`` names that the manifest holds (its first key or item for ANY) with its rule's
    nullability, but ``files``, whose record the resealing writes anew."""
    places = []
    for path, kind, nullable in FIELDS.rules:
        node, place = manifest, []
        for key in path:
            if key == ANY and isinstance(node, (dict, list)) and node:
                key = next(iter(node)) if isinstance(node, dict) else 0
            if not ((isinstance(node, dict) and key in node) or (isinstance(node, list) and key == 0)):
                break
            node, place = node[key], [*place, key]
        else:
            if place[0] != "files":
                places.append((tuple(place), kind, nullable))
    return places


def _with(manifest, place, value):
    changed = json.loads(json.dumps(manifest))
    node = changed
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    return changed


# The JSON types of ``WRONG`` each kind of field takes.
TAKES = {TEXT: (), WHOLE: ("number",), NUMBER: ("number",), FLAG: ("flag",), OBJECT: ("object",), LIST: ("list",)}


def _cases(manifest):
    """(place, JSON type, wrong value) for every place and each JSON type its kind does not take (null only where
    featx never writes one)."""
    for place, kind, nullable in _places(manifest):
        for name, value in WRONG.items():
            if name not in TAKES[kind] and not (value is None and nullable):
                yield place, name, value


@pytest.mark.slow
def test_every_field_of_another_type_is_refused_at_load(bundle, tmp_path):
    """Every place of the manifest, resealed with each wrong JSON type: ``featx.load`` raises one ``InputError``
    (its value checks or the field-type table), and nothing else."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    tried = 0
    for place, name, value in _cases(manifest):
        case = tmp_path / f"case{tried}.featx"
        shutil.copytree(bundle, case)
        _reseal(case, _with(manifest, place, value))
        with pytest.raises(InputError, match=r"bundle \S+: ") as refusal:
            featx.load(case)
        assert refusal.value.hint, (place, name)
        tried += 1
    assert tried > 150  # every field of a fitted sentence bundle, about five JSON types each


@pytest.mark.parametrize(
    ("place", "value", "pattern"),
    [
        (("label",), ["a", "b"], r"its field 'label' is \['a', 'b'\] \(a list\), not a text"),
        (("label",), None, r"its field 'label' is None \(null\), not a text"),
        (("features_file",), [1], r"its field 'features_file' is \[1\] \(a list\), not an object"),
        (("selection", "metric"), 3, r"its selection field 'metric' is 3 \(a number\), not a text"),
        (("extraction", "id_col"), {"a": 1}, r"its extraction field 'id_col' is \{'a': 1\} \(an object\), not a text"),
        (
            ("selection", "candidates", 0, "score"),
            "x",
            r"its selection field 'candidates\.0\.score' is 'x' \(a text\), not a number",
        ),
    ],
)
def test_predict_says_which_field_is_of_another_type(bundle, split_features, tmp_path, place, value, pattern):
    case = tmp_path / "m.featx"
    shutil.copytree(bundle, case)
    _reseal(case, _with(json.loads((bundle / "manifest.json").read_text()), place, value))
    corpus = split_features.parent / "corpus.csv"
    result = CliRunner().invoke(main, ["predict", str(case), str(corpus), "-o", str(tmp_path / "p.csv"), "-q"])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"bundle \S+m\.featx: " + pattern + r".*hint: fit the probe again")


@pytest.mark.parametrize(
    ("place", "value", "pattern"),
    [
        (("label",), 7, r"its field 'label' is 7 \(a number\), not a text"),
        (("classes", 0), 1, r"its field 'classes\.0' is 1 \(a number\), not a text"),
        (("layer_spec", "name"), 5, r"its layer_spec field 'name' is 5 \(a number\), not a text"),
        (("extraction", "model"), True, r"its extraction field 'model' is True \(true or false\), not a text"),
    ],
)
def test_directions_say_which_field_is_of_another_type(bundle, tmp_path, place, value, pattern):
    """``featx directions`` (and ``extract --intervene project:BUNDLE@L``, the same reader) checks the same table,
    with featx.load's one hint (``REFIT_HINT``)."""
    from featx.bundle_fields import REFIT_HINT

    case = tmp_path / "m.featx"
    shutil.copytree(bundle, case)
    _reseal(case, _with(json.loads((bundle / "manifest.json").read_text()), place, value))
    result = CliRunner().invoke(main, ["directions", str(case), "-o", str(tmp_path / "d.safetensors")])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, r"bundle \S+m\.featx: " + pattern)
    assert f"hint: {REFIT_HINT}" in " ".join(result.output.split()), result.output
    assert not (tmp_path / "d.safetensors").exists()
