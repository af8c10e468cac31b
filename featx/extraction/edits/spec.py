"""``--intervene SPEC``: what an edit inside the forward pass is, parsed and checked without torch or the model.

One edit is ``KIND:ARGS@L``; several, comma-separated, apply in the order given (each at its own layer):

``erase:ERASERS[:POOLING]@L``        a LEACE or INLP eraser of ``featx erase`` (its ``.erasers.npz``)
``project:BUNDLE@L``                 remove the span of a ``featx fit`` bundle's class directions at layer L
``mean:BUNDLE@L``                    set that span to the bundle's training mean (mean ablation)
``steer:BUNDLE:CLASS:ALPHA@L``       add ALPHA times the unit direction toward CLASS (the bundle's head)
``steer:FEATURES.h5:LABEL:CLASS:ALPHA@L``  the same along the class-mean difference of a features file
``random:RANK@L``                    remove RANK random orthonormal directions (``--intervene-seed``), uncentred
``random:ERASERS[:POOLING]@L``       the control of ``erase:ERASERS@L``: as many random directions as that eraser
                                     removes, centred on its mean (the mean of the rows featx erase fitted it on)

L is a stored layer's number (0 the embeddings' output, N the top: the last block's, after any final norm).
``@L:SITE`` (``SITE`` one of ``attn_out``, ``ffn``, ``pre_ln``: the sites of ``featx extract --site``) edits that
activation inside the block that makes layer L (L from 1), as ``--site SITE`` stores it at layer L. What the edit
does to which tensor is in ``hooks.py`` (``inner.py`` for sites) and docs/interventions.md. Model-dependent
checks (width, layers, the model the source was made for) happen once the model is loaded, before any forward
pass (``sources.py``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path

from ...checks import parse_whole
from ...errors import InputError

KINDS = ("erase", "project", "mean", "steer", "random")
FORMS = {
    "erase": "erase:ERASERS.erasers.npz@L",
    "project": "project:BUNDLE.featx@L",
    "mean": "mean:BUNDLE.featx@L",
    "steer": "steer:BUNDLE.featx:CLASS:ALPHA@L or steer:FEATURES.h5:LABEL:CLASS:ALPHA@L",
    "random": "random:RANK@L or random:ERASERS.erasers.npz@L",
}
MAX_LAYER = 4096
SITES = ("attn_out", "ffn", "pre_ln")  # featx.extraction.forward.sites' named sites inside a layer
FEATURES_SUFFIXES = (".h5", ".hdf5")


@dataclass(frozen=True)
class Intervention:
    """One parsed edit. ``source``: the erasers file, bundle folder or features file (None for ``random``);
    ``target``: the steering class (``steer``) or the erasers' pooling (``erase``, when given); ``alpha``: the
    steering amount; ``rank``: the random directions removed; ``seed``: their seed; ``label``: the label column
    of a features file steered along (its class-mean difference)."""

    kind: str
    layer: int
    source: Path | None = None
    target: str | None = None
    alpha: float | None = None
    rank: int | None = None
    seed: int | None = None
    label: str | None = None  # steer from a features file: the label column whose class means give the direction
    site: str | None = None  # an activation inside layer L (``SITES``); None: the layer's output (hidden state)

    @property
    def where(self) -> str:
        """``layer L``, or ``layer L's SITE``: where the edit applies, in words."""
        return f"layer {self.layer}" + (f"'s {self.site}" if self.site is not None else "")

    def source_sha256(self) -> str | None:
        """The sha256 of the source: the erasers file's bytes, a bundle's manifest (which records its weights'
        sha256, checked whenever the bundle is loaded), or a features file's fingerprint (its corpus, model and
        options: what its features and labels depend on; the file itself may be large)."""
        if self.source is None:
            return None
        if self.label is not None:
            from ... import store

            with store.open_features(self.source) as features:
                return hashlib.sha256(str(features.fingerprint).encode("utf-8")).hexdigest()
        files = self.kind in ("erase", "random") or self.label is not None  # a bundle: its manifest
        path = self.source if files else self.source / "manifest.json"
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def record(self) -> dict:
        """What a features file records of the edit (its attributes and fingerprint)."""
        return {
            "kind": self.kind,
            "layer": self.layer,
            "source": str(self.source.resolve()) if self.source is not None else None,
            "source_sha256": self.source_sha256(),
            "target": self.target,
            "alpha": self.alpha,
            "rank": self.rank,
            "seed": self.seed,
            **({"label": self.label} if self.label is not None else {}),
            **({"site": self.site} if self.site is not None else {}),  # a layer edit's record is unchanged
        }


def _malformed(text: str, kind: str | None = None, why: str = "") -> InputError:
    forms = FORMS[kind] if kind in FORMS else "; ".join(FORMS.values())
    return InputError(f"--intervene '{text}' is not understood{': ' + why if why else ''}", f"write {forms}")


def _layer(text: str, kind: str, spelled: str) -> int:
    layer = parse_whole(spelled.strip())
    if layer is None or layer > MAX_LAYER:
        raise _malformed(text, kind, f"layer '{spelled.strip()}' is not a layer number (0 the embeddings)")
    return layer


