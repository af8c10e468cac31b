"""Which model a bundle's features came from, and whether the model on disk is still that model: the weights'
sha256 (as ``featx extract`` records it, ``model_sha256``) and a sha256 of the tokenizer's files (recorded by
``featx extract`` as ``tokenizer_sha256`` since it does; for older files hashed from the model folder at fit), and
a sha256 of its ``config.json`` and chat template files (``config_sha256``, likewise)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError
from ..extraction import CONFIG_FILES, config_sha256, local_model_folder, tokenizer_sha256, weights_sha256
from ..safe_files import loads_json

SAFETENSORS_INDEX = "model.safetensors.index.json"


def weight_files(folder: Path) -> list[Path]:
    """The weight files featx hashes: the shards a safetensors index names, else every ``*.safetensors``."""
    index = folder / SAFETENSORS_INDEX
    if not index.is_file():
        return sorted(folder.glob("*.safetensors"))
    try:
        names = sorted(set(loads_json(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise ModelError(f"{index} is not a readable safetensors index", "re-save the model folder") from None
    return [folder / name for name in names]


def model_folder(extraction: dict) -> Path | None:
    """The local folder of the bundle's model: its recorded path if it is still there, else what its name
    resolves to (the default model's folder, a local folder), else None."""
    recorded = extraction.get("model_path")
    if recorded and _is_folder(Path(str(recorded))):
        return Path(str(recorded))
    try:
        return local_model_folder(extraction.get("model"))
    except OSError:  # a name no file system takes (too long): no local folder, the loader says what it is
        return None


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system
        return False


def check_model(extraction: dict, folder: Path) -> None:
    """Refuse a model folder whose weights or tokenizer differ from the ones the bundle was fitted on."""
    expected = extraction.get("model_sha256")
    if expected and not str(expected).startswith("random-init:"):
        files = weight_files(folder)
        actual = weights_sha256(files) if files else None
        if actual != expected:
            raise ModelError(
                f"the model at {folder} no longer matches the bundle: its weights' sha256 is "
                f"{(actual or 'missing')[:12]}..., the bundle was fitted on {str(expected)[:12]}...",
                "restore the original model files, or extract and fit again with this model",
            )
    expected_tokenizer = extraction.get("tokenizer_sha256")
    if expected_tokenizer and tokenizer_sha256(folder) != expected_tokenizer:
        raise ModelError(
            f"the tokenizer files in {folder} no longer match the bundle (their sha256 differs)",
            "restore the original tokenizer files, or extract and fit again with this model",
        )
    expected_config = extraction.get("config_sha256")
    if expected_config and config_sha256(folder) != expected_config:
        raise ModelError(
            f"the model's settings in {folder} ({', '.join(CONFIG_FILES)}) no longer match the bundle "
            "(their sha256 differs): an edited config changes every feature",
            "restore the original config.json (and chat template), or extract and fit again with this model",
        )


__all__ = ["check_model", "model_folder", "weight_files"]
