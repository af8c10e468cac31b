"""Headless Chromium for the report tests and ``make report-check``: load a page, dump its DOM, take a screenshot,
and list the network requests the page itself made (from Chromium's own net log)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--run-all-compositor-stages-before-draw",
    "--virtual-time-budget=5000",
]

# Filled in after the page loads by the check page (a copy of the report without its CSP, plus this script):
# for every figure's <svg>, its laid-out size, the number of drawn elements and the size of what they cover.
RENDER_CHECK = """<script>
window.addEventListener('load', () => {
  const found = [...document.querySelectorAll('figure svg')].map(svg => {
    const box = svg.getBoundingClientRect(); const drawn = svg.getBBox();
    return {width: box.width, height: box.height, elements: svg.querySelectorAll('path, text, use, image').length,
            drawn_width: drawn.width, drawn_height: drawn.height};
  });
  const out = document.createElement('pre'); out.id = 'render-check'; out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str | None:
    for name in (os.environ.get("FEATX_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _run(page: Path, *flags: str, timeout: int = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="featx-chromium-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *flags, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def page_requests(page: Path, work: Path) -> list[str]:
    """URLs of the network requests the page initiated (the browser's own background traffic, which has
    no initiator, is left out)."""
    log = work / "netlog.json"
    _run(page, f"--log-net-log={log}", "--dump-dom")
    data = json.loads(log.read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in data["events"]
        if event["type"] == start
        and event.get("params", {}).get("initiator") not in (None, "not an origin")
        and not event["params"].get("url", "").startswith(("file:", "data:"))
    ]


def render_check(page: Path, work: Path) -> list[dict]:
    """Per figure: laid-out width/height, drawn elements and the drawn bounding box (in a CSP-free copy)."""
    text = page.read_text(encoding="utf-8")
    head_end = text.index("</head>")
    text = (
        text[:head_end].replace('http-equiv="Content-Security-Policy"', 'name="csp-removed-for-check"')
        + text[head_end:]
    )
    copy = work / "render-check.html"
    copy.write_text(text.replace("</body>", RENDER_CHECK + "</body>"), encoding="utf-8")
    dom = _run(copy, "--dump-dom").stdout
    start = dom.index('<pre id="render-check">') + len('<pre id="render-check">')
    return json.loads(dom[start : dom.index("</pre>", start)])


def dom(page: Path) -> str:
    return _run(page, "--dump-dom").stdout


def screenshot(page: Path, target: Path, width: int = 1200, height: int = 2600) -> Path:
    _run(page, f"--screenshot={target}", f"--window-size={width},{height}")
    return target


def print_pdf(page: Path, target: Path) -> Path:
    _run(page, f"--print-to-pdf={target}", "--no-pdf-header-footer")
    return target


def console_messages(page: Path) -> list[str]:
    """The messages the page wrote to the browser console while loading (errors, CSP violations), from
    Chromium's own log; a featx report, which runs no script and fetches nothing, writes none."""
    done = _run(page, "--enable-logging=stderr", "--v=0", "--dump-dom")
    return [line.split("] ", 1)[-1] for line in done.stderr.splitlines() if ":CONSOLE" in line]


def checked_load(page: Path, work: Path, script: str) -> tuple[str, list[str], list[str]]:
    """One Chromium run of ``page`` with ``script`` added at the end of its body and its hash added to the page's
    own Content-Security-Policy (which stays in force): the DOM after the script ran, the console messages and
    the network requests the page made. For pages that run scripts under a hash-based ``script-src``."""
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    text = page.read_text(encoding="utf-8")
    assert text.count("script-src ") == 1, "the page's CSP names its scripts"
    text = text.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    copy = work / "checked.html"
    copy.write_text(text.replace("</body>", f"<script>{script}</script></body>"), encoding="utf-8")
    log = work / "checked-netlog.json"
    done = _run(copy, "--enable-logging=stderr", "--v=0", f"--log-net-log={log}", "--dump-dom")
    console = [line.split("] ", 1)[-1] for line in done.stderr.splitlines() if ":CONSOLE" in line]
    data = json.loads(log.read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    requests = [
        event["params"]["url"]
        for event in data["events"]
        if event["type"] == start
        and event.get("params", {}).get("initiator") not in (None, "not an origin")
        and not event["params"].get("url", "").startswith(("file:", "data:"))
    ]
    return done.stdout, console, requests
