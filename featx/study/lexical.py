"""Each (corpus, label)'s lexical baseline beside every model's probe of it, not only the first model's.

The baseline (TF-IDF of the texts) depends on the corpus, the label and the probe options, never on the model:
the plan lets the first model's probe fit it (``ProbeCell.lexical``) and the others skip it. So that every cell's
own results (its ``featx report`` page, ``featx compare`` on its ``.probe.csv``) still stand beside it, the
fitting cell's lexical row is copied, the same figures, into each other done cell of that (corpus, label) that
has none, and its meta's ``lexical`` says where it came from (``from``: the fitting cell's results, relative to
OUTPUT; ``model``: its model). The copied row has no paired test (``p_vs_best`` empty): the one fitted was against
the other model's layers, and the baseline's predictions are not kept. A cell of other test rows (a count that
differs) gets nothing. The study's tables read the fitting cell as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .records import DONE, cell_status

if TYPE_CHECKING:
    from .plan import ProbeCell, StudyPlan

UNTESTED = ("p_vs_best", "p_vs_best_holm", "significant_vs_best")


def _same_rows(rows: pd.DataFrame, table: pd.DataFrame) -> bool:
    """Whether the lexical row was scored on as many training and test rows as the cell's own rows were."""
    own = table[table["kind"] == "majority"] if (table["kind"] == "majority").any() else table
    return all(
        column in rows and column in own and float(rows[column].iloc[0]) == float(own[column].iloc[0])
        for column in ("n_train", "n_test")
    )


def _share(cell: ProbeCell, source: ProbeCell, loaded: dict[str, tuple[pd.DataFrame, dict]], output: Path) -> bool:
    """Copy ``source``'s lexical row into ``cell``'s results (both done); whether anything was written. ``source``'s
    results are read once for all the cells it serves (``loaded``, by task key), and only when one needs them."""
    from ..probing import load_results, write_results

    table, meta = load_results(cell.results)
    if (table["kind"] == "lexical").any():  # its own, or copied by an earlier run
        return False
    if source.task.key not in loaded:
        loaded[source.task.key] = load_results(source.results)
    fitted, fitted_meta = loaded[source.task.key]
    rows = fitted[fitted["kind"] == "lexical"].head(1).copy()
    if rows.empty or not _same_rows(rows, table):
        return False
    for column in UNTESTED:
        if column in rows:
            rows[column] = np.nan if column != "significant_vs_best" else None
    after = int(np.flatnonzero(table["kind"].isin(["majority", "baseline"])).max(initial=-1)) + 1
    shared = pd.concat([table.iloc[:after], rows[list(table.columns.intersection(rows.columns))],
                        table.iloc[after:]], ignore_index=True)[list(table.columns)]  # fmt: skip
    fitted_lexical = fitted_meta.get("lexical")
    described = fitted_lexical if isinstance(fitted_lexical, dict) else {}
    where = source.results.relative_to(output) if source.results.is_relative_to(output) else source.results
    meta["lexical"] = {**described, "from": where.as_posix(), "model": source.model.name}
    write_results(shared, meta, cell.results, Path(f"{cell.prefix}.json"))
    return True


def share_lexical(plan: StudyPlan) -> list[str]:
    """Give every done probe cell without a lexical row its (corpus, label)'s, from the done cell that fitted it;
    the keys of the cells given one."""
    fitted = {
        (cell.corpus.name, cell.label): cell for cell in plan.probes if cell.lexical and cell_status(cell.task) == DONE
    }
    given: list[str] = []
    loaded: dict[str, tuple[pd.DataFrame, dict]] = {}
    for cell in plan.probes:
        source = fitted.get((cell.corpus.name, cell.label))
        if source is None or cell is source or cell_status(cell.task) != DONE:
            continue
        if _share(cell, source, loaded, plan.config.output):
            given.append(cell.task.key)
    return given
