#!/usr/bin/env bash
# Before/after of the extraction redesign, one quiet window, alternating checkouts.
# Needs /tmp/base (git archive 1366432) and /tmp/redesign (git archive 8a2e30d), bench/.cache/sst2-872.csv
# (SST-2 test split) and bench/.cache/agnews10k.features.h5 (python bench/probe.py builds it).
set -u
cd "$(dirname "$0")/.."
PY=$PWD/.venv/bin/python
MODEL=$($PY -c "from featx.extraction.model.loading import default_model_path; print(default_model_path())" 2>/dev/null)
CORPUS=bench/.cache/sst2-872.csv
echo "== uptime before: $(uptime)"
echo "== steady-state batch loop (bench/ab.py), old vs new"
PYTHONPATH=$PWD $PY bench/ab.py --roots /tmp/base,/tmp/redesign,. --corpus $CORPUS --rounds 3 2>&1 | grep -v Warning
echo "== whole command: featx extract on SST-2 test (872 rows), 3 alternating rounds"
for round in 1 2 3; do
  for root in /tmp/base $PWD; do
    start=$(date +%s.%N)
    (cd /tmp && PYTHONPATH=$root $PY -W ignore -m featx extract $PWD/$CORPUS -o /tmp/ab-cmd.h5 --model "$MODEL" --overwrite -q --device cpu --dtype float32 >/dev/null)
    end=$(date +%s.%N)
    echo "round $round $root: $(echo "$end - $start" | bc) s"
  done
done
echo "== featx probe on AG News 10k (all layers x poolings, logreg, 5-fold CV, control), old then new"
for root in /tmp/base $PWD; do
  start=$(date +%s.%N)
  (cd /tmp && PYTHONPATH=$root $PY -W ignore -m featx probe $PWD/bench/.cache/agnews10k.features.h5 --layer all --jobs 2 -o /tmp/ab-probe-$(basename $root) > /tmp/ab-probe-$(basename $root).txt)
  end=$(date +%s.%N)
  echo "$root: $(echo "$end - $start" | bc) s; $(grep -c . /tmp/ab-probe-$(basename $root).txt) lines"
done
$PY - "$(basename "$PWD")" <<'PYEOF'
import sys, pandas as pd
a, b = pd.read_csv("/tmp/ab-probe-base.csv"), pd.read_csv(f"/tmp/ab-probe-{sys.argv[1]}.csv")
columns = [c for c in a.columns if c in b.columns and "seconds" not in c]
print("probe tables: columns that differ (timings left out):", [c for c in columns if not a[c].equals(b[c])], "of", len(columns))
PYEOF
echo "== uptime after: $(uptime)"