def _source(text: str, kind: str, spelled: str, features: bool = False) -> Path:
    if not spelled.strip():
        raise _malformed(text, kind, "no file given")
    path = Path(spelled.strip())
    erasers = kind in ("erase", "random")
    wanted = "erasers file" if erasers else "features file" if features else "bundle folder"
    exists = path.is_file() if erasers or features else (path / "manifest.json").is_file()
    if not exists:
        raise InputError(
            f"--intervene {kind}: {wanted} {path} does not exist",
            "featx erase writes OUT.erasers.npz beside its features file"
            if erasers
            else "give a features file of featx extract"
            if features
            else "featx fit writes the bundle folder (e.g. model.featx)",
        )
    return path


def _alpha(text: str, spelled: str) -> float:
    try:
        alpha = float(spelled)
    except ValueError:
        raise _malformed(text, "steer", f"alpha '{spelled}' is not a number") from None
    if not math.isfinite(alpha):
        raise InputError(f"--intervene steer: alpha {spelled} is not a finite number", "give a finite alpha, e.g. 4")
    return alpha


def _site(text: str, kind: str, spelled: str, layer: int) -> str:
    site = spelled.strip().lower()
    hint = f"write @L:SITE with SITE one of {', '.join(SITES)} and L from 1, e.g. {kind}:...@2:ffn"
    if site not in SITES:
        raise InputError(f"--intervene '{text}': unknown site '{spelled.strip()}' (sites: {', '.join(SITES)})", hint)
    if layer == 0:
        raise InputError(
            f"--intervene '{text}': site {site} is inside a layer, and layer 0 is the embeddings' output", hint
        )
    return site


def _where(text: str, kind: str, spelled: str) -> tuple[int, str | None]:
    """``L`` or ``L:SITE`` after the ``@``."""
    layer_text, colon, site_text = spelled.partition(":")
    layer = _layer(text, kind, layer_text)
    return layer, _site(text, kind, site_text, layer) if colon else None


def _body(text: str, kind: str, body: str, layer: int, seed: int) -> Intervention:
    """The edit of ``KIND:BODY@L`` (its site set by the caller)."""
    rank = parse_whole(body.strip()) if kind == "random" else None
    if kind == "random" and (rank is not None or not _names_file(body)):
        if rank is None or rank < 1:
            raise _malformed(text, kind, f"rank '{body}' is not a positive whole number (nor an erasers file)")
        return Intervention(kind, layer, rank=rank, seed=int(seed))
    if kind == "steer":
        parts = body.rsplit(":", 2)
        if len(parts) != 3 or not parts[1].strip():
            raise _malformed(text, kind, "it needs a bundle, a class and an alpha")
        alpha = _alpha(text, parts[2])
        source, colon, label = parts[0].rpartition(":")
        if colon and source.lower().endswith(FEATURES_SUFFIXES):  # a class-mean difference from a features file
            path = _source(text, kind, source, features=True)
            return Intervention(kind, layer, path, target=parts[1].strip(), alpha=alpha, label=label.strip())
        return Intervention(kind, layer, _source(text, kind, parts[0]), target=parts[1].strip(), alpha=alpha)
    target = None
    if kind in ("erase", "random") and ":" in body and not Path(body).is_file():
        body, target = body.rsplit(":", 1)
        target = target.strip() or None
    seeded = int(seed) if kind == "random" else None  # the centred control's directions
    return Intervention(kind, layer, _source(text, kind, body), target=target, seed=seeded)


def _names_file(body: str) -> bool:
    """Whether ``random:BODY`` names an erasers file (``random:ERASERS[:POOLING]``) rather than a rank."""
    path = body.strip().rsplit(":", 1)[0] if ":" in body and not Path(body.strip()).is_file() else body.strip()
    return path.lower().endswith(".npz") or Path(path).is_file()


def parse_intervention(text: str, seed: int = 0) -> Intervention:
    """One ``KIND:ARGS@L`` or ``KIND:ARGS@L:SITE`` (see the module docstring); ``seed`` is ``random``'s."""
    kind, colon, rest = str(text).strip().partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS or not colon:
        raise _malformed(text, None, f"the kind must be one of {', '.join(KINDS)}")
    body, at, where = rest.rpartition("@")
    if not at:
        raise _malformed(text, kind, "no @LAYER")
    layer, site = _where(text, kind, where)
    edit = _body(text, kind, body, layer, seed)
    return replace(edit, site=site) if site is not None else edit


def parse_interventions(text: str | None, seed: int = 0) -> tuple[Intervention, ...]:
    """Every edit of a comma-separated ``--intervene`` (none for None or empty); an empty item (``a,,b``, a
    trailing comma) is refused, not dropped: it may be an edit lost to a typo."""
    if text is None or not str(text).strip():
        return ()
    items = str(text).split(",")
    for position, item in enumerate(items, start=1):
        if not item.strip():
            raise InputError(
                f"--intervene '{text}': edit {position} of {len(items)} is empty (two commas in a row, or a comma "
                "at an end)",
                "separate the edits by single commas, e.g. --intervene erase:E.erasers.npz@3,random:8@3",
            )
    return tuple(parse_intervention(item, seed) for item in items)


def check_intervene(config) -> None:
    """The ``ExtractConfig`` constraint: ``--intervene`` parses and its files exist (the rest once the model is
    loaded, ``sources.resolve_edits``)."""
    if config.intervene is None:
        return
    if not isinstance(config.intervene, str) or not config.intervene.strip():
        raise InputError("--intervene is empty", "write e.g. --intervene random:8@3, or leave it out")
    parse_interventions(config.intervene, config.intervene_seed)


__all__ = ["FORMS", "KINDS", "SITES", "Intervention", "check_intervene", "parse_intervention", "parse_interventions"]
