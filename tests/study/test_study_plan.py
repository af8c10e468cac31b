"""The plan: one extraction per (model, corpus), one probe per (model, corpus, label), the lexical baseline
computed by one probe per (corpus, label) whatever the number of models."""

from __future__ import annotations

from collections import Counter

from featx.study import make_plan


def test_lexical_once_per_corpus_and_label(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("text,x,y\nhi,1,2\n")
    study = {
        "study": {"output": str(tmp_path / "out")},
        "models": [{"name": "m1"}, {"name": "m2"}, {"name": "r", "random_init": True, "seeds": [0, 1]}],
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


def test_a_label_that_is_no_file_name_gets_a_safe_stem(tmp_path):
    (tmp_path / "a.csv").write_text("text,x\nhi,1\n")
    study = {"models": [{"name": "m"}], "corpora": [{"path": str(tmp_path / "a.csv"), "labels": ["../x y"]}]}
    stem = make_plan(study).probes[0].prefix.name
    assert "/" not in stem and stem.startswith(".._x_y-") and stem.endswith(".probe")
