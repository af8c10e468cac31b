"""Where a features file's vectors came from, read back so that ``featx intervene`` can run the same model over
the same rows again: the model folder, the corpus (still there, still the same bytes) and the extraction options
that change a vector (layers, poolings, length, dtype ...). Refused with one line when it cannot be done the same
way: the corpus gone or changed, the model folder gone, a kind of file the in-memory pass does not remake (sentence
pairs, word vectors, prompts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, ModelError
from ..safe_files import loads_json
from ..store import FeatureFile

# The recorded extraction options that change a vector, passed again to the in-memory pass (``embed``'s keywords).
REPLAYED = (
    "layers",
    "poolings",
    "max_length",
    "long",
    "stride",
    "dtype",
    "batch_size",
    "max_tokens",
    "trust_remote_code",
    "random_init",
    "init_seed",
)
NOT_REPLAYED = {  # what the in-memory pass cannot remake: the attribute, and what it is
    "pair_mode": "sentence pairs",
    "template": "prompts (--template)",
    "chat_template": "prompts (--chat-template)",
    "pool_at": "prompts (--pool-at)",
    "contrast": "contrast answers (--contrast)",
    "intervention": "an edited forward pass (--intervene)",
}


@dataclass(frozen=True)
class Provenance:
    """What the features file records of its extraction: the model's folder, name and weights' sha256, its stored
    layers (``n_layers``, embeddings included) and width, whether it is a decoder, and the options replayed."""

    model_folder: Path
    model: str
    model_sha256: str
    n_layers: int
    hidden_size: int
    causal: bool
    options: dict


def _options(features: FeatureFile) -> dict:
    try:
        options = loads_json(features.attrs.get("options") or "{}")
    except ValueError:
        options = None
    if not isinstance(options, dict) or not options:
        raise InputError(
            f"{features.path} does not record its extraction options, so featx cannot run its model the same way",
            "extract it again with this featx, then run featx intervene",
        )
    return options


def _check_kind(features: FeatureFile, options: dict) -> None:
    for name, what in NOT_REPLAYED.items():
        if features.attrs.get(name) or options.get(name):
            raise InputError(
                f"featx intervene runs plain sentence files; {features.path} holds {what}",
                "extract the texts without it, then run featx intervene on that file",
            )
    if features.has_words or options.get("more_corpora"):
        raise InputError(
            f"featx intervene runs plain sentence files; {features.path} holds word vectors",
            "extract the sentences as a plain corpus (one text per row), then run featx intervene",
        )


def _check_corpus(features: FeatureFile) -> None:
    from ..extraction import file_sha256

    recorded = str(features.attrs.get("corpus_path") or "")
    path = Path(recorded)
    if not recorded or not path.is_file():
        raise InputError(
            f"the corpus {recorded or '(unrecorded)'} that {features.path.name} was extracted from is gone",
            "put the corpus back where it was, or extract again from where it is now",
        )
    if file_sha256(path) != features.attrs.get("corpus_sha256"):
        raise InputError(
            f"the corpus {path} changed since {features.path.name} was extracted from it (its sha256 differs)",
            "restore the corpus, or extract again from the corpus as it is now",
        )


def _model_folder(features: FeatureFile) -> Path:
    from ..extraction import local_model_folder

    recorded = features.attrs.get("model_path")
    if recorded and Path(str(recorded)).is_dir():
        return Path(str(recorded))
    folder = local_model_folder(str(features.attrs.get("model") or ""))
    if folder is None:
        raise ModelError(
            f"the model {features.attrs.get('model')} of {features.path.name} is not on this machine",
            "download it (or put its folder back at the recorded path), then run featx intervene",
        )
    return folder


def read_provenance(features: FeatureFile) -> Provenance:
    """The file's provenance, every part checked (corpus, model folder, kind of file)."""
    options = _options(features)
    _check_kind(features, options)
    _check_corpus(features)
    if "init_seed" not in options and "seed" in options:  # files record a renamed option under its 0.2.0 name
        options = {**options, "init_seed": options["seed"]}
    replayed = {name: options[name] for name in REPLAYED if options.get(name) is not None}
    return Provenance(
        model_folder=_model_folder(features),
        model=str(features.attrs.get("model") or ""),
        model_sha256=str(features.attrs.get("model_sha256") or ""),
        n_layers=int(features.attrs.get("n_model_layers") or len(features.layers)),
        hidden_size=int(features.hidden_size),
        causal=bool(features.attrs.get("causal")),
        options=replayed,
    )


def embed_options(provenance: Provenance, device: str, progress: bool = False) -> dict:
    """The in-memory pass's keywords: the recorded options, the model's folder, float32, every stored layer;
    ``progress``: a bar over each pass's rows (``featx intervene`` without ``-q``)."""
    return {
        **provenance.options,
        "model": str(provenance.model_folder),
        "device": device,
        "store_dtype": "float32",
        "progress": progress,
    }


__all__ = ["NOT_REPLAYED", "REPLAYED", "Provenance", "embed_options", "read_provenance"]
