"""The ``featx intervene`` section of a probe report (``featx/report/html/intervene.py``) and its figures
(``featx/report/figures/intervene.py``), from result files written by hand in ``featx intervene``'s format."""

from __future__ import annotations

import json

from featx.interventions import STEER_COLUMNS, TABLE_COLUMNS
from featx.report import save_intervention_figure
from featx.report.html.intervene import intervene_files, intervene_sections


def _intervene_payload() -> dict:
    rows = []
    for layer, after in ((1, 0.5), (2, 0.7)):
        rows.append({key: None for key in TABLE_COLUMNS})
        rows[-1].update(edit="erase", edit_layer=1, rank=1, kind="probe", name="animal", role="edited", layer=layer,
                        majority=0.5, before=0.9, before_low=0.8, before_high=0.95, after=after, after_low=after - 0.1,
                        after_high=after + 0.1, control=0.9, control_low=0.8, control_high=0.95, p_after=0.01,
                        p_after_holm=0.02, at_chance=layer == 1, significant=True)  # fmt: skip
    drift = {key: None for key in TABLE_COLUMNS}
    drift.update(edit="erase", edit_layer=1, rank=1, kind="output", name="last-layer cosine", role="drift", layer=2,
                 before=1.0, after=0.99, control=0.999)  # fmt: skip
    meta = {"kind": "intervene", "edit": "erase", "label": "animal", "at": [1], "notes": ["LM loss skipped: none"]}
    return {"meta": meta, "results": [*rows, drift]}


def _steer_payload() -> dict:
    rows = [
        dict(zip(STEER_COLUMNS, (alpha, name, 1, 2, moved, moved, moved, 0.0, 0.0, 0.0, 10), strict=True))
        for alpha, name, moved in ((0, "probe", 0.0), (4, "probe", 0.9), (0, "random", 0.0), (4, "random", 0.1))
    ]
    return {"meta": {"kind": "steer", "toward": "dogs", "at": 1, "notes": []}, "results": rows}


def test_the_section_shows_each_result_beside_the_features(tmp_path):
    """Each result's figure, table and notes; the dose-response's moved, flipped and score change each with its 95%
    interval, as the printout gives them (the table gave moved's bounds as columns of their own, the score change
    and flipped without theirs)."""
    import re

    features = tmp_path / "corpus.features.h5"
    features.write_bytes(b"")  # only its name and folder matter to the section
    (tmp_path / "corpus.intervene-animal.json").write_text(json.dumps(_intervene_payload()))
    steer = _steer_payload()
    for row in steer["results"]:
        row.update(score_change=row["alpha"] / 2, score_change_low=row["alpha"] / 4, score_change_high=row["alpha"])
        row.update(flipped=0.25, flipped_low=0.125, flipped_high=0.5)  # read through contrast answers
    (tmp_path / "corpus.steer-dogs.json").write_text(json.dumps(steer))
    (tmp_path / "other.intervene-animal.json").write_text("{}")  # another features file's: not shown
    meta = {"features_file": str(features)}
    assert [path.name for path in intervene_files(meta)] == ["corpus.intervene-animal.json", "corpus.steer-dogs.json"]
    section = "\n".join(intervene_sections(meta))
    assert section.startswith("<h2>Inside the model (featx intervene)</h2>")
    assert section.count("<svg") == 2 and "last-layer cosine" in section and "steering toward dogs" in section
    assert "LM loss skipped" in section
    table = section[section.rindex("<table") :]
    assert re.findall(r"<th>(.*?)</th>", table) == ["alpha", "direction", "moved", "flipped", "score_change", "n_rows"]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]]
    assert cells[1] == ["4", "probe", "0.900 [0.900, 0.900]", "0.250 [0.125, 0.500]", "2.000 [1.000, 4.000]", "10"]


def test_a_grouped_result_says_so_as_the_probe_page_does(tmp_path):
    from featx.report.html.sections import grouping

    features = tmp_path / "corpus.features.h5"
    features.write_bytes(b"")
    payload = _intervene_payload()
    payload["meta"].update(group="doc", n_groups=24)
    (tmp_path / "corpus.intervene-animal.json").write_text(json.dumps(payload))
    section = "\n".join(intervene_sections({"features_file": str(features)}))
    assert f'<p class="muted">grouped by {grouping(payload["meta"])}</p>' in section


