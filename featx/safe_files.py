"""Files featx writes next to the user's outputs, safe in shared directories.

A temporary name (``x.tmp``) opened with ``open(path, "w")`` follows a symbolic link planted there, so
anyone who can write to the directory could make featx overwrite the link's target. Temporary files
are therefore created by ``tempfile.mkstemp`` (``O_CREAT|O_EXCL|O_NOFOLLOW``, a fresh random name, mode
0600) in the destination's own folder and renamed over the destination (``rename`` replaces a link
itself, never its target). Small files read back (``.featx/last.json``, manifests) are opened with
``O_NOFOLLOW``, must be regular files, and are read only up to a size bound.

The CSV files featx writes go through ``featx.io.write_csv`` (formula-safe cells), which writes here.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .errors import InputError, StoreError
from .options import on_command_line, spoken

# Why a write fails, in the user's words: the causes an output folder or disk gives (anything else: its strerror).
WRITE_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EFBIG: "the file is too large for this file system",
}


def write_hint(again: bool = True) -> str:
    """How to get past a failed write, as the caller names the output (``output_hint``): ``-o`` on the command line,
    a writable output path from Python (``again``: ending with running it again)."""
    hint = "free disk space or choose a writable place with -o"
    return output_hint(hint + ", then run the same command again" if again else hint)


# What a hint written for the command line says of the output, and how a Python caller reads it.
_PYTHON_WORDS = (
    ("another output with -o", "another output path"),
    ("another path with -o", "another output path"),
    ("another -o path", "another output path"),
    ("another -o", "another output path"),
    ("output location with -o", "output path"),
    ("a new file or folder with -o", "a new file or folder as output"),
    ("a new path with -o", "a new output path"),
    ("a writable place with -o", "a writable output path"),
    ("--overwrite", "overwrite=True"),
    ("run the same command again", "make the same call again"),
)


def output_hint(hint: str) -> str:
    """``hint``, written for the command line (``choose another output with -o``, ``pass --overwrite``, ``run the
    same command again``), as its caller reads it: unchanged on the command line; from Python naming ``output``,
    ``overwrite=True`` and making the same call again."""
    if on_command_line():
        return hint
    for cli, python in _PYTHON_WORDS:
        hint = hint.replace(cli, python)
    return hint


def write_failure(err: OSError, path: object, hint: str | None = None) -> StoreError:
    """The one-line error of a failed write of ``path``: what failed and why (an HDF5 error's errno too);
    ``hint``: how to get past it (None: ``write_hint()``, as the caller names the output)."""
    code = err.errno
    if code is None:  # h5py: "... errno = 28, error message = 'No space left on device' ..."
        found = re.search(r"errno = (\d+)", str(err))
        code = int(found.group(1)) if found else None
    reason = WRITE_REASONS.get(code) if code is not None else None
    if reason is None:
        reason = err.strerror or (os.strerror(code) if code is not None else str(err).split("\n")[0])
    return StoreError(f"cannot write {path}: {reason}", write_hint() if hint is None else hint)


@contextlib.contextmanager
def writing(path: object, hint: str | None = None) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into ``write_failure(err, path)``: one clear line, exit 2."""
    try:
        yield
    except OSError as err:
        raise write_failure(err, path, hint) from None


def check_writable(path: Path, hint: str | None = None) -> None:
    """Before expensive work: create and remove a small file in the folder that will hold ``path`` (its nearest
    existing folder, when it is still to be made). ``os.access`` says "writable" to root even on a read-only
    mount, so this tries it; a full disk shows only when the file's bytes are flushed, so one block is written."""
    folder = existing_folder(path)
    try:
        descriptor, name = tempfile.mkstemp(dir=folder, prefix=".featx-write-test-")
    except OSError as err:
        raise write_failure(err, path, hint) from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as err:
        raise write_failure(err, path, hint) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def existing_folder(path: str | os.PathLike) -> Path:
    """The folder that will hold ``path``: its parent, or that parent's nearest existing folder when it is still to
    be made (what a write there is checked in)."""
    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def sibling(path: Path, name: object) -> Path | None:
    """The file ``name`` beside ``path``, when ``name`` is a bare file name (a results file names its predictions
    file so); None for anything else: a name from someone else's JSON may hold ``/``, ``..`` or markup."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        return None
    return Path(path).with_name(name)


def atomic_write(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    readable: bool = False,
    mode: int | None = None,
    suffix: str = ".tmp",
) -> None:
    """Call ``write`` with a fresh temporary file ``.NAME.XXXXXXXX.tmp`` beside ``path`` (binary; ``readable``: read
    too, for h5py) of ``mode`` (else 0644 less the umask), used through its descriptor only (never reopened or
    chmod-ed by a name someone could swap for a link), renamed into place while still it; removed on failure."""
    path = Path(path)
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        os.fchmod(descriptor, new_file_mode() if mode is None else mode)  # not mkstemp's 0600
        written = os.fstat(descriptor)
        with os.fdopen(descriptor, "w+b" if readable else "wb") as handle:
            write(handle)
        if not os.path.samestat(os.lstat(tmp), written):
            raise StoreError(f"featx's temporary file {tmp} was replaced by another while featx wrote it",
                             "someone else writes in this folder: choose a folder only you can write to")  # fmt: skip
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` through a fresh temporary file in its folder, then rename it into place."""
    atomic_write(path, lambda handle: handle.write(text.encode(encoding)))


def new_file_mode() -> int:
    """0644 less the umask, a plain new file's mode: featx gives it to the files ``mkstemp`` makes (0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o644 & ~mask


LINK_HINT = "remove the link (someone may have planted it), or choose another output folder"
TEMPORARY_NAME = "..XXXXXXXX"  # atomic_write's temporary's name is the file's, these bytes and its suffix longer


def real_folder(folder: Path, below: Path, make: bool = True, hint: str = LINK_HINT) -> Path:
    """Make ``folder`` and each missing folder between it and ``below`` (an ancestor, the user's own choice, not
    checked), one at a time, never through a symbolic link: every one of them that is a link, or not a folder,
    is refused (a ``StoreError`` naming it), so that nothing featx writes there lands in a link's target.
    ``make=False``: only check those that exist (before any work), making none."""
    folder, below = Path(folder), Path(below)
    current = below
    for part in folder.relative_to(below).parts:
        current = current / part
        try:
            if make:
                os.mkdir(current)
        except FileExistsError:
            pass  # a folder made before (checked below), or what is there instead
        except OSError as err:
            raise write_failure(err, current) from None
        try:
            info = os.lstat(current)
        except FileNotFoundError as err:
            if make:  # removed as it was made
                raise write_failure(err, current) from None
            break  # to be made by the run
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(f"{current} is a symbolic link; featx refuses to write through it", hint)
        if not stat.S_ISDIR(info.st_mode):
            raise StoreError(f"{current} is not a folder", "move it away, or choose another output folder")
    return folder


class NotARegularFile(OSError):
    """The path is a link, a device, a FIFO or a directory, or larger than allowed."""


# Half of a surrogate pair: JSON's grammar allows one alone as an escape (``"\\ud800"``), Unicode does not, and a string
# holding it can be neither written as UTF-8 (a CSV, a page, the terminal), nor held by pandas, nor drawn. A whole
# pair (``"\\ud83d\\ude00"``) is one character; a raw half comes from bytes decoded with ``surrogateescape`` (HDF5).
_PAIR_OR_HALF = re.compile(r"\\u[dD][89abAB]..\\u[dD][c-fC-F]..|\\u[dD][89a-fA-F]..")  # "\\u" + 4 hex digits in JSON
_SURROGATE = re.compile("[\ud800-\udfff]")


NESTED = "nested too deeply to read"  # the message of loads_json's error for json's RecursionError


def loads_json(text: str | bytes, **options: Any) -> Any:
    """``json.loads`` of untrusted text (``options``: its keywords, ``object_pairs_hook``...): a document nested too
    deeply for the parser (``[[[[...``, a few hundred kilobytes are enough), or holding a string with half of a
    surrogate pair (``"\\ud800"``: no text), is a ``json.JSONDecodeError``, the ``ValueError`` every reader of a
    file already turns into its message, not an error deeper in the run that ends the command in a traceback."""
    doc = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
    try:
        value = json.loads(text, **options)  # anything but text: json's TypeError, as before
    except RecursionError:
        raise json.JSONDecodeError(NESTED, doc, 0) from None
    if isinstance(doc, str) and _maybe_half(doc) and _holds_surrogate(value):
        half = next((found for found in _PAIR_OR_HALF.finditer(doc) if len(found.group()) == 6), None)
        half = half or _SURROGATE.search(doc)  # an escape may be text too ("\\\\ud800" is a backslash, "ud800")
        shown = half.group().encode("unicode_escape").decode("ascii").replace("\\\\", "\\") if half else "\\udXXX"
        message = f"a string holds {shown}, half of a surrogate pair, which is no text"
        raise json.JSONDecodeError(message, doc, half.start() if half else 0)
    return value


def _maybe_half(doc: str) -> bool:
    """Whether ``doc`` may hold half of a surrogate pair: an escape of one (or of a whole pair), or a raw one; in
    C for an ordinary document (a JSON Lines corpus is read a record at a time)."""
    return "\\ud" in doc or "\\uD" in doc or (not doc.isascii() and _SURROGATE.search(doc) is not None)


def is_text(value: object) -> bool:
    """Whether ``value`` is a string UTF-8 can hold: none of its characters is half of a surrogate pair (what
    h5py gives for an attribute's bytes that are not UTF-8)."""
    return isinstance(value, str) and _SURROGATE.search(value) is None


def _holds_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a string (a key too) with half of a surrogate pair; without recursion, as a
    document nested as deeply as the parser allows would overflow it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def read_small_text(path: Path, max_bytes: int, encoding: str = "utf-8") -> str:
    """The text of a regular file of at most ``max_bytes``; never follows a link, never blocks on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == getattr(os, "ELOOP", 40):
            raise NotARegularFile(f"{path} is a symbolic link") from None
        raise
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a folder with an OSError of its own
        os.close(descriptor)
        raise NotARegularFile(f"{path} is not a regular file")
    with os.fdopen(descriptor, "rb") as handle:
        if info.st_size > max_bytes:
            raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
        data = handle.read(info.st_size + 1)  # not max_bytes + 1: a buffer of that size would be allocated
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} is larger than {max_bytes} bytes")
    return data.decode(encoding)


# -- what --overwrite may replace ---------------------------------------------------------------------------
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
BUNDLE_FILES = ("manifest.json", "weights.safetensors")
OVERWRITE_HINT = "--overwrite replaces only what featx itself wrote: choose a new path with -o"


def refuse_unsafe_target(path: str | os.PathLike) -> None:
    """Refuse an output path that no command may write or replace: empty, a filesystem root, the current
    folder or a folder above it."""
    hint = output_hint("name a new file or folder with -o")
    if not str(path).strip() or str(path) == ".":
        raise InputError("the output path is empty (or the current folder)", hint)
    resolved = Path(path).resolve()
    if resolved == Path(resolved.anchor):
        raise InputError(f"the output path {path} is a filesystem root", hint)
    if Path.cwd().resolve().is_relative_to(resolved):
        raise InputError(f"the output path {path} is the current folder or a folder above it", hint)


def refuse_inputs(outputs: Iterable[str | os.PathLike], inputs: Iterable[str | os.PathLike | None]) -> None:
    """Refuse, before anything is written, an output that is one of the files the run reads (the same file,
    through links or another spelling of its path): ``-o`` must never replace an input."""
    sources = [Path(source) for source in inputs if source is not None and os.path.isfile(source)]
    for output in map(Path, outputs):
        for source in sources:
            if same_file(output, source):
                raise InputError(
                    f"{spoken(None, 'output', '-o')} would write {output}, which is an input of this run ({source}): "
                    "not replaced",
                    "choose an output path that names none of the inputs",
                )


def same_file(path: Path, other: Path) -> bool:
    """Whether two existing paths name one file (through links or another spelling); False when either is
    missing or unreadable."""
    try:
        return path.exists() and other.exists() and os.path.samefile(path, other)
    except OSError:
        return False


EXISTING_HINT = "pass --overwrite to replace it, or choose another -o path"


def refuse_existing(paths: Iterable[str | os.PathLike], overwrite: bool, hint: str = EXISTING_HINT) -> None:
    """``--overwrite``'s first rule for every command (``options.overwrite_option``): without it, an output that
    exists already (a file, a folder, a link) is refused with one line, before any work, so that nothing is lost."""
    if overwrite:
        return
    for path in map(Path, paths):
        if os.path.lexists(path):
            raise InputError(f"{path} already exists", output_hint(hint))


def check_overwrite(path: str | os.PathLike, what: str, own: Callable[[Path], bool]) -> None:
    """``--overwrite``'s one rule for every command: ``path`` is safe (``refuse_unsafe_target``) and, if it
    exists, is what featx itself writes there (``own``: ``is_bundle_folder``, ``is_hdf5_file``...), never a
    link, a user's folder or file; refused with one line otherwise, before any work."""
    refuse_unsafe_target(path)
    path = Path(path)
    if not os.path.lexists(path):
        return
    if path.is_symlink():
        raise InputError(f"{path} is a symbolic link, not a {what} featx wrote", output_hint(OVERWRITE_HINT))
    if not own(path):
        kind = "a folder" if path.is_dir() else "a file" if path.is_file() else "not a regular file"
        refused = f"{path} exists and is {kind} that is not a {what} featx wrote: not replaced"
        raise InputError(refused, output_hint(OVERWRITE_HINT))


def refuse_replacing(path: str | os.PathLike, overwrite: bool, what: str, own: Callable[[Path], bool]) -> None:
    """The two rules of an output only featx's own kind may replace, in their order: without ``overwrite`` an
    existing one is refused (``refuse_existing``); with it, only a ``what`` featx wrote is (``check_overwrite``)."""
    refuse_existing([path], overwrite)
    if overwrite:
        check_overwrite(path, what, own)


def is_bundle_folder(path: Path) -> bool:
    """A real folder holding exactly a featx probe's ``manifest.json`` and ``weights.safetensors``."""
    if path.is_symlink() or not path.is_dir() or sorted(os.listdir(path)) != sorted(BUNDLE_FILES):
        return False
    try:
        manifest = json.loads(read_small_text(path / "manifest.json", 8 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == "featx-probe"


def _head(path: Path, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file (None: not one, or unreadable)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return None


def is_hdf5_file(path: Path) -> bool:
    """A regular file that is HDF5 (what featx writes as features files)."""
    return _head(path, len(HDF5_SIGNATURE)) == HDF5_SIGNATURE


def is_predictions_file(path: Path) -> bool:
    """A regular file whose first line names a ``prediction`` column (what ``featx predict`` writes)."""
    head = _head(path, 1 << 16)
    return head is not None and b"prediction" in head.split(b"\n", 1)[0]
