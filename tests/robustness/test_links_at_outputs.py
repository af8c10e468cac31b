"""Symbolic links planted at the names the analyses and reports write (``featx erase``'s temporary file and its
erasers, ``featx neurons``/``sweep``'s JSON, figures): never written through, the link's target left as it was."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.planted_columns import make_planted

from featx.probing import erase, neurons, sweep
from featx.report import save_neurons_figure
from featx.report.figures import style

VICTIM = b"precious data owned by someone else\n"


@pytest.fixture(scope="module")
def planted(tiny_model, tmp_path_factory):
    return make_planted(tmp_path_factory.mktemp("links-at-outputs"), tiny_model)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


def test_erase_never_writes_through_a_link_at_its_temporary_name(planted, tmp_path, victim):
    output = tmp_path / "erased.h5"
    output.with_name("erased.h5.writing").symlink_to(victim)
    erase(planted, label="a", folds=3, output=output, jobs=1, amnesic="none")
    assert victim.read_bytes() == VICTIM
    assert output.is_file() and not output.is_symlink()
    assert output.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    assert {path.name for path in tmp_path.iterdir()} >= {"erased.h5", "erased.erase.json", "erased.h5.writing"}
    assert not [path.name for path in tmp_path.iterdir() if path.name.startswith(".")]  # no temporary left


def test_erase_never_writes_its_erasers_through_a_link(planted, tmp_path, victim):
    output = tmp_path / "erased.h5"
    erasers = output.with_name("erased.erasers.npz")
    erasers.symlink_to(victim)
    erase(planted, label="a", folds=3, output=output, jobs=1, amnesic="none")
    assert victim.read_bytes() == VICTIM
    assert erasers.is_file() and not erasers.is_symlink()
    with np.load(erasers) as data:
        assert {"mean/1/left", "mean/1/mean", "mean/1/right"} <= set(data.files)


@pytest.mark.parametrize("kind", ["neurons", pytest.param("sweep", marks=pytest.mark.slow)])  # sweep: ~3 s
def test_an_analysis_never_writes_its_json_through_a_link(planted, tmp_path, victim, kind):
    prefix = tmp_path / "a"
    json_path = tmp_path / ("a.json" if kind == "neurons" else "a.sweep.json")
    json_path.symlink_to(victim)
    if kind == "neurons":
        neurons(planted, label="a", layers="1", folds=3, output=prefix, jobs=1, draws=2, overwrite=True)  # the link
    else:
        sweep(planted, label="a", layers="1", output=prefix, jobs=1)
    assert victim.read_bytes() == VICTIM
    assert json_path.is_file() and not json_path.is_symlink()
    assert json.loads(json_path.read_text())["meta"]["label"] == "a"


@pytest.mark.slow
def test_a_figure_is_never_written_through_a_link(planted, tmp_path, victim):
    result = neurons(planted, label="a", layers="1", folds=3, output=tmp_path / "a", jobs=1, draws=2)
    for name in ("a.png", "a.svg"):
        (tmp_path / name).symlink_to(victim)
    save_neurons_figure(result)
    ax = style.axes_or_new(None)
    ax.plot([0, 1], [1, 0])
    for name in ("b.png", "b.svg"):
        (tmp_path / name).symlink_to(victim)
    assert style.save(ax.figure, tmp_path / "b.png") == [tmp_path / "b.png", tmp_path / "b.svg"]
    assert victim.read_bytes() == VICTIM
    for name in ("a", "b"):
        png, svg = tmp_path / f"{name}.png", tmp_path / f"{name}.svg"
        assert not png.is_symlink() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not svg.is_symlink() and "<svg" in svg.read_text(encoding="utf-8")
