"""Terminal tables of ``featx erase``: the erased label before/after per layer, and amnesic probing."""

from __future__ import annotations

import pandas as pd

from .format import grid, num, p_value, row_interval


def _separated(table: pd.DataFrame, key: str, cells) -> list[list[str] | None]:
    rows, previous = [], None
    for _, row in table.iterrows():
        if previous is not None and row[key] != previous:
            rows.append(None)
        previous = row[key]
        rows.append(cells(row))
    return rows


def _control(row) -> str:
    """The random-directions control with its interval (files written before it: without one, or ``-``)."""
    if pd.isna(row.get("random_after")):
        return "-"
    return row_interval(row, "random_after") if pd.notna(row.get("random_after_low")) else num(row.random_after)


def amnesic_lines(result) -> list[str]:
    """The other label columns before and after the erasure, with the random-directions control."""
    meta = result.meta
    lines: list[str] = []
    lines += [
        "",
        f"amnesic probing: other label columns before and after erasing '{meta['label']}' (logreg, same evaluation)",
    ]
    header = [
        "label",
        "pooling",
        "layer",
        "majority",
        "before [95% CI]",
        "after [95% CI]",
        "change",
        "p (Holm)",
        "random dirs [95% CI]",
    ]
    lines += grid(
        header,
        _separated(
            result.amnesic,
            "label",
            lambda row: [
                row.label,
                row.pooling,
                str(row.layer),
                num(row.majority),
                row_interval(row, "before"),
                row_interval(row, "after"),
                num(row.change, signed=True),
                p_value(row.p_holm, bool(row.significant)),
                _control(row),
            ],
        ),
    )
    lines.append(
        "p: paired test of the same rows before vs after, Holm-adjusted over the layers of each "
        "label; ! = significant at 0.05; random dirs = accuracy after removing as many random "
        "directions (the amnesic control)"
    )
    return lines


def format_erase(result) -> str:
    """The terminal text of ``featx erase``: before and after per layer, then amnesic probing."""
    meta, table = result.meta, result.table
    method = meta["settings"]["method"]
    lines = [
        f"erasing '{meta['label']}' ({method}) from {meta['features_file']} ({meta['model']}): "
        f"{meta['n_rows']} rows, classes {', '.join(meta['classes'])}",
        f"evaluation: {meta['evaluation']}; the eraser is fitted on each training part only, "
        "the logreg probe is trained and scored before and after",
        "",
    ]
    header = [
        "pooling",
        "layer",
        "majority",
        "before [95% CI]",
        "after [95% CI]",
        "random dirs [95% CI]",
        "at chance",
        "p (Holm)",
        "rank",
        "moved",
    ] + (["iters"] if method == "inlp" else [])

    def cells(row):
        out = [
            row.pooling,
            str(row.layer),
            num(row.majority),
            row_interval(row, "before"),
            row_interval(row, "after"),
            _control(row),
            "yes" if row.at_chance else "NO",
            p_value(row.p_holm, bool(row.p_holm < 0.05)),
            str(row["rank"]),
            num(row.moved, 4),
        ]
        return out + ([str(int(row.iterations))] if method == "inlp" else [])

    lines += grid(header, _separated(table, "pooling", cells))
    lines += [
        "",
        "random dirs = accuracy after removing as many random directions instead (the control); at chance = the "
        "after-interval reaches the majority class; p = paired test before vs after; moved = mean squared change / "
        "total variance",
    ]
    if not result.amnesic.empty:
        lines += amnesic_lines(result)
    lines += [f"note: {note}" for note in result.notes]
    if result.output is not None:
        lines += [
            "",
            f"wrote {result.output} and {result.csv_path.name} (+ .erase.json, .erasers.npz"
            + (", .amnesic.csv" if not result.amnesic.empty else "")
            + ")",
        ]
    return "\n".join(lines)
