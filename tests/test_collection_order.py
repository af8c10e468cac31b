"""The test paths of a command line are collected folder by folder (``support.arguments.by_folder``, applied by
``tests/conftest.py``), so that pytest 9.1 collects each folder once and its conftest's fixtures reach every test."""

from __future__ import annotations

from pathlib import Path

from support.arguments import by_folder


def test_a_folder_left_and_come_back_to_is_kept_together(tmp_path):
    args = ["tests/report/text", "tests/test_options.py", "tests/report/test_report_compare.py::test_x"]
    assert by_folder(args, tmp_path) == [args[0], args[2], args[1]]  # tests/report's paths, then tests/'s own


def test_otherwise_the_order_is_the_callers(tmp_path):
    args = ["tests/b", "tests/a/x.py::test_2", "tests/c.py", "tests/a/x.py::test_1", str(tmp_path / "tests/b/y.py")]
    # folders in the order of their first path; one file's node ids in their order; absolute paths as relative
    assert by_folder(args, tmp_path) == [args[0], args[4], args[1], args[3], args[2]]
    assert by_folder(args[:3], tmp_path) == args[:3]  # already folder by folder: unchanged
    assert by_folder([], Path(tmp_path)) == []
