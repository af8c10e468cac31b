"""The bytes of an input file: read once (standard input too), gzip unwrapped, compressed files and JSON arrays
refused by name, and decoded to text with a message that names the line and column of a bad byte."""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from pathlib import Path

from ..errors import InputError

STDIN = "-"  # the corpus argument that reads standard input


def is_stdin(path) -> bool:
    return str(path) == STDIN


def rereadable(path) -> bool:
    """Whether reading ``path`` again gives the same bytes back: a regular file named by a stable path.

    Standard input, pipes, FIFOs, process substitution (``<(zcat x.gz)``) and ``/dev/stdin``-style
    names can be read once only; their fingerprint is the sha256 of the bytes read in this run.
    """
    if is_stdin(path) or str(path).startswith(("/dev/", "/proc/")):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def source_name(path) -> str:
    """How a corpus is named in messages and in the file: ``<stdin>`` for ``-``."""
    return "<stdin>" if is_stdin(path) else str(path)


def read_source(path: Path) -> bytes:
    """Every byte of the file, read once (the fingerprint is taken from these very bytes)."""
    if is_stdin(path):
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError(
                "corpus '-' means standard input, but nothing is piped in",
                "pipe the corpus in: featx extract - < corpus.csv, or give its path",
            )
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"PK\x03\x04": "zip", b"(\xb5/\xfd": "zstd"}


def refuse_other_formats(raw: bytes, path: Path, suffix: str) -> None:
    """Compressed files and JSON arrays, named as such (decoding them as text would give a misleading error)."""
    for magic, kind in COMPRESSED.items():
        if raw.startswith(magic):
            tool = {"gzip": "zcat", "bzip2": "bzcat", "xz": "xzcat", "zstd": "zstdcat"}.get(kind)
            how = f"featx extract <({tool} {path}) -o OUT.h5" if tool else "unzip it first"
            raise InputError(
                f"{path} is {kind}-compressed; featx reads plain CSV/TSV/JSON Lines or Parquet",
                f"decompress it first, or stream it: {how}",
            )
    start = raw.lstrip()[:2]
    if (suffix == ".json" and start[:1] == b"[") or (suffix in ("", ".jsonl", ".ndjson") and start == b"[{"):
        raise InputError(
            f"{path} is a JSON array; featx reads JSON Lines (one object per line)",
            f"convert it, e.g. jq -c '.[]' {path} > corpus.jsonl",
        )


GZIP_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".txt")


def unwrap_gzip(raw: bytes, path: Path) -> tuple[str, bytes]:
    """The suffix that says the format, and the bytes to parse: ``x.csv.gz`` is read as ``x.csv``."""
    suffix = "" if is_stdin(path) else path.suffix.lower()
    if suffix == ".gz" and raw.startswith(b"\x1f\x8b"):
        inner = Path(path.stem).suffix.lower()
        if inner in GZIP_SUFFIXES:
            try:
                return inner, gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as err:
                raise InputError(
                    f"{path} is not a readable gzip file ({err})", "check the download, or decompress it yourself"
                ) from None
    return suffix, raw


def decode_text(raw: bytes, path: Path, encoding: str) -> str:
    """``raw`` as text in ``encoding`` (UTF-8's byte order mark dropped); a bad byte is named by line and column."""
    try:
        return raw.decode("utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"{path}: line {line}, column {column} is not valid {encoding} (byte 0x{raw[err.start]:02x})",
            "re-save the file as UTF-8, or pass its encoding, e.g. --encoding latin-1",
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", "use a Python codec name such as utf-8 or latin-1") from None
