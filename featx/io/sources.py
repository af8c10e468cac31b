"""The bytes of an input file: read once (standard input too), gzip unwrapped, compressed files and JSON arrays
refused by name, and decoded to text with a message that names the line and column of a bad byte."""

from __future__ import annotations

import codecs
import functools
import os
import stat
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import InputError

T = TypeVar("T")

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


def naming_stdin(read: Callable[..., T]) -> Callable[..., T]:
    """``read`` (whose first argument is the path) with its errors about standard input naming it ``<stdin>``,
    as every other message does, instead of the ``-`` its path is spelt."""

    @functools.wraps(read)
    def named(path, *args, **kwargs):
        try:
            return read(path, *args, **kwargs)
        except InputError as err:
            spelt = str(path)
            if not is_stdin(path) or not err.message.startswith(spelt):
                raise
            raise InputError(source_name(path) + err.message[len(spelt) :], err.hint) from None

    return named


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


# The suffixes that name a corpus's format: the tables read here (a ``.gz`` may follow any but Parquet's) and the
# word inputs ``featx.extraction`` reads as CoNLL-U.
TABLE_SUFFIXES = (*GZIP_SUFFIXES, ".parquet")
CONLLU_SUFFIXES = (".conllu", ".conll-u")
CORPUS_SUFFIXES = (*TABLE_SUFFIXES, *CONLLU_SUFFIXES)


def corpus_name(path: str | os.PathLike) -> str:
    """A corpus file's name less the format suffix featx reads it by (``CORPUS_SUFFIXES``, any case) and the
    ``.gz`` after a table's, every other dot kept: ``agnews.train.csv`` -> ``agnews.train``, ``sst2.csv.gz`` ->
    ``sst2``, ``notes.v2`` -> ``notes.v2`` (what a study names a corpus by when its entry gives no name)."""
    name = Path(path).name
    if name.lower().endswith(".gz") and name[:-3].lower().endswith(GZIP_SUFFIXES):
        name = name[:-3]
    suffix = next((end for end in CORPUS_SUFFIXES if name.lower().endswith(end) and len(name) > len(end)), "")
    return name[: len(name) - len(suffix)]


def corpus_stem(path: str | os.PathLike) -> str:
    """A corpus file's name less its format suffix and a ``.gz`` after it, the stem of every default output name
    made from a corpus (``x.csv.gz`` and ``x.csv`` -> ``x``; ``reviews.2024.csv`` -> ``reviews.2024``)."""
    name = Path(path).name
    if name.lower().endswith(".gz") and len(name) > 3:
        name = name[:-3]
    return Path(name).stem or name


# A gzip corpus is inflated in blocks with a running check, so a small file that inflates to gigabytes (a
# "gzip bomb") is refused after a few MiB instead of filling memory: at most MAX_CORPUS_BYTES (2 GiB, a tenth
# of a 24 GiB machine: the rows parsed from it take several times that again) and, once past the first
# RATIO_FREE_BYTES, at most MAX_GZIP_RATIO times the compressed bytes read so far (text compresses 3 to 10
# times; a corpus inflating 100 times faster is almost all repetition). ``--max-corpus-bytes N`` sets the size
# allowed instead and lifts the ratio check, for a file the user trusts.
MAX_CORPUS_BYTES = 2 * 2**30
MAX_GZIP_RATIO = 100
RATIO_FREE_BYTES = 16 * 2**20
_BLOCK = 4 * 2**20


def _inflate(raw: bytes, path: Path, limit: int | None, flag: str | None = None) -> bytes:
    """Every gzip member of ``raw`` inflated, refused as soon as it passes the size or the ratio limit (``flag``:
    the caller's option that sets the limit, which the refusal names; None: a reader without one)."""
    cap = MAX_CORPUS_BYTES if limit is None else int(limit)
    out = bytearray()
    position = 0  # compressed bytes handed to the inflater so far
    while position < len(raw):
        if raw[position : position + 2] != b"\x1f\x8b" and not raw[position:].strip(b"\x00"):
            break  # zero padding after the last member, as gzip itself allows
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = b""
        while not inflater.eof:
            if not pending:
                if position >= len(raw):
                    out += inflater.flush()
                    if not inflater.eof:
                        raise EOFError("the file ends inside a gzip member")
                    break
                pending = raw[position : position + _BLOCK]
                position += len(pending)
            out += inflater.decompress(pending, _BLOCK)
            pending = inflater.unconsumed_tail
            # the bytes after a member's end (``unused_data``) are the next members': not read yet
            read = position - len(pending) - len(inflater.unused_data)
            _check_inflated(len(out), read, path, cap, limit is None, flag)
        position -= len(inflater.unused_data)
    return bytes(out)


