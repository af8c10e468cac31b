"""Fixtures of the study report tests: the synthetic study table (``support.study_tables``)."""

from __future__ import annotations

import pandas as pd
import pytest
from support.study_tables import study_rows


@pytest.fixture
def study_table() -> pd.DataFrame:
    return study_rows()
