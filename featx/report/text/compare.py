"""The terminal text of ``featx compare``: one line per results file, then the per-layer paired tests."""

from __future__ import annotations

import pandas as pd

from .format import grid, num, p_value, row_interval


def format_comparison(
    table: pd.DataFrame, tests: pd.DataFrame | None, notes: list[str], metric: str = "accuracy"
) -> str:
    """The terminal text of ``featx compare``: one line per file, then the per-layer paired tests."""
    majority = "train mean" if metric in ("r2", "pearson", "spearman", "mae") else "majority"  # a number's baseline
    header = ["name", "best layer", "depth", "pooling", f"{metric} [95% CI]", majority, "lexical", "select."]
    rows = [
        [
            str(r["name"]),
            str(r["best_layer"]),
            f"{r['relative_depth']:.2f}",
            str(r["pooling"]),
            row_interval(r, metric),
            num(r.get("majority")),  # each score beside its own run's baselines (corpora and labels differ)
            num(r.get("lexical")),
            num(r["selectivity"], signed=True),
        ]
        for _, r in table.iterrows()
    ]
    lines = grid(header, rows)
    if tests is not None and not tests.empty:
        for (a, b), part in tests.groupby(["a", "b"], sort=False):
            by_depth = "layer_b" in part and bool((part["layer_b"] != part["layer"]).any())
            how = "paired by relative depth (layer A / B at the same depth, else the nearest); " if by_depth else ""
            lines += [
                "",
                f"paired test per layer: A = {a}, B = {b} ({part['tested'].iloc[0]}; {how}Holm over layers; "
                "! = p < 0.05)",
            ]
            named = str(part["metric"].iloc[0]) if "metric" in part else metric
            lines += grid(
                ["layer A / B" if by_depth else "layer", f"{named} A", f"{named} B", "A - B", "p (Holm)"],
                [  # A - B: compare.tests.csv's difference
                    [
                        f"{int(r.layer)} / {int(r.layer_b)}" if by_depth else str(int(r.layer)),
                        f"{r.score_a:.3f}",
                        f"{r.score_b:.3f}",
                        f"{r.difference:+.3f}",
                        p_value(r.p_holm, bool(r.significant)),
                    ]
                    for r in part.itertuples()
                ],
            )
    return "\n".join(lines + [f"note: {note}" for note in notes])
