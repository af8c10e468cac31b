"""Which model a bundle's features came from, and whether the model on disk is still that model: the weights'
sha256 (as ``featx extract`` records it, ``model_sha256``) and a sha256 of the tokenizer's files (recorded by
``featx extract`` as ``tokenizer_sha256`` since it does; for older files hashed from the model folder at fit), and
a sha256 of its ``config.json`` and chat template files (``config_sha256``, likewise)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, ModelError
from ..extraction import (
    CONFIG_FILES,
    DEFAULT_MODEL,
    config_sha256,
    local_model_folder,
    tokenizer_sha256,
    weights_sha256,
)
from ..extraction import model_folder as resolve_model
from ..json_fields import shown
from ..options import Placeholder, keywords_of, spoken_value
from ..safe_files import loads_json

SAFETENSORS_INDEX = "model.safetensors.index.json"
DEFAULT_RECORDED = "default:all-MiniLM-L6-v2"  # the default model's name as extract records it


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
        folder = local_model_folder(loader_name(extraction))
    except OSError:  # a name no file system takes (too long): no local folder, the loader says what it is
        return None
    if folder is None and from_hub_or_default(extraction):  # a hub id: its snapshot in this machine's cache
        try:
            return resolve_model(str(extraction.get("model")))[1]
        except ModelError:  # not in the cache: the loader says so, by the hub id
            return None
    return folder


def loader_name(extraction: dict) -> str | None:
    """The name to load the bundle's model by where its recorded folder is gone: the default model's (its
    recorded ``default:...`` name is no ``--model``), or the recorded name (a hub id, a folder as typed)."""
    name = extraction.get("model")
    return DEFAULT_MODEL if name == DEFAULT_RECORDED else name


def from_hub_or_default(extraction: dict) -> bool:
    """The bundle's model is the default model or a hub id whose recorded folder was a snapshot of the Hugging
    Face cache (``.../models--org--name/snapshots/REV``), found again by its name on another machine or cache;
    any other recorded folder was a local model folder, which only its path names."""
    name, recorded = extraction.get("model"), extraction.get("model_path")
    if name == DEFAULT_RECORDED:
        return True
    if not isinstance(name, str) or not isinstance(recorded, str):
        return False
    snapshot = Path(recorded)
    return snapshot.parent.name == "snapshots" and snapshot.parent.parent.name == "models--" + name.replace("/", "--")


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system
        return False


def check_model(extraction: dict, folder: Path, given: str | None = None) -> None:
    """Refuse a model folder whose weights, tokenizer or config differ from the ones the bundle was fitted on: the
    bundle's own (a ``ModelError``: it changed), or one the caller ``given`` (``--model``, ``model=``: an
    ``InputError`` naming it, as it is the caller's choice)."""
    expected = extraction.get("model_sha256")
    if expected and not str(expected).startswith("random-init:"):
        files = weight_files(folder)
        actual = weights_sha256(files) if files else None
        if actual != expected:
            shown_actual, shown_expected = (actual or "missing")[:12], str(expected)[:12]
            differs = f"its weights' sha256 is {shown_actual}..., the bundle was fitted on {shown_expected}..."
            if given is not None:
                raise _not_the_bundles(extraction, given, differs)
            raise ModelError(
                f"the model at {folder} no longer matches the bundle: {differs}",
                "restore the original model files, or extract and fit again with this model",
            )
    for name, digest, what in (
        ("tokenizer_sha256", tokenizer_sha256, "tokenizer"),
        ("config_sha256", config_sha256, "config"),
    ):
        if extraction.get(name) and digest(folder) != extraction[name]:
            if given is not None:
                raise _not_the_bundles(extraction, given, f"its {what} files' sha256 differs from the bundle's")
            raise _changed(folder, what)


def _changed(folder: Path, what: str) -> ModelError:
    """The bundle's own model folder, whose tokenizer or config files changed since the probe was fitted."""
    if what == "tokenizer":
        return ModelError(
            f"the tokenizer files in {folder} no longer match the bundle (their sha256 differs)",
            "restore the original tokenizer files, or extract and fit again with this model",
        )
    return ModelError(
        f"the model's settings in {folder} ({', '.join(CONFIG_FILES)}) no longer match the bundle "
        "(their sha256 differs): an edited config changes every feature",
        "restore the original config.json (and chat template), or extract and fit again with this model",
    )


def _not_the_bundles(extraction: dict, given: str, differs: str) -> InputError:
    """A model the caller gave that is not the bundle's: said as the option they gave, before any forward pass."""
    named = _said("model", given)
    return InputError(
        f"{named} is not the model the bundle was fitted on ({shown(extraction.get('model'))}): {differs}",
        "give the folder (or Hugging Face id) of the bundle's own model, or extract and fit again with this one",
    )


def _said(name: str, value: object) -> str:
    """``--model X`` on the command line, ``model='X'`` from Python (``probe.predict(texts, model=...)`` too, which
    is no entry point of its own)."""
    with keywords_of(None):
        return spoken_value(None, name, value, f"--{name}")


def given_model(extraction: dict, model: str) -> Path:
    """The folder of a model the caller gave for a bundle (``--model``, ``probe.predict(texts, model=...)``),
    resolved as ``featx extract`` resolves ``--model`` (a folder, ``default``, a Hugging Face id in this machine's
    cache), checked to be the bundle's model (weights', tokenizer's and config's sha256) before any text is encoded:
    another model is an ``InputError``."""
    folder = resolve_model(model)[1]
    check_model(extraction, folder, given=model)
    return folder


def _absolute(path: object) -> bool:
    return isinstance(path, str) and Path(path).is_absolute()


def refuse_a_moved_model(extraction: dict) -> None:
    """A bundle fitted on a local model folder that is gone (moved, deleted): one clear error saying where it
    was, rather than the loader's "does not exist" for a path the user never typed."""
    # where it was: the absolute path extract recorded (a folder given as ./bert too), else an absolute name
    where = next((str(p) for p in (extraction.get("model_path"), extraction.get("model")) if _absolute(p)), None)
    if from_hub_or_default(extraction) or where is None:
        return  # a hub id (or the default model): the loader finds it in the cache, downloads it or says why not
    raise ModelError(
        f"the bundle's model folder {where} (where it was when the probe was fitted) is not there any more",
        f"put the model folder back at that path, or pass its new place: "
        f"{_said('model', Placeholder('FOLDER'))} (checked against the bundle's sha256)",
    )


__all__ = [
    "check_model",
    "from_hub_or_default",
    "given_model",
    "loader_name",
    "model_folder",
    "refuse_a_moved_model",
    "weight_files",
]
