"""What a user must see when featx refuses an input: one ``featx: error:`` line, at most a hint, no traceback."""

from __future__ import annotations

import re


def assert_one_clear_error(output: str, pattern: str) -> None:
    assert output.startswith("featx: error: "), output
    assert "Traceback" not in output, output
    lines = output.rstrip("\n").split("\n")
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("  hint: ")), output
    assert re.search(pattern, output.replace("\n", " ")), f"{pattern!r} not in {output!r}"
