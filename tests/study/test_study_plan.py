"""The plan: one extraction per (model, corpus), one probe per (model, corpus, label), the lexical baseline
computed by one probe per (corpus, label) whatever the number of models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from featx.errors import InputError
from featx.study import make_plan


def test_lexical_once_per_corpus_and_label(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text(f"text,x,y\nhi {name},1,2\n")  # other bytes: not one corpus twice
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [
            {"name": "m1"},
            {"name": "m2", "max_length": 64},
            {"name": "r", "random_init": True, "seeds": [0, 1]},
        ],
        "corpora": [
            {"name": "a", "path": str(tmp_path / "a.csv"), "labels": ["x", "y"]},
            {"name": "b", "path": str(tmp_path / "b.csv"), "labels": "x"},
        ],
    }
    plan = make_plan(study)
    assert len(plan.extractions) == 4 * 2 and len(plan.probes) == 4 * 3
    computed = Counter((cell.corpus.name, cell.label) for cell in plan.probes if cell.lexical)
    assert computed == {("a", "x"): 1, ("a", "y"): 1, ("b", "x"): 1}
    assert set(plan.lexical) == {("a", "x", "m1"), ("a", "y", "m1"), ("b", "x", "m1")}
    skipped = [cell.task.args["options"]["lexical"] for cell in plan.probes if cell.model.name != "m1"]
    assert skipped == [False] * 9
    probe = plan.probes[-1]
    assert probe.task.key == "probe/r-s1/b/x" and probe.task.after == ("extract/r-s1/b",)
    assert probe.task.outputs == (str(tmp_path / "out/r-s1/b/x.probe.csv"), str(tmp_path / "out/r-s1/b/x.probe.json"))
    assert plan.extractions[-1].task.args["options"]["init_seed"] == 1
    assert len({task.fingerprint for task in plan.tasks}) == len(plan.tasks)


def test_each_corpus_file_is_hashed_once_per_plan(tmp_path, monkeypatch):
    """Two corpora of one size and format: the repeats check reads both, and the plan's fingerprints (each
    extraction's corpus_sha256) take those digests, not a second read; a plan made again reads them again."""
    from featx.extraction.inputs import digests

    hashed, real = Counter(), digests.hash_file
    monkeypatch.setattr(digests, "hash_file", lambda path: hashed.update([Path(path).name]) or real(path))
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text(f"text,x\nhi {name},1\n")  # the same size, other bytes
    corpora = [{"name": name, "path": str(tmp_path / f"{name}.csv"), "labels": ["x"]} for name in ("a", "b")]
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "m1"}, {"name": "m2", "max_length": 64}],
        "corpora": corpora,
    }
    plan = make_plan(study)
    assert hashed == {"a.csv": 1, "b.csv": 1}
    assert {cell.task.corpus_sha256 for cell in plan.extractions} == {
        real(tmp_path / "a.csv"),
        real(tmp_path / "b.csv"),
    }
    make_plan(plan.config)
    assert hashed == {"a.csv": 2, "b.csv": 2}


def test_a_label_that_is_no_file_name_gets_a_safe_stem(tmp_path):
    (tmp_path / "a.csv").write_text("text,x\nhi,1\n")
    long = "L" * 300  # a column name longer than a file name may be: its probe failed, "File name too long"
    study = {"models": [{"name": "m"}], "corpora": [{"path": str(tmp_path / "a.csv"), "labels": ["../x y", long]}]}
    stem, long_stem = (probe.prefix.name for probe in make_plan(study).probes)
    assert "/" not in stem and stem.startswith(".._x_y-") and stem.endswith(".probe")
    assert len(long_stem) == 100 + len(".probe") and long_stem.startswith("L" * 91 + "-")


def _study(tmp_path, probe: dict, model: dict | None = None, extract: dict | None = None) -> dict:
    (tmp_path / "a.csv").write_text("text,x\nhi,1\nho,2\n")
    return {
        "study": {"output": str(tmp_path / "out")},
        "models": [model or {"name": "m"}],
        "corpora": [{"name": "a", "path": str(tmp_path / "a.csv"), "labels": ["x"]}],
        "extract": extract or {"pooling": "mean,cls"},
        "probe": probe,
    }


