"""``Probe``: a deployed probe, fitted by ``featx.fit`` or loaded from a bundle by ``featx.load``: a head on
one layer spec and pooling of a known model, which predicts from texts (encoding them with the bundle's
extraction settings, only up to its highest layer) or from precomputed features."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..json_fields import shown
from ..selection import LayerSpec
from .features import embedded_matrix


@dataclass
class Probe:
    """A fitted head, what it reads (``spec``, ``pooling``) and how those features were made (``extraction``).

    ``info`` holds the rest of the manifest: label, task, the selection's scores, the features file's
    fingerprint, featx's version and the creation time."""

    head: Any  # a Head, or a StackHead (stack.py)
    spec: LayerSpec
    pooling: str
    extraction: dict
    info: dict = field(default_factory=dict)
    path: Path | None = None  # the bundle it was loaded from or written to
    _encoders: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _model_checked: bool | tuple[str, str] = field(default=False, init=False, repr=False, compare=False)  # given

    @property
    def classes(self) -> list[str] | None:
        """The class names in score order; None for a regression probe."""
        return self.head.classes

    @property
    def task(self) -> str:
        """``classification`` or ``regression``."""
        return "regression" if self.head.classes is None else "classification"

    @property
    def label(self) -> str:
        """The label column the probe was fitted on."""
        return str(self.info.get("label", "label"))

    @property
    def level(self) -> str:
        """``sentence`` (one prediction per text or pair) or ``word`` (one per word of each sentence)."""
        return str(self.info.get("level", "sentence"))

    @property
    def arcs(self) -> str | None:
        """An arc probe's kind: ``relation`` (labels given arcs) or ``head`` (selects heads); else None."""
        arcs = self.info.get("arcs")
        return None if arcs is None else str(arcs)

    @property
    def layers(self) -> list[int]:
        """The layers whose features the probe reads."""
        return list(self.spec.layers)

    def __repr__(self) -> str:
        what = f"{len(self.classes)} classes" if self.classes is not None else "regression"
        what += ", words" if self.level == "word" else (f", arcs ({self.arcs})" if self.level == "arc" else "")
        return (
            f"Probe(label={self.label!r}, {what}, layer={self.spec.name}, pooling={self.pooling!r}, "
            f"classifier={self.head.classifier!r}, model={self.extraction.get('model')!r})"
        )

    def __getstate__(self) -> dict:
        """Pickled (by a user's scikit-learn pipeline, say) without the loaded model: it is loaded again when
        needed, and the model's files are checked again then."""
        state = dict(self.__dict__)
        state["_encoders"], state["_model_checked"] = {}, False
        return state

    # -- precomputed features --------------------------------------------------------------
    def _checked(self, X: Any) -> Any:
        if self.spec.kind == "stack":
            return [_finite(block) for block in self._checked_blocks(X)]
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.head.n_features:
            raise InputError(
                f"the features have shape {X.shape}; this probe reads {self.head.n_features} columns "
                f"(layer {self.spec.name}, pooling {self.pooling})",
                "pass the matrix of the bundle's layer and pooling, one row per text",
            )
        return _finite(X)

    def _checked_blocks(self, blocks: Any) -> list[np.ndarray]:
        widths = [int(width) for width in getattr(self.head, "widths", [])]
        arrays = [np.asarray(block, dtype=np.float32) for block in blocks] if isinstance(blocks, list) else []
        if len(arrays) != len(widths) or any(
            a.ndim != 2 or a.shape[1] != w for a, w in zip(arrays, widths, strict=True)
        ):
            raise InputError(
                f"this stacked probe reads a list of {len(widths)} matrices, one per layer {self.spec.layers}, "
                f"of {widths} columns",
                "pass one matrix per stacked layer (pooling " + self.pooling + ")",
            )
        return arrays

    def predict_features(self, X: Any) -> np.ndarray:
        """Predicted class names (or values) of precomputed feature rows."""
        codes = self.head.predict_codes(self._checked(X))
        if self.classes is None:
            return codes
        return np.asarray(self.classes, dtype=object)[codes]

    def predict_proba_features(self, X: Any) -> np.ndarray:
        """Class probabilities ``(n, k)`` of precomputed feature rows (columns in ``classes`` order)."""
        self._require_proba()
        return self.head.proba(self._checked(X))

    def scores_features(self, X: Any) -> np.ndarray:
        """Class scores (margins for svm) or values of precomputed feature rows."""
        return self.head.scores(self._checked(X))

    def _require_proba(self) -> None:
        if self.classes is None:
            raise InputError("a regression probe predicts values, not probabilities", "use predict")
        if not self.head.has_proba:
            raise InputError(
                f"the {self.head.classifier} head gives margins, not probabilities",
                "use predict, or fit with --classifier logreg or mlp",
            )

    # -- texts -------------------------------------------------------------------------------
    def embed_options(self) -> dict:
        """The options of ``featx.extraction.embed`` that reproduce the stored features: the recorded model,
        compute and store dtypes, max length and long-input policy, only the layers and pooling read. A bundle
        never turns on ``trust_remote_code`` (its ``option_trust_remote_code`` is a record only): the caller
        passes ``trust_remote_code=True`` to ``predict``/``features`` for a model with its own code."""
        x = self.extraction
        options = {
            "model": x.get("model_path") or x.get("model"),
            "layers": ",".join(map(str, sorted(set(self.spec.layers)))),
            "poolings": self.pooling,
            "max_length": x.get("max_length"),
            "dtype": x.get("compute_dtype") or x.get("option_dtype") or "auto",
            "store_dtype": x.get("store_dtype") or "float32",
            # never from the bundle: remote code runs only when the caller passes trust_remote_code=True
            "trust_remote_code": False,
            "progress": False,
        }
        if x.get("long_inputs"):
            options["long"] = x["long_inputs"]
        if x.get("long_inputs") == "window" and x.get("stride") is not None:
            options["stride"] = x["stride"]
        if x.get("pair_mode"):
            options["pair_mode"] = x["pair_mode"]
        if x.get("random_init"):
            options.update(random_init=True, init_seed=self._random_seed())
        return {**options, **prompt_options(x)}

    def _random_seed(self) -> int:
        """The seed of the random weights a random-init bundle was fitted on; a bundle of an older featx, which did
        not record it, cannot be told from one of another seed (both record the same weights sha256)."""
        seed = self.extraction.get("option_seed")
        if seed is None:
            where = f"bundle {self.path}" if self.path is not None else "this probe"
            raise InputError(
                f"{where} was fitted on features of randomly initialised weights (--random-init) and does not "
                "record their seed, so the same weights cannot be drawn again",
                "fit it again with this featx (featx fit on the same features file), which records the seed",
            )
        return int(seed)

    def _encoder(self, config: Any) -> Any:
        """The loaded model for ``config``, loaded once per probe and settings (as ``embed`` loads it)."""
        from ..extraction import load_model, native_requested

        settings = (config.dtype, config.max_length, config.trust_remote_code, config.random_init, config.init_seed)
        key = (config.model, config.device, *settings)
        if key not in self._encoders:
            self._encoders.clear()
            options = (config.trust_remote_code, config.random_init, config.init_seed, config.max_length)
            native = native_requested(config)
            self._encoders[key] = load_model(config.model, config.device, config.dtype, *options, native=native)
        return self._encoders[key]

    @contextmanager
    def bundle_settings(self, overrides: dict):
        """Refusals of the settings this bundle made (while they are checked and the model loads) said as its
        extraction fields (``as_bundle_field``): the user typed no ``--pool-at``, ``--max-length`` or ``--model``;
        the caller's ``overrides`` as they are."""
        from ..errors import ModelError

        try:
            yield
        except (InputError, ModelError) as error:
            where = f"bundle {self.path}" if self.path is not None else "this probe"
            raise as_bundle_field(error, self.extraction, where, overrides) from None

    def _check_encoder(self, actual: str | None) -> None:
        """Refuse features from a model other than the bundle's (its weights' sha256, as extract computed it)."""
        from ..errors import ModelError

        expected = self.extraction.get("model_sha256")
        if expected and actual != expected:
            raise ModelError(
                f"the model {self.extraction.get('model')} loaded for this probe is not the one it was fitted on "
                f"(weights sha256 {str(actual)[:12]}..., the bundle records {str(expected)[:12]}...)",
                "restore the original model files, or extract and fit again with this model",
            )

    def _options(self, overrides: dict) -> dict:
        """``embed_options`` with ``overrides``; the bundle's model folder, checked once, unless overridden by a
        ``model`` (a folder or id, resolved as extract resolves it), itself checked once to be the bundle's model."""
        from . import model_ref as ref

        options = {**self.embed_options(), **overrides}
        if overrides.get("model") is not None:
            given, checked = str(overrides["model"]), self._model_checked
            if not (isinstance(checked, tuple) and checked[0] == given):  # another model: refused before any text
                checked = self._model_checked = (given, str(ref.given_model(self.extraction, given)))
            options["model"] = checked[1]  # the folder checked, never the name resolved again by the loader
            return options
        folder = ref.model_folder(self.extraction)
        if folder is not None and self._model_checked is not True:
            ref.check_model(self.extraction, folder)
            self._model_checked = True
        if folder is None:
            ref.refuse_a_moved_model(self.extraction)
        if folder is not None:
            options["model"] = str(folder)
        elif ref.from_hub_or_default(self.extraction):  # by its name here, never the other machine's folder
            options["model"] = ref.loader_name(self.extraction)
        return options

    def features(self, texts: Any, text_pairs: Any = None, truncated: list | None = None, **overrides: Any) -> Any:
        """The feature matrix of ``texts`` (and their pairs), computed as ``featx extract`` stored it: the
        encoder runs only up to the highest layer read. ``overrides``: ``embed`` options (device, batch_size).
        ``truncated``: a list that gets, per text, whether it was cut at the bundle's maximum length (as extract
        counts them; a word probe's sentences never are). A word probe: ``texts`` are sentences (lists of words,
        or strings split on whitespace), and the matrix has a row per word of every sentence in turn."""
        from ..extraction import as_texts, chat_template_of, embed_config, encode

        if self.level in ("word", "arc"):
            return self.word_features(texts, **overrides)[0]
        if self.extraction.get("pair_mode") and text_pairs is None:
            texts, text_pairs = _split_pairs(texts)
        text_list = as_texts(texts, "texts")
        pairs = as_texts(text_pairs, "text_pairs") if text_pairs is not None else None
        with self.bundle_settings(overrides):
            options = self._options(overrides)
            if pairs is None:
                options.pop("pair_mode", None)
            config = embed_config(text_list, pairs, **options)
            encoder = self._encoder(config)
            if config.chat_template:  # a recorded chat template needs one in this model's tokenizer
                chat_template_of(encoder.tokenizer, config.model)
        embeddings = encode(encoder, config, text_list, pairs)
        self._check_encoder(embeddings.model.get("model_sha256"))
        if truncated is not None:
            truncated.extend(embeddings.truncated.tolist())
        mode = self.extraction.get("pair_mode")
        contrast = bool(self.extraction.get("option_contrast"))
        return embedded_matrix(embeddings, self.spec.layers, self.spec.kind, self.pooling, mode, contrast)

    def word_features(self, sentences: Any, **overrides: Any) -> tuple[np.ndarray, np.ndarray]:
        """A word probe's ``(words, width)`` matrix of ``sentences`` (lists of words, or strings split on
        whitespace), every word of every sentence in turn, and the word offsets (sentence ``s`` owns rows
        ``offsets[s]:offsets[s+1]``): the vectors ``featx extract`` stores for the same words."""
        from ..extraction import as_sentences, encode_words, word_config

        if self.level not in ("word", "arc"):
            raise InputError("this probe reads sentences, not words", "use features(texts)")
        words = as_sentences(sentences)
        with self.bundle_settings(overrides):
            options = self._options(overrides)
            options.pop("poolings", None)
            options.pop("pair_mode", None)
            config = word_config(**options, poolings="mean", word_pooling=self.pooling)
            encoder = self._encoder(config)
        vectors = encode_words(encoder, config, words)
        self._check_encoder(vectors.model.get("model_sha256"))
        return vectors.array(self.spec.layers[0], self.pooling), vectors.word_offsets

    def _per_sentence(self, values: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
        return [values[int(offsets[s]) : int(offsets[s + 1])] for s in range(len(offsets) - 1)]

    def predict(self, texts: Any, text_pairs: Any = None, heads: Any = None, **overrides: Any) -> Any:
        """Predicted class names (or values) of ``texts``; a word probe: a list with each sentence's array of
        its words' classes; an arc probe: each sentence's heads, or the relations of the arcs of ``heads``
        (``arc_probe.predict_arcs``)."""
        if self.level == "arc":
            from .arc_probe import predict_arcs

            return predict_arcs(self, texts, heads, **overrides)
        if self.level == "word":
            X, offsets = self.word_features(texts, **overrides)
            return self._per_sentence(self.predict_features(X), offsets)
        return self.predict_features(self.features(texts, text_pairs, **overrides))

    def predict_proba(self, texts: Any, text_pairs: Any = None, heads: Any = None, **overrides: Any) -> Any:
        """Class probabilities of ``texts`` (columns in ``classes`` order); a word probe: a list with each
        sentence's ``(words, classes)`` array; a relation labeller: of the arcs of ``heads`` (NaN: a root's word)."""
        self._require_proba()
        if self.level == "arc":
            from .arc_probe import predict_arcs

            return predict_arcs(self, texts, heads, proba=True, **overrides)
        if self.level == "word":
            X, offsets = self.word_features(texts, **overrides)
            return self._per_sentence(self.predict_proba_features(X), offsets)
        return self.predict_proba_features(self.features(texts, text_pairs, **overrides))


# The embed options a bundle's extraction fields set, by the flag featx extract's checks name them with: a refusal of
# one of them, when the caller did not pass that option, is said as the bundle's field (the user typed no such flag).
FLAG_FIELDS = {
    "--model": ("model_path", "model"),
    "--dtype": ("compute_dtype", "option_dtype"),
    "--max-length": ("max_length",),
    "--long": ("long_inputs",),
    "--stride": ("stride",),
    "--pair-mode": ("pair_mode",),
    "--template": ("option_template",),
    "--chat-template": ("option_chat_template",),
    "--system": ("option_system",),
    "--pool-at": ("option_pool_at",),
    "--contrast": ("option_contrast",),
}


def as_bundle_field(error: Any, extraction: dict, where: str, overrides: dict) -> Any:
    """``error`` of the embed settings a bundle made, said as the bundle's extraction field when it names a flag
    the bundle set (and ``overrides``, the caller's own options, did not); any other error as it is."""
    from .checks import REFIT_HINT

    flag = re.match(r"--[a-z][a-z-]*", error.message)
    if flag is None or flag.group() not in FLAG_FIELDS or flag.group()[2:].replace("-", "_") in overrides:
        return error
    field = next((name for name in FLAG_FIELDS[flag.group()] if extraction.get(name) not in (None, "")), None)
    if field is None:
        return error
    message = f"{where}: its extraction field '{field}' ({shown(extraction[field])}) cannot be used: {error.message}"
    return type(error)(message, REFIT_HINT)  # an InputError or a ModelError, as it was


def prompt_options(extraction: dict) -> dict:
    """The ``embed`` options that render each text into the prompt the features file stored (its template, with
    the text field spelled ``{text}``, chat template, system message, ``--pool-at`` and ``--contrast``)."""
    from ..extraction import TEXT_FIELD, with_text_field

    options: dict[str, Any] = {}
    template = extraction.get("option_template")
    if template:
        options["template"] = with_text_field(str(template), str(extraction.get("text_col") or TEXT_FIELD))
    if extraction.get("option_chat_template"):
        options["chat_template"] = True
        options["system"] = extraction.get("option_system")
    for name in ("pool_at", "contrast"):
        if extraction.get(f"option_{name}"):
            options[name] = extraction[f"option_{name}"]
    return options


def _finite(X: np.ndarray) -> np.ndarray:
    """``X`` when every value is finite; else an ``InputError`` naming the first bad rows (a probe's answer on
    NaN or infinite features means nothing)."""
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
    if len(bad):
        shown = ", ".join(str(int(row)) for row in bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise InputError(
            f"{len(bad)} of {len(X)} feature rows hold NaN or infinite values (rows {shown})",
            "pass finite features: the rows of a features file featx wrote, or of probe.features(texts)",
        )
    return X


def _split_pairs(items: Any) -> tuple[list, list]:
    """The first and second texts of a pair probe's input given as ``(text, text_pair)`` items (a list of
    tuples, or a two-column array), as sentence-transformers' cross-encoders take them."""
    if isinstance(items, np.ndarray) and items.ndim == 2 and items.shape[1] == 2:
        return list(items[:, 0]), list(items[:, 1])
    if (
        isinstance(items, (list, tuple))
        and items
        and all(isinstance(item, (list, tuple)) and len(item) == 2 for item in items)
    ):
        return [item[0] for item in items], [item[1] for item in items]
    raise InputError(
        "this probe was fitted on sentence pairs, and got no second texts",
        "pass text_pairs= (the second texts), or (text, text_pair) tuples: predict([('a', 'b'), ...])",
    )


__all__ = ["Probe"]