def test_no_section_without_results_or_features(tmp_path):
    assert intervene_sections({"features_file": str(tmp_path / "gone.h5")}) == []
    assert intervene_sections({}) == []


def test_an_unreadable_result_is_named_not_raised(tmp_path):
    features = tmp_path / "x.h5"
    features.write_bytes(b"")
    (tmp_path / "x.intervene-a.json").write_text("not json")
    assert "is not a readable featx intervene result" in "\n".join(intervene_sections({"features_file": str(features)}))


def test_the_figures_are_written(tmp_path):
    import pandas as pd

    for payload, name in ((_intervene_payload(), "a.png"), (_steer_payload(), "b.png")):
        table = pd.DataFrame(payload["results"]).fillna(float("nan"))
        path = save_intervention_figure(table, payload["meta"], tmp_path / name)
        assert path == tmp_path / name and path.stat().st_size > 1000


def test_the_steering_figure_draws_the_mean_change_beside_the_share_moved():
    """A random direction can move every row a little (its share moved equal to the probe direction's): the figure
    drew the share moved alone, so the two directions looked the same; the mean change, with its interval, tells
    them apart."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from featx.report.figures.intervene import intervention_figure

    payload = _steer_payload()
    for row in payload["results"]:
        row["moved"] = row["moved_low"] = row["moved_high"] = float(row["alpha"] > 0)  # every row moved, both ways
        row["score_change"] = row["alpha"] * (2.0 if row["direction"] == "probe" else 0.25)
        row["score_change_low"], row["score_change_high"] = row["score_change"] - 0.1, row["score_change"] + 0.1
    figure = intervention_figure(pd.DataFrame(payload["results"]), payload["meta"])
    try:
        moved, change = figure.axes
        assert [list(line.get_ydata()) for line in moved.get_lines()] == [[0.0, 1.0], [0.0, 1.0]]
        drawn = [list(line.get_ydata()) for line in change.get_lines()[:2]]
        assert drawn == [[0.0, 8.0], [0.0, 1.0]] and "mean change" in change.get_ylabel()
    finally:
        plt.close(figure)


def test_the_table_gives_the_loss_rows_paired_tests_and_the_probes_holm_ones(tmp_path):
    """As the printout: a probe row's Holm-adjusted p, the LM loss row's paired t-test p (it has no Holm column)."""
    payload = _intervene_payload()
    loss = {key: None for key in TABLE_COLUMNS}
    loss.update(edit="erase", edit_layer=1, rank=1, kind="output", name="LM loss", role="loss", layer=2, before=3.1,
                after=3.4, control=3.15, p_after=0.0123, p_control=0.0456)  # fmt: skip
    payload["results"].append(loss)
    features = tmp_path / "corpus.features.h5"
    features.write_bytes(b"")
    (tmp_path / "corpus.intervene-animal.json").write_text(json.dumps(payload))
    section = "\n".join(intervene_sections({"features_file": str(features)}))
    assert "p after" in section and "p control" in section
    assert "0.012" in section and "0.046" in section  # the loss row's tests
    assert "0.020" in section  # a probe row's Holm-adjusted p, not its raw 0.010


def test_each_probe_row_stands_beside_its_majority_class_with_whole_layers(tmp_path):
    """As the printout's ``majority M: after at chance``: the table gives each probe row its majority class and
    whether the after interval reaches it; layers read as layers (2, not 2.000), a tiny p as ``<.001``."""
    import re

    payload = _intervene_payload()
    payload["results"][1]["p_after_holm"] = 0.0004
    features = tmp_path / "corpus.features.h5"
    features.write_bytes(b"")
    (tmp_path / "corpus.intervene-animal.json").write_text(json.dumps(payload))
    section = "\n".join(intervene_sections({"features_file": str(features)}))
    table = section[section.index("<table") :]
    assert "<th>majority</th>" in table and "<th>after at chance</th>" in table
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    assert [row[:2] for row in cells] == [["1", "animal"], ["1", "animal"], ["1", "last-layer cosine"]]
    assert [row[3] for row in cells] == ["1", "2", "2"] and "2.000" not in table
    assert [row[4] for row in cells] == ["0.500", "0.500", "-"]  # the drift row has no majority class
    assert [row[-1] for row in cells] == ["yes", "", ""]
    assert "&lt;.001" in table and "0.000<" not in table
