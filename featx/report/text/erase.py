"""Terminal tables of ``featx erase``: the erased label before/after per layer, and amnesic probing."""

from __future__ import annotations

import math

import pandas as pd


def _num(value, digits: int = 3, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _ci(row, name: str) -> str:
    return f"{_num(row[name])} [{_num(row[name + '_low'])}, {_num(row[name + '_high'])}]"


def _p(value, significant: bool) -> str:
    if value is None or pd.isna(value):
        return "-"
    return ("<.001" if value < 0.001 else f"{value:.3f}") + ("!" if significant else "")


def grid(header: list[str], rows: list[list[str] | None]) -> list[str]:
    """Left-aligned columns; ``None`` rows are blank separator lines."""
    widths = [max(len(header[i]), *(len(r[i]) for r in rows if r)) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["" if r is None else "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    return lines


def _separated(table: pd.DataFrame, key: str, cells) -> list[list[str] | None]:
    rows, previous = [], None
    for _, row in table.iterrows():
        if previous is not None and row[key] != previous:
            rows.append(None)
        previous = row[key]
        rows.append(cells(row))
    return rows


def format_erase(result) -> str:
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
        "at chance",
        "p (Holm)",
        "rank",
        "moved",
    ] + (["iters"] if method == "inlp" else [])

    def cells(row):
        out = [
            row.pooling,
            str(row.layer),
            _num(row.majority),
            _ci(row, "before"),
            _ci(row, "after"),
            "yes" if row.at_chance else "NO",
            _p(row.p_holm, row.p_holm < 0.05),
            str(row["rank"]),
            _num(row.moved, 4),
        ]
        return out + ([str(int(row.iterations))] if method == "inlp" else [])

    lines += grid(header, _separated(table, "pooling", cells))
    lines += [
        "",
        "at chance = the after-interval reaches the majority class; p = paired test before vs after; "
        "moved = mean squared change / total variance",
    ]
    if not result.amnesic.empty:
        lines += [
            "",
            f"amnesic probing: other label columns before and after erasing '{meta['label']}' "
            "(logreg, same evaluation)",
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
            "random dirs",
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
                    _num(row.majority),
                    _ci(row, "before"),
                    _ci(row, "after"),
                    _num(row.change, signed=True),
                    _p(row.p_holm, bool(row.significant)),
                    _num(row.random_after),
                ],
            ),
        )
        lines.append(
            "p: paired test of the same rows before vs after, Holm-adjusted over the layers of each "
            "label; ! = significant at 0.05; random dirs = accuracy after removing as many random "
            "directions (the amnesic control)"
        )
    lines += [f"note: {note}" for note in result.notes]
    if result.output is not None:
        lines += [
            "",
            f"wrote {result.output} and {result.csv_path.name} (+ .erase.json, .erasers.npz"
            + (", .amnesic.csv" if not result.amnesic.empty else "")
            + ")",
        ]
    return "\n".join(lines)
