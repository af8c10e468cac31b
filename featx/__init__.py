"""featx: frozen-feature extraction from every layer of an encoder, and probes that say where labels live."""

__version__ = "0.1.0"

from .errors import FeatxError  # noqa: E402
from .store import FeatureFile, open_features as open  # noqa: E402,A001


def extract(corpus=None, **options):
    """Extract features; see ``featx.extract.ExtractConfig`` for the options."""
    from .extractor import extract as _extract

    return _extract(corpus, **options)


def probe(features=None, **options):
    """Probe a features file per layer and pooling; see ``featx.probing.ProbeConfig`` for the options."""
    from .probing import probe as _probe

    return _probe(features, **options)


__all__ = ["FeatureFile", "FeatxError", "__version__", "extract", "open", "probe"]
