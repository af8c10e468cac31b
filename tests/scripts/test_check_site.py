"""scripts/check_site.py: a built site that fetches an asset from another host fails the docs build."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_site.py"


@pytest.fixture(scope="module")
def check_site():
    spec = importlib.util.spec_from_file_location("check_site", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLEAN_PAGE = """<!doctype html>
<html><head>
<link rel="stylesheet" href="assets/main.css">
<link rel="canonical" href="https://example.org/featx/">
<script src="assets/bundle.js"></script>
<style>body { background: url(data:image/png;base64,AAAA); }</style>
</head><body>
<a href="https://arxiv.org/abs/1909.03368">Hewitt and Liang (2019)</a>
<img src="demo.png" alt="demo">
</body></html>
"""

OFFENDING_PAGE = """<!doctype html>
<html><head>
<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">
<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>
<style>@import url("https://example.org/theme.css");</style>
</head><body><div style="background: url('//cdn.example.org/bg.png')">x</div></body></html>
"""


def _site(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_clean_site_passes(check_site, tmp_path, capsys):
    site = _site(
        tmp_path,
        {
            "index.html": CLEAN_PAGE,
            "assets/main.css": "a { color: red; }",
            "assets/bundle.js": 'x=_t("https://unpkg.com/mermaid@11/dist/mermaid.min.js")',
        },
    )
    assert check_site.main([str(site)]) == 0
    assert "3 files, no external assets" in capsys.readouterr().out


def test_every_external_asset_is_listed(check_site, tmp_path, capsys):
    site = _site(
        tmp_path,
        {
            "index.html": CLEAN_PAGE,
            "reference/bad.html": OFFENDING_PAGE,
            "assets/fonts.css": "@font-face { src: url(https://fonts.gstatic.com/s/roboto.woff2); }",
            "assets/load.js": 'fetch("https://cdnjs.cloudflare.com/ajax/libs/x.js")',
        },
    )
    assert check_site.main([str(site)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "assets/fonts.css:1: CSS url() https://fonts.gstatic.com/s/roboto.woff2",
        "assets/load.js:1: script names cdnjs.cloudflare.com",
        "reference/bad.html:3: <link rel=stylesheet href=https://fonts.googleapis.com/css?family=Roboto>",
        "reference/bad.html:4: <script src=https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js>",
        "reference/bad.html:5: CSS @import https://example.org/theme.css",
        "reference/bad.html:6: style attribute: CSS url() //cdn.example.org/bg.png",
    ]


def test_a_mermaid_diagram_is_an_offender(check_site, tmp_path):
    site = _site(tmp_path, {"index.html": '<pre class="mermaid">graph TD; a-->b</pre>'})
    found, checked = check_site.offenders(site)
    assert checked == 1
    assert found == ["index.html:1: a mermaid diagram: the theme would load mermaid from unpkg.com"]


def test_a_missing_folder_is_a_usage_error(check_site, tmp_path, capsys):
    assert check_site.main([str(tmp_path / "no-site")]) == 2
    assert "usage: python scripts/check_site.py SITE_DIR" in capsys.readouterr().err
