"""The sha256 of a model's weight files, remembered between runs by the files' identity.

Hashing the weights is what names a model in every features file (``model_sha256``), but it reads every
byte: 90 MB for the default MiniLM, gigabytes for a large model, on every run. The digest is therefore
kept in a featx-owned cache file (``weights-fingerprints.json`` in ``$FEATX_CACHE_DIR``, else
``$XDG_CACHE_HOME/featx``, else ``~/.cache/featx``), keyed by each file's resolved path, size,
``mtime_ns``, ``ctime_ns``, inode and device: rewriting, replacing or touching a file changes at least
one of them (``ctime`` cannot be set back by a user), and the digest is computed again.

The cache is plain JSON (never pickle), read only from a regular file of bounded size opened without
following links, and written through a fresh temporary file renamed into place (``featx/safe_files.py``);
a link planted at the cache's folder means nothing is written. A cache that cannot be read or does not
have the expected shape is ignored (and replaced on the next write); failing to write it is not an error.
Set ``FEATX_FINGERPRINT_CACHE=0`` to always hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from ...safe_files import NotARegularFile, atomic_write_text, loads_json, read_small_text

CACHE_FILE = "weights-fingerprints.json"
CACHE_VERSION = 1
MAX_ENTRIES = 256  # the most recently added are kept
MAX_CACHE_BYTES = 1 << 20
_HEX64 = re.compile(r"[0-9a-f]{64}")


def cache_dir() -> Path:
    """Where featx keeps its caches (``$FEATX_CACHE_DIR``, ``$XDG_CACHE_HOME/featx`` or ``~/.cache/featx``)."""
    explicit = os.environ.get("FEATX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "featx"


def hash_files(files: list[Path]) -> str:
    """The sha256 of the files' bytes, one after the other, in the order given."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


def identity_key(files: list[Path]) -> str:
    """What identifies these files' bytes without reading them: path, size, times, inode, device of each."""
    parts = []
    for path in files:
        resolved = Path(path).resolve()
        info = os.stat(resolved)
        parts.append([str(resolved), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev])
    return json.dumps(parts, separators=(",", ":"))


def read_cache(path: Path) -> dict[str, str]:
    """The cached digests by identity key; empty when the file is absent, unreadable or not featx's."""
    try:
        data = loads_json(read_small_text(path, MAX_CACHE_BYTES))
    except (OSError, NotARegularFile, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return {
        key: value
        for key, value in data["entries"].items()
        if isinstance(key, str) and isinstance(value, str) and _HEX64.fullmatch(value)
    }


def write_cache(path: Path, entries: dict[str, str]) -> None:
    """Store ``entries`` (the last ``MAX_ENTRIES``); never through a link; failures are ignored."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if folder.is_symlink() or not folder.is_dir():
            return
        kept = dict(list(entries.items())[-MAX_ENTRIES:])
        atomic_write_text(path, json.dumps({"version": CACHE_VERSION, "entries": kept}, indent=0))
    except OSError:
        pass


def weights_sha256(files: list[Path], use_cache: bool | None = None) -> str:
    """The sha256 of the weight files' bytes (in the order given), from the cache when the files are unchanged."""
    if use_cache is None:
        use_cache = os.environ.get("FEATX_FINGERPRINT_CACHE", "1") != "0"
    if not use_cache:
        return hash_files(files)
    try:
        key = identity_key(files)
    except OSError:
        return hash_files(files)
    path = cache_dir() / CACHE_FILE
    entries = read_cache(path)
    if key in entries:
        return entries[key]
    digest = hash_files(files)
    if identity_key(files) == key:  # unchanged while it was read: safe to remember
        entries[key] = digest
        write_cache(path, entries)
    return digest


def weights_sha256_in_background(files: list[Path]) -> Callable[[], str]:
    """Start ``weights_sha256(files)`` in a daemon thread; the returned function waits for the digest.

    File reads and ``hashlib`` release the GIL, so the hash overlaps whatever the caller does meanwhile (the
    model's imports and load). A daemon thread never holds up the exit of an interrupted run.
    """
    outcome: dict = {}

    def work():
        try:
            outcome["digest"] = weights_sha256(files)
        except BaseException as err:  # handed to the waiting caller
            outcome["error"] = err

    thread = threading.Thread(target=work, name="featx-weights-hash", daemon=True)
    thread.start()

    def wait() -> str:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["digest"]

    return wait


# The files that make a tokenizer (whichever of them a model folder has).
TOKENIZER_FILES = (
    "added_tokens.json",
    "merges.txt",
    "sentencepiece.bpe.model",
    "special_tokens_map.json",
    "spiece.model",
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
)


def files_sha256(folder: Path, names: tuple[str, ...]) -> str | None:
    """A sha256 over the names and bytes of the files ``names`` found in ``folder`` (None: it has none of them)."""
    digest, found = hashlib.sha256(), False
    for name in names:
        path = Path(folder) / name
        if path.is_file():
            found = True
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest() if found else None


def tokenizer_sha256(folder: Path) -> str | None:
    """A sha256 over the tokenizer files' names and bytes in ``folder`` (None: it has none of them)."""
    return files_sha256(folder, TOKENIZER_FILES)


# The other files of a model folder that shape its features: the architecture's settings (``config.json``:
# activation, norm epsilon, positions...) and the chat template kept beside the tokenizer. (``generation_config.json``
# is not read: featx runs the base model and never generates.)
CONFIG_FILES = ("config.json", "chat_template.json", "chat_template.jinja")


def config_sha256(folder: Path) -> str | None:
    """A sha256 over the names and bytes of ``CONFIG_FILES`` in ``folder`` (None: it has none of them)."""
    return files_sha256(folder, CONFIG_FILES)
