"""Check that a built documentation site works offline: no asset fetched from another host.

    python scripts/check_site.py SITE_DIR

Scans every ``.html``, ``.css`` and ``.js`` file under SITE_DIR for references that a browser would
load from the network: ``<script src>``, ``<link href>`` (stylesheets, fonts, icons, preloads;
``canonical`` and the like are only addresses), ``<img>``/``<iframe>``/``<source>``/... ``src``, CSS
``@import`` and ``url(...)`` (in stylesheets, ``<style>`` blocks and ``style`` attributes), and in
scripts the font and CDN hosts (fonts.googleapis.com, fonts.gstatic.com, cdn.jsdelivr.net, unpkg.com,
cdnjs.cloudflare.com). Links a reader follows (``<a href>`` to a paper) are fine.

The Material theme's bundle names two unpkg addresses that it loads only on demand: a ResizeObserver
polyfill for browsers without one (every current browser has it) and mermaid for pages holding a
mermaid diagram. They are allowed in the bundle, and any page holding a mermaid diagram is an offender.

Prints each offender as ``FILE:LINE: what`` and exits 1 when there is any, else prints how many files
were checked and exits 0.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

CDN_HOSTS = ("fonts.googleapis.com", "fonts.gstatic.com", "cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com")
ON_DEMAND = (  # Material's bundle: loaded only where needed, see the module docstring
    "https://unpkg.com/resize-observer-polyfill",
    "https://unpkg.com/mermaid@",
)
ADDRESS_ONLY_RELS = {"canonical", "alternate", "author", "license", "help", "next", "prev", "bookmark", "me"}
SRC_TAGS = {"script", "img", "iframe", "source", "audio", "video", "embed", "track", "input"}
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)""", re.IGNORECASE)
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'");\s]+)""", re.IGNORECASE)
HOSTS = re.compile("|".join(re.escape(host) for host in CDN_HOSTS), re.IGNORECASE)


def external(url: str) -> bool:
    """Whether ``url`` is fetched from another host (``http://``, ``https://``, ``//host``); not data: URLs."""
    return bool(EXTERNAL.match(url)) and not url.strip().lower().startswith("file:")


def css_offenders(css: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each ``@import`` or ``url(...)`` of another host in a piece of CSS."""
    found, seen = [], set()
    for pattern, kind in ((CSS_IMPORT, "CSS @import"), (CSS_URL, "CSS url()")):
        for match in pattern.finditer(css):
            if external(match.group(1)) and match.start(1) not in seen:  # @import url(x): once
                seen.add(match.start(1))
                found.append((css.count("\n", 0, match.start()) + 1, f"{kind} {match.group(1)}"))
    return sorted(found)


def js_offenders(script: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each font or CDN host named in a script, but Material's on-demand loads."""
    found = []
    for match in HOSTS.finditer(script):
        start = script.rfind('"', 0, match.start()) + 1
        if any(script.startswith(allowed, start) for allowed in ON_DEMAND):
            continue
        found.append((script.count("\n", 0, match.start()) + 1, f"script names {match.group()}"))
    return found


class _PageScanner(HTMLParser):
    """Collects the external assets of one HTML page as ``(line, what)``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self._in_style = False
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        line = self.getpos()[0]
        self._in_style, self._in_script = tag == "style", tag == "script"
        if tag in SRC_TAGS and external(values.get("src", "")):
            self.found.append((line, f"<{tag} src={values['src']}>"))
        if tag == "link" and external(values.get("href", "")):
            rels = set(values.get("rel", "").lower().split())
            if not rels or not rels <= ADDRESS_ONLY_RELS:
                self.found.append((line, f"<link rel={values.get('rel', '')} href={values['href']}>"))
        if "class" in values and "mermaid" in values["class"].split():
            self.found.append((line, "a mermaid diagram: the theme would load mermaid from unpkg.com"))
        for offset, what in css_offenders(values.get("style", "")):
            self.found.append((line + offset - 1, f"style attribute: {what}"))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = self._in_script = False

    def handle_data(self, data: str) -> None:
        line = self.getpos()[0]
        check = css_offenders if self._in_style else js_offenders if self._in_script else None
        for offset, what in check(data) if check else []:
            self.found.append((line + offset - 1, what))


def html_offenders(page: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each external asset of an HTML page."""
    scanner = _PageScanner()
    scanner.feed(page)
    scanner.close()
    return scanner.found


CHECKS = {".html": html_offenders, ".css": css_offenders, ".js": js_offenders}


def offenders(site: Path) -> tuple[list[str], int]:
    """Every offender under ``site`` as ``FILE:LINE: what``, and how many files were checked."""
    found, checked = [], 0
    for path in sorted(site.rglob("*")):
        check = CHECKS.get(path.suffix.lower())
        if check is None or not path.is_file() or path.is_symlink():
            continue
        checked += 1
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(site)}:{line}: {what}" for line, what in check(text)]
    return found, checked


def main(argv: list[str] | None = None) -> int:
    """Check the site folder named in ``argv``; 0 when it loads nothing from the network, 1 otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python scripts/check_site.py SITE_DIR (a built site folder)", file=sys.stderr)
        return 2
    found, checked = offenders(Path(args[0]))
    for line in found:
        print(line)
    if found:
        print(f"check_site: {len(found)} external asset reference(s): the site would not work offline", file=sys.stderr)
        return 1
    print(f"check_site: {checked} files, no external assets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