def _check_inflated(size: int, read: int, path: Path, cap: int, ratio: bool, flag: str | None) -> None:
    plain = "if the file is genuine, decompress it and give the plain file"  # a reader with no option for the limit
    if size > cap:
        raise InputError(
            f"{path} inflates to more than {cap:,} bytes (the {flag or 'compressed file size'} limit)",
            f"if the file is genuine, raise the limit, e.g. {flag} 8589934592, or decompress it first"
            if flag
            else plain,
        )
    if ratio and size > RATIO_FREE_BYTES and size > MAX_GZIP_RATIO * max(read, 1):
        raise InputError(
            f"{path} inflates more than {MAX_GZIP_RATIO} times its compressed size "
            f"({read:,} bytes gave {size:,}): refused as a likely gzip bomb",
            f"if the file is genuine, pass {flag} N (the size allowed; it lifts this check)" if flag else plain,
        )


def _stdin_format(raw: bytes) -> str:
    """The suffix of standard input's format, which has no name to say it: Parquet by its magic bytes, JSON Lines
    by a first object, else "" (a delimited table, or a JSON array ``refuse_other_formats`` names)."""
    if raw.startswith(b"PAR1"):
        return ".parquet"
    return ".jsonl" if raw.lstrip()[:1] == b"{" else ""


def unwrap_gzip(raw: bytes, path: Path, max_bytes: int | None = None, flag: str | None = None) -> tuple[str, bytes]:
    """The suffix that says the format (standard input's: ``_stdin_format``), and the bytes to parse: ``x.csv.gz`` is
    read as ``x.csv``.

    Inflated with the limits above (``max_bytes``: ``--max-corpus-bytes``; None for the defaults); ``flag``: the
    option a refusal names to lift them (``featx extract``'s ``--max-corpus-bytes``), None where the command reading
    the file has none (predict, a label file, the lens)."""
    suffix = _stdin_format(raw) if is_stdin(path) else path.suffix.lower()
    if suffix == ".gz" and raw.startswith(b"\x1f\x8b"):
        inner = Path(path.stem).suffix.lower()
        if inner in GZIP_SUFFIXES:
            try:
                return inner, _inflate(raw, path, max_bytes, flag)
            except (OSError, EOFError, zlib.error) as err:
                raise InputError(
                    f"{path} is not a readable gzip file ({err})", "check the download, or decompress it yourself"
                ) from None
    return suffix, raw


# Byte order marks of the wide Unicode encodings (UTF-32's first: it begins like UTF-16 LE's), and the codec that
# reads each file whole. Spreadsheets save "Unicode text" as UTF-16 with a mark; read as UTF-8 it fails on its first
# byte, read as latin-1 (the usual hint for a bad byte) it gives a NUL between every two characters.
WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
_SAMPLE = 4096


def wide_encoding(raw: bytes) -> str | None:
    """The codec of a UTF-16 or UTF-32 file: by its byte order mark, else by the NUL bytes of mostly-ASCII text
    (UTF-16 LE has them at odd offsets, BE at even ones); None for any other bytes."""
    for mark, codec in WIDE_BOMS:
        if raw.startswith(mark):
            return codec
    sample = raw[: _SAMPLE - _SAMPLE % 4]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    half = len(sample) // 2
    if odd > 0.6 * half and even < 0.1 * half:
        return "utf-16-le"
    if even > 0.6 * half and odd < 0.1 * half:
        return "utf-16-be"
    return None


def _refuse_wide(raw: bytes, path: Path, encoding: str, resave: str | None) -> None:
    """A UTF-16/32 file read in an encoding that is not its own: one line naming the encoding to pass."""
    codec = wide_encoding(raw)
    if codec is None or codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        return
    how = "it starts with its byte order mark" if codec in ("utf-16", "utf-32") else "every other byte is NUL"
    raise InputError(
        f"{path} is {codec.upper()} text ({how}), not {encoding}", resave or f"pass its encoding: --encoding {codec}"
    )


def decode_text(raw: bytes, path: Path, encoding: str, resave: str | None = None) -> str:
    """``raw`` as text in ``encoding`` (a byte order mark dropped); a bad byte is named by line and column,
    a UTF-16 or UTF-32 file read in another encoding is named as such. The hints name ``--encoding``; ``resave``:
    the hint instead, for a file no option of the command can give another encoding (a label file)."""
    try:
        _refuse_wide(raw, path, encoding, resave)
        codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
        return raw.decode(codec).removeprefix("\ufeff")  # a mark kept by utf-16-le and the like: not line 1's text
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"{path}: line {line}, column {column} is not valid {encoding} (byte 0x{raw[err.start]:02x})",
            resave or "re-save the file as UTF-8, or pass its encoding, e.g. --encoding latin-1",
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", "use a Python codec name such as utf-8 or latin-1") from None
