"""featx: frozen-feature extraction from every layer of an encoder, and probes that say where labels live.

Two stages, each a package with a small public API: ``featx.extraction`` and ``featx.probing``; the
features file between them belongs to ``featx.store``, and reading input files (corpora, label files) to
``featx.io``. ``featx.report`` turns results into tables, figures and pages.
"""

from ._version import __version__
from .errors import FeatxError
from .store import FeatureFile  # noqa: A001
from .store import open_features as open


def extract(corpus=None, **options):
    """Extract features; see ``featx.extraction.ExtractConfig`` for the options.

    SIGTERM and SIGHUP (a kernel shut down, a job killed) stop it like Ctrl-C while it runs in the main
    thread: ``featx.errors.Terminated`` (a ``KeyboardInterrupt``) is raised with the committed rows kept
    and the lock released, so the same call resumes; the previous handlers are restored afterwards.
    """
    from .extraction import ExtractConfig, make_config, quick_up_to_date
    from .options import keywords_of

    with keywords_of(ExtractConfig):  # an error names the keyword given (batch_size), not the flag (--batch-size)
        config = make_config(corpus, **options)
        summary = quick_up_to_date(config)  # the same request made this file: no torch, no model load
        if summary is not None:
            return summary
        from .extraction import extract as _extract
        from .signals import interrupts_on_termination

        with interrupts_on_termination():
            return _extract(config)


def embed(texts, model: str = "default", layer: int = -1, pooling: str = "mean", site: str = "hidden", **options):
    """The ``(rows, width)`` float32 features of in-memory ``texts`` (a list, numpy array, pandas Series or
    one-column DataFrame) at one ``layer`` (negative: from the top), ``pooling`` and ``site`` (``hidden``, or one
    inside the layer such as ``ffn``), without a features file; ``options`` as ``featx.extraction.embed`` takes
    them (which returns every layer, pooling and site asked for: ``layers=``, ``poolings=``, ``sites=``, and both
    sides of ``pair_mode="separate"`` pairs, which featx.embed refuses); ``text_pairs=`` the second texts of
    cross-encoded pairs."""
    from .extraction import ExtractConfig, embed_one
    from .options import keywords_of

    with keywords_of(ExtractConfig):
        return embed_one(texts, model=model, layer=layer, pooling=pooling, site=site, **options)


def probe(features=None, **options):
    """Probe a features file per layer and pooling; see ``featx.probing.ProbeConfig`` for the options."""
    from .probing import probe as _probe

    return _probe(features, **options)


def estimate(corpus=None, **options):
    """What ``extract`` would cost (rows, tokens, file size, memory, time) without running it."""
    from .extraction import ExtractConfig
    from .extraction import estimate as _estimate
    from .options import keywords_of

    with keywords_of(ExtractConfig):
        return _estimate(corpus, **options)


def explain(results=None, **options):
    """Per-example diagnostics of a probing run; see ``featx.probing.analyses.explain``."""
    from .probing import explain as _explain

    return _explain(results, **options)


def fit(features=None, **options):
    """Fit a probe on a features file and save it as a bundle; see ``featx.deploy.FitConfig`` for the options."""
    from .deploy import fit as _fit

    return _fit(features, **options)


def lens(corpus=None, **options):
    """The logit lens beside the probe, per layer; see ``featx.logit_lens.LensConfig`` for the options."""
    from .logit_lens import lens as _lens

    return _lens(corpus, **options)


def load(path):
    """The probe saved in a bundle folder (``featx fit -o model.featx``), checked before use."""
    from .deploy import load as _load

    return _load(path)


__all__ = [
    "FeatureFile",
    "FeatxError",
    "__version__",
    "embed",
    "estimate",
    "explain",
    "extract",
    "fit",
    "lens",
    "load",
    "open",
    "probe",
]