@pytest.mark.parametrize(
    ("probe", "words"),
    [
        ({"layer": "99"}, "[probe] layers: model 'm', corpus 'a': layer 99 is out of range: available layers are 0..2"),
        ({"layer": "cat(1,-9)"}, "model 'm', corpus 'a': layer -9 is out of range"),
        ({"pooling": "max"}, "[probe] poolings: model 'm', corpus 'a': pooling 'max' is not available"),
    ],
)
def test_a_probe_the_stored_features_cannot_serve_is_refused_before_any_work(tmp_path, tiny_model, probe, words):
    """Read from the model's config.json: the tiny model has 2 blocks (layers 0..2), and the extraction stores
    mean and cls only; the probes would else fail one by one after their extractions."""
    with pytest.raises(InputError) as caught:
        make_plan(_study(tmp_path, probe, {"name": "m", "model": str(tiny_model)}))
    assert words in caught.value.message and caught.value.message.startswith("study: ")
    assert not (tmp_path / "out").exists()


def test_probes_that_fit_the_stored_features_and_a_model_not_on_this_machine_are_planned(tmp_path, tiny_model):
    fits = _study(tmp_path, {"layer": "cat(1,-1),0", "pooling": "cls"}, {"name": "m", "model": str(tiny_model)})
    assert len(make_plan(fits).probes) == 1
    elsewhere = _study(tmp_path, {"layer": "99"}, {"name": "m", "model": "nobody/not-downloaded"})
    assert len(make_plan(elsewhere).probes) == 1  # its config.json is not here: the probe checks the file


def test_the_study_file_names_the_probe_line(tmp_path, tiny_model):
    from featx.study import study_toml

    path = tmp_path / "study.toml"
    path.write_text(
        study_toml(_study(tmp_path, {"layer": "all", "pooling": "max"}, {"model": str(tiny_model)} | {"name": "m"}))
    )
    with pytest.raises(InputError, match=r"study\.toml, line \d+: \[probe\] pooling: model 'm'"):
        make_plan(path)


def test_a_corpus_group_goes_to_every_probe_of_it_and_its_change_makes_only_those_pending(tmp_path):
    """``[[corpora]] group``: every model's probe of that corpus (the one computing the lexical baseline too) runs
    with ``--group``; another corpus's do not. The group is part of those probes' fingerprints, so changing it
    makes them pending (their extractions, which store every column, and the other corpus's cells stay done)."""
    (tmp_path / "a.csv").write_text("text,x,doc,other\nhi,1,d1,o1\nho,2,d2,o1\n")
    (tmp_path / "b.csv").write_text("text,x\nhi,1\n")
    corpora = [
        {"name": "a", "path": str(tmp_path / "a.csv"), "labels": ["x"]},
        {"name": "b", "path": str(tmp_path / "b.csv")},
    ]
    study = {"models": [{"name": "m1"}, {"name": "m2", "random_init": True}], "corpora": corpora}
    plans = {}
    for group in (None, "doc", "other"):
        corpora[0] = {key: value for key, value in corpora[0].items() if key != "group"}
        corpora[0] |= {"group": group} if group else {}
        plans[group] = make_plan(study)
    grouped = plans["doc"]
    assert {(cell.corpus.name, cell.lexical, cell.task.args["options"]["group"]) for cell in grouped.probes} == {
        ("a", True, "doc"), ("a", False, "doc"), ("b", True, None), ("b", False, None)
    }  # fmt: skip
    for changed in (plans[None], plans["other"]):
        differ = {cell.task.key for cell, was in zip(changed.probes, grouped.probes, strict=True)
                  if cell.task.fingerprint != was.task.fingerprint}  # fmt: skip
        assert differ == {"probe/m1/a/x", "probe/m2/a/x"}
        assert [cell.task.fingerprint for cell in changed.extractions] == [
            cell.task.fingerprint for cell in grouped.extractions
        ]
