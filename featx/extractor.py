"""Deprecated: ``featx extract`` now lives in the ``featx.extraction`` package (``orchestrate``, ``plan``,
``runner``, ``loop``)."""

import warnings

from .extraction.config import STORE_DTYPES, ExtractConfig, ExtractSummary, make_config, output_path  # noqa: F401
from .extraction.orchestrate import extract  # noqa: F401
from .extraction.plan import WINDOW_BYTES, ExtractionPlan, resolve_plan  # noqa: F401
from .extraction.runner import Runner  # noqa: F401
from .store import OutputLock  # noqa: F401

warnings.warn("featx.extractor moved to the featx.extraction package; the old import path goes away in the next "
              "release", DeprecationWarning, stacklevel=2)
