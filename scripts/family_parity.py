"""Print each family's largest parity error (fp32, relative to the activations' scale) against a plain
``transformers`` forward of each row alone, with and without the CPU fast path: the figures in the
README's family table. Uses the tiny random models of ``tests/support/families.py``.

    .venv/bin/python scripts/family_parity.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.families import FAMILIES, build_family, reference_states  # noqa: E402
from support.parity import parity, run_family  # noqa: E402
from support.tiny import SENTENCES, write_csv  # noqa: E402


def main() -> None:
    texts = [row[0] for row in SENTENCES]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = write_csv(tmp / "corpus.csv", SENTENCES)
        print("| family | fast path on | fast path off | poolings |")
        print("|---|---|---|---|")
        for family in FAMILIES:
            folder = build_family(family, tmp / family.name)
            reference = reference_states(family, folder, texts)
            errors = []
            for fast in ("1", "0"):
                os.environ["FEATX_ONEDNN"] = fast
                summary = run_family(folder, corpus, tmp / f"{family.name}-{fast}.h5", overwrite=True)
                errors.append(parity(summary, reference))
            print(f"| {family.name} | {errors[0]:.1e} | {errors[1]:.1e} | {', '.join(summary.poolings)} |")


if __name__ == "__main__":
    main()
