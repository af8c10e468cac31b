"""The terminal text of ``featx compare``: the paired tests print the difference that compare.tests.csv holds."""

import pandas as pd

from featx.report.text.compare import format_comparison


def test_the_printed_difference_is_the_csv_difference():
    table = pd.DataFrame(
        [
            {"name": n, "best_layer": 3, "relative_depth": 0.5, "pooling": "mean", "selectivity": 0.1}
            | {"accuracy": a, "accuracy_low": a - 0.05, "accuracy_high": a + 0.05}
            for n, a in (("trained", 0.873), ("random", 0.607))
        ]
    )
    tests = pd.DataFrame(
        {"a": ["trained"], "b": ["random"], "layer": [3], "metric": ["accuracy"], "score_a": [0.873]}
        | {"score_b": [0.607], "difference": [0.873 - 0.607], "p_holm": [0.001], "significant": [True]}
        | {"tested": ["mean/logreg vs mean/logreg"]}
    )
    text = format_comparison(table, tests, [])
    header = next(line for line in text.splitlines() if line.startswith("layer"))
    row = next(line for line in text.splitlines() if line.startswith("3 "))
    assert header.split()[:6] == ["layer", "accuracy", "A", "accuracy", "B", "A"] and "A - B" in header
    assert row.split()[:4] == ["3", "0.873", "0.607", "+0.266"]
