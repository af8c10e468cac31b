"""The terminal text of ``featx compare``: the paired tests print the difference that compare.tests.csv holds."""

import pandas as pd

from featx.report.text.compare import format_comparison


def test_the_printed_difference_is_the_csv_difference():
    table = pd.DataFrame(
        [
            {"name": n, "best_layer": 3, "relative_depth": 0.5, "pooling": "mean", "selectivity": 0.1}
            | {"majority": 0.5, "lexical": 0.6}
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


def test_each_run_stands_beside_its_baselines_a_numbers_being_its_training_mean():
    row = {"name": "sick", "best_layer": 4, "relative_depth": 0.67, "pooling": "mean", "selectivity": 0.34}
    row |= {"r2": 0.315, "r2_low": 0.133, "r2_high": 0.417, "majority": -0.027, "lexical": 0.163}
    lines = format_comparison(pd.DataFrame([row]), None, [], metric="r2").splitlines()
    assert "train mean  lexical  select." in lines[0] and "majority" not in lines[0]
    assert lines[2].split()[-3:] == ["-0.027", "0.163", "+0.340"]
