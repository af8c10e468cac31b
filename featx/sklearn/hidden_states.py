"""``HiddenStates``: a scikit-learn transformer from texts to one layer's pooled hidden states.

``make_pipeline(HiddenStates(layer=3), LogisticRegression())`` works with ``cross_val_score`` and ``GridSearchCV``
(``param_grid={"hiddenstates__layer": [1, 2, 3]}``). The features are ``featx.extraction.embed``'s, so bit for bit
what ``featx extract`` stores, and each pass runs the embeddings plus ``layer`` blocks only.

The estimator contract: ``__init__`` only stores its parameters; ``fit`` validates them (scikit-learn's
``_parameter_constraints``), checks the texts and loads the encoder; ``transform`` returns a float32 ``(n, width)``
array. Loaded encoders are kept in a module-level cache keyed by ``(model, dtype, device)``, shared by clones and
refits (a grid search loads its model once), and never part of an estimator's state: ``__getstate__`` drops the
instance's handle, so pickling or cloning an estimator never copies a model.
"""

from __future__ import annotations

import os
import threading
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import InputError
from ..extraction import COMPUTE_DTYPES, DEFAULT_MODEL, STORE_DTYPES
from ..selection import POOLINGS

_ENCODERS: dict[tuple[str, str, str], object] = {}  # (model, dtype, device) -> a featx LoadedModel
_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}  # one forward pass at a time per encoder (hooks are shared)
_CACHE_LOCK = threading.Lock()


def cached_encoder(model: str, dtype: str, device: str):
    """The loaded encoder of ``(model, dtype, device)`` (at its own maximum length), loaded on first use."""
    from ..extraction import load_model

    key = (str(model), str(dtype), str(device))
    with _CACHE_LOCK:
        if key not in _ENCODERS:
            _ENCODERS[key] = load_model(key[0], device=key[2], dtype=key[1], native=True)
            _LOCKS[key] = threading.Lock()
        return _ENCODERS[key], _LOCKS[key]


def clear_cache() -> None:
    """Forget every cached encoder (their memory is freed once no estimator holds one)."""
    with _CACHE_LOCK:
        _ENCODERS.clear()
        _LOCKS.clear()


class HiddenStates(TransformerMixin, BaseEstimator):
    """Texts -> the ``pooling`` of ``layer``'s hidden states of ``model`` (0: embeddings; negative: from the top).

    Parameters are ``featx extract``'s options of the same names. Fitted attributes: ``layer_`` (the layer index,
    resolved), ``n_layers_`` (hidden-state outputs of the model, embeddings included), ``n_features_out_`` (width),
    ``model_sha256_``.
    """

    _parameter_constraints: dict = {
        "model": [str, os.PathLike],
        "layer": [Integral],
        "pooling": [StrOptions(set(POOLINGS))],
        "max_length": [Interval(Integral, 2, None, closed="left"), None],
        "dtype": [StrOptions(set(COMPUTE_DTYPES))],
        "device": [str],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "store_dtype": [StrOptions(set(STORE_DTYPES))],
    }

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        layer: int = -1,
        pooling: str = "mean",
        max_length: int | None = None,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int | None = None,
        store_dtype: str = "float32",
    ):
        self.model = model
        self.layer = layer
        self.pooling = pooling
        self.max_length = max_length
        self.dtype = dtype
        self.device = device
        self.batch_size = batch_size
        self.store_dtype = store_dtype

    def _encoder(self):
        encoder = getattr(self, "_loaded", None)
        if encoder is None:
            encoder = cached_encoder(self.model, self.dtype, self.device)
            self._loaded = encoder
        return encoder

    def fit(self, X, y=None):
        """Validate the parameters and ``X`` (texts), load the encoder (cached) and resolve ``layer``."""
        from ..extraction import as_texts, with_max_length

        self._validate_params()
        as_texts(X, "X")
        loaded, _ = self._encoder()
        with_max_length(loaded, self.max_length)  # a max_length above the model's is refused here
        top = loaded.n_layers - 1
        layer = int(self.layer) + loaded.n_layers if self.layer < 0 else int(self.layer)
        if not 0 <= layer <= top:
            raise InputError(
                f"layer {self.layer} is out of range: {loaded.name} has layers 0..{top}",
                "layer 0 is the embedding output; negative indices count from the top layer",
            )
        if self.pooling == "pooler" and not loaded.has_pooler:
            raise InputError(f"pooling 'pooler' is not available: model {loaded.name} has no pooler head")
        self.layer_ = layer
        self.n_layers_ = loaded.n_layers
        self.n_features_out_ = int(loaded.hidden_size)
        self.model_sha256_ = loaded.weights_sha256
        return self

    def transform(self, X) -> np.ndarray:
        """The ``(n, width)`` float32 features of the texts ``X`` (a list, array, Series or one-column DataFrame)."""
        from ..extraction import as_texts, embed_config, encode, with_max_length

        check_is_fitted(self, "layer_")
        texts = as_texts(X, "X")
        loaded, lock = self._encoder()
        config = embed_config(
            texts,
            None,
            model=str(self.model),
            layers=str(self.layer_),
            poolings=self.pooling,
            max_length=self.max_length,
            dtype=self.dtype,
            device=self.device,
            batch_size=None if self.batch_size is None else int(self.batch_size),
            store_dtype=self.store_dtype,
            progress=False,
        )
        with lock:
            embeddings = encode(with_max_length(loaded, self.max_length), config, texts)
        return embeddings.array(self.layer_, self.pooling)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """``hiddenstates_l{layer}_{pooling}_{i}`` for each of the ``n_features_out_`` dimensions."""
        check_is_fitted(self, "n_features_out_")
        prefix = f"hiddenstates_l{self.layer_}_{self.pooling}_"
        return np.asarray([f"{prefix}{index}" for index in range(self.n_features_out_)], dtype=object)

    def __getstate__(self) -> dict:
        state = super().__getstate__()  # type: ignore[misc]
        state.pop("_loaded", None)  # the encoder stays in the module cache, never in a pickle or a copy
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags

    def _more_tags(self) -> dict:  # scikit-learn before 1.6
        return {"X_types": ["string"], "requires_fit": True}
