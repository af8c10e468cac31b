"""study.lexical.share_lexical: the fitting cell's lexical row copied into every other model's done cell of its
(corpus, label), the fitting cell's results read once for all of them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from support.results import synthetic_results, write_results

import featx.probing
from featx.study import lexical
from featx.study.records import DONE


def _cell(folder: Path, model: str, fits: bool):
    frame, meta = synthetic_results(model=model)
    if fits:
        reference = frame[frame["kind"] == "majority"].assign(kind="lexical", layer_spec="lexical", accuracy=0.7)
        frame = pd.concat([frame, reference], ignore_index=True)
    prefix = folder / model / "label.probe"
    prefix.parent.mkdir()
    write_results(frame, meta, prefix)
    task = SimpleNamespace(key=f"probe/{model}/c/label")
    corpus, spec = SimpleNamespace(name="c"), SimpleNamespace(name=model)
    return SimpleNamespace(model=spec, corpus=corpus, label="label", prefix=prefix, lexical=fits, task=task,
                           results=Path(f"{prefix}.csv"))  # fmt: skip


def test_the_fitting_cells_results_are_read_once_for_every_other_model(tmp_path, monkeypatch):
    cells = [_cell(tmp_path, "m0", True)] + [_cell(tmp_path, f"m{i}", False) for i in (1, 2)]
    plan = SimpleNamespace(probes=cells, config=SimpleNamespace(output=tmp_path))
    monkeypatch.setattr(lexical, "cell_status", lambda task: DONE)
    read, load = [], featx.probing.load_results
    monkeypatch.setattr(
        featx.probing, "load_results", lambda path, *a, **k: read.append(Path(path)) or load(path, *a, **k)
    )
    assert lexical.share_lexical(plan) == [f"probe/m{i}/c/label" for i in (1, 2)]
    assert read.count(cells[0].results) == 1  # once, not once per other model
    for cell in cells[1:]:
        table, meta = load(cell.results)
        assert table[table["kind"] == "lexical"].accuracy.tolist() == [0.7] and meta["lexical"]["model"] == "m0"
    read.clear()
    assert lexical.share_lexical(plan) == [] and cells[0].results not in read  # all have one: the source is not read
