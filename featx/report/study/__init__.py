"""The study report (``featx study report``): one self-contained HTML page over a whole study, with interactive
plotly figures. ``table`` makes the study's results table uniform and picks the rows shown, ``figures`` draws
them, ``page`` writes the page (``script``: its own JavaScript). The study side imports this package, never
the other way round."""

from ...lazy import lazy_exports

_HOMES = {
    "write_study_report": "page",
    "render_study_report": "page",
    "expected_layer": "table",
    "run_study_first": "table",
    **{module: module for module in ("figures", "page", "script", "table")},
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
