"""The lexical baseline of a sentence-level label: what the words alone give, scored like a probe.

TF-IDF over word 1-2-grams and character 2-5-grams (``char_wb``), sublinear term frequencies, n-grams
kept when they occur in at least 2 texts; the vectorizers are fitted on each outer training part only.
Then the probes' classifier family: softmax regression for classes (scikit-learn's ``LogisticRegression``
objective and stopping rule, solved by featx's L-BFGS on the sparse matrix; C from the probe's C grid),
``Ridge`` for a number (alpha from the ridge grid), each chosen by the probes' own inner rule on
the training rows only (the file's dev part, else the same seeded holdout of the training part; a path
over the whole grid), then refitted on the whole training part. It is scored on
exactly the probe's test rows of every outer fold, with the same metrics and intervals, as a reference
row (``kind`` and ``layer_spec`` "lexical", ``classifier`` its family) with a paired test against the best
layer (``p_vs_best``: one test, no adjustment).

Sentence pairs: one vocabulary fitted on both sides' training texts, and the feature
``[tfidf(a), tfidf(b), |tfidf(a) - tfidf(b)|]`` (each side, and where they differ).
The texts come from the features file; a file whose texts are all empty has no lexical baseline (a note).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...selection import LayerSpec
from .. import evaluation as ev
from ..choice import baseline_rivals
from ..evaluation import regression_metrics as rm
from ..evaluation import significance
from ..inputs import DeviceFreeJob, FeatureJob
from ..solvers.ridge import RegressionFold, holdout
from .base import out_of_fold
from .lexical_tfidf import CHAR_NGRAMS, MIN_DF, WORD_NGRAMS, NgramCounts, tfidf_union

if TYPE_CHECKING:
    from ...store import FeatureFile

MAX_ITER = 1000  # L-BFGS iterations per fit
TOL = 1e-4  # the largest gradient entry at which a fit stops (LogisticRegression's default, which it was)
NO_TEXTS = "no texts stored: no lexical baseline"
DESCRIPTION = (
    f"TF-IDF of word {WORD_NGRAMS[0]}-{WORD_NGRAMS[1]}-grams and char_wb {CHAR_NGRAMS[0]}-{CHAR_NGRAMS[1]}-grams "
    f"(sublinear tf, min_df {MIN_DF}), fitted on each training part"
)
PAIR_FEATURE = "[tfidf(a), tfidf(b), |tfidf(a) - tfidf(b)|]"


@dataclass(frozen=True)
class LexicalTexts:
    """The texts of the probed (kept) rows, in their order; ``b``: each pair's second text."""

    a: list[str]
    b: list[str] | None = None

    @cached_property
    def counts(self) -> NgramCounts:
        """Every text's n-gram counts, counted once for all folds (pairs: the a texts, then the b texts)."""
        return NgramCounts.of(self.a + (self.b or []))


def read_texts(features: FeatureFile, kept: np.ndarray, enabled: bool, notes: list[str]) -> LexicalTexts | None:
    """The kept rows' texts (and pairs' second texts), or None: turned off, or none stored (a note)."""
    if not enabled:
        return None
    texts = features.texts
    a = [texts[int(i)] for i in kept]
    if not any(text.strip() for text in a):
        notes.append(NO_TEXTS)
        return None
    pair = features.pair_texts
    return LexicalTexts(a, [pair[int(i)] for i in kept] if pair is not None else None)


def featuriser(texts: LexicalTexts, train: np.ndarray) -> Callable[[np.ndarray], Any]:
    """TF-IDF fitted on the ``train`` rows' texts only (pairs: both sides' training texts); returns rows ->
    sparse feature matrix. The n-gram counts are the run's (``LexicalTexts.counts``), the rest the fold's."""
    if texts.b is None:
        return tfidf_union(texts.counts, train)
    n = len(texts.a)
    union = tfidf_union(texts.counts, np.concatenate([train, train + n]))

    def pairs(rows: np.ndarray):
        from scipy import sparse

        a, b = union(rows), union(rows + n)
        return sparse.hstack([a, b, abs(a - b)]).tocsr()

    return pairs


def logistic(C: float, balanced: bool, warm_start: bool = False):
    """The baseline's classifier: featx's softmax regression on the sparse TF-IDF (scikit-learn's
    ``LogisticRegression`` lbfgs objective, its tolerance and iterations), in float64."""
    from ..solvers.softmax import SoftmaxRegression

    weight = "balanced" if balanced else None
    return SoftmaxRegression(C=C, tol=TOL, max_iter=MAX_ITER, class_weight=weight, warm_start=warm_start)


def validation_split(transform, X_train, y, train, dev, fit_and_val):
    """``(X_fit, y_fit, X_val, y_val)`` of a choice made on training rows only: the file's dev part when it
    has one, else ``fit_and_val`` (positions within ``train``: the probes' own seeded holdout)."""
    if dev is not None:
        return X_train, y[train], transform(dev), y[dev]
    fit_rows, val_rows = fit_and_val()
    return X_train[fit_rows], y[train][fit_rows], X_train[val_rows], y[train][val_rows]


def choose_c(transform, X_train, y, train, dev, cs, balanced: bool, seed: int, groups=None):
    """C by the probes' rule: the lowest validation log-loss (``evaluation.validation_log_loss``) on the dev
    part, else on a seeded stratified holdout of the training part; the path over the whole grid (smallest C
    first), ties to the smaller C. Each C of the path starts from the previous C's weights. Unlike the probes'
    paths it never stops early: TF-IDF rows are not standardised, so the strongly regularised end of the grid
    is a flat stretch where the loss barely moves, and a stopping rule could stop there, short of the Cs that
    fit.
    ``X_train``: sparse, or ``SparseRows`` with a dev part. Returns the C and the path's fit at it (None: a
    single C and no dev part), from which the caller's fit on the whole training part starts."""
    if dev is None and len(cs) == 1:
        return float(cs[0]), None

    def holdout_rows():
        return ev.inner_split(y[train], np.arange(len(train)), seed, _of(groups, train))

    X_fit, y_fit, X_val, y_val = validation_split(transform, X_train, y, train, dev, holdout_rows)
    from ..solvers.softmax_sparse import SparseRows

    rows = SparseRows.of(X_fit)  # converted once for the whole path
    path = ev.log_loss_path()
    model = logistic(float(cs[0]), balanced, warm_start=True)
    for C in sorted(cs):
        model.set_params(C=C)
        model.fit(rows, y_fit)
        path.record(C, -ev.model_log_loss(model, X_val, y_val, balanced), lambda: copy.deepcopy(model))
    assert path.best_c is not None
    return float(path.best_c), path.best_state


def _of(groups: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if groups is None else groups[rows]


def classify_fold(
    texts: LexicalTexts, y, train, test, dev, cs, balanced: bool, seed: int, groups=None
) -> ev.FoldResult:
    """One outer fold of the logistic lexical baseline: the fit on the whole training part starts from the
    path's weights at the C chosen (its fit rows are most of those rows: a third of the iterations from
    zeros) and stops by the same rule."""
    from ..solvers.softmax_sparse import SparseRows

    started = time.perf_counter()
    transform = featuriser(texts, train)
    X_train = transform(train)
    if dev is not None:  # the C path fits the whole training part too: its rows are prepared once for both
        X_train = SparseRows.of(X_train)
    C, start = choose_c(transform, X_train, y, train, dev, cs, balanced, seed, groups)
    model = start if start is not None else logistic(C, balanced)
    model.fit(X_train, y[train])
    return ev.FoldResult(model.predict(transform(test)), C, time.perf_counter() - started)


def choose_alpha(transform, X_train, y, train, dev, alphas, seed: int, groups=None) -> float:
    """alpha by the ridge probes' rule: the dev part, else the same seeded holdout; the smallest
    validation MSE, ties to the larger alpha."""
    from sklearn.linear_model import Ridge

    if len(alphas) == 1:
        return float(alphas[0])
    X_fit, y_fit, X_val, y_val = validation_split(
        transform, X_train, y, train, dev, lambda: holdout(len(train), seed, _of(groups, train))
    )
    best, chosen = np.inf, float(alphas[0])
    for alpha in sorted(alphas, reverse=True):
        error = float(np.mean((Ridge(alpha=alpha).fit(X_fit, y_fit).predict(X_val) - y_val) ** 2))
        if error < best - 1e-12:
            best, chosen = error, float(alpha)
    return chosen


def regress_fold(texts: LexicalTexts, y, train, test, dev, alphas, seed: int, groups=None) -> RegressionFold:
    """One outer fold of the ridge lexical baseline."""
    from sklearn.linear_model import Ridge

    started = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    transform = featuriser(texts, train)
    X_train = transform(train)
    alpha = choose_alpha(transform, X_train, y, train, dev, alphas, seed, groups)
    model = Ridge(alpha=alpha).fit(X_train, y[train])
    return RegressionFold(model.predict(transform(test)), alpha, time.perf_counter() - started)


def lexical_predictions(
    features: FeatureFile, rows: np.ndarray, y, train: np.ndarray, test: np.ndarray, options: dict, notes: list[str]
) -> np.ndarray | None:
    """The lexical baseline's predictions of the ``test`` positions of ``rows`` (stored rows), fitted on the
    ``train`` positions only, C or alpha chosen there by the probes' rule: the reference ``featx fit`` prints
    beside its test score. ``options``: ``classes`` (bool), ``cs``, ``alphas``, ``balanced``, ``seed``, and
    ``groups`` (each row's group, held out whole; optional). None, with a note, where the file stores no texts
    or the training texts share no n-gram."""
    every = lexical_fold_predictions(features, rows, y, [(train, test)], options, notes)
    return None if every is None else every[0]


def lexical_fold_predictions(
    features: FeatureFile, rows: np.ndarray, y, folds: list, options: dict, notes: list[str]
) -> list[np.ndarray] | None:
    """``lexical_predictions`` of each of ``folds`` (``(train, test)`` positions of ``rows``): every fold's
    TF-IDF and C (alpha) fitted on its own training part only, the texts read and their n-grams counted once.
    The cross-validated reference ``featx fit`` prints beside its cross-validated score without a test split.
    None, with a note, where the file stores no texts or a fold's training texts share no n-gram."""
    texts = read_texts(features, rows, True, notes)
    if texts is None:
        return None
    seed, balanced, groups = int(options["seed"]), bool(options["balanced"]), options.get("groups")
    out = []
    try:
        for train, test in folds:
            if options["classes"]:
                out.append(
                    classify_fold(texts, y, train, test, None, options["cs"], balanced, seed, groups).predictions
                )
            else:
                out.append(regress_fold(texts, y, train, test, None, options["alphas"], seed, groups).predictions)
    except ValueError as error:  # e.g. an empty vocabulary: no n-gram in 2 training texts
        _skipped(error, notes)
        return None
    return out


def _skipped(error: ValueError | str, notes: list[str]) -> None:
    notes.append(f"no lexical baseline: {error}")


LEXICAL_JOB = FeatureJob("main", "", LayerSpec("lexical", ()), "", [])
REFERENCE = {"site": "", "layer_spec": "lexical", "kind": "lexical", "layers": ""}


def fold_count(plan: Any) -> int:
    """The outer folds the baseline fits: those with their dev entry (every fold has one, None when no dev)."""
    return min(len(plan.folds), len(plan.dev))


def lexical_fold(texts: LexicalTexts, family: str, inputs: Any, index: int) -> Any:
    """Outer fold ``index`` of the lexical baseline (its seed the fold's, as every fold always had)."""
    plan = inputs.plan
    (train, test), dev = plan.folds[index], plan.dev[index]
    grid, seed, groups = inputs.cs if family == "logreg" else inputs.alphas, inputs.seed + 1000 * index, plan.groups
    if family == "logreg":
        return classify_fold(texts, inputs.y, train, test, dev, grid, inputs.balanced, seed, groups)
    return regress_fold(texts, inputs.y, train, test, dev, grid, seed, groups)


def lexical_record(family: str, folds: list[Any], inputs: Any) -> dict:
    """The lexical reference row of a run (with ``_predictions``) from its outer folds' results, in order."""
    plan = inputs.plan
    if family == "logreg":
        from .classification_jobs import result_record

        row = ev.summarise(plan, inputs.y, folds, inputs.n_classes, inputs.n_bootstrap, inputs.seed)
        row["mdl_bits"] = row["mdl_compression"] = float("nan")
        record = result_record(LEXICAL_JOB, "logreg", row, inputs)
        missing: Any = -1
    else:
        from .regression_jobs import result_record as regression_result

        row = rm.summarise(plan, inputs.y, folds, inputs.n_bootstrap, inputs.seed)
        record = regression_result(LEXICAL_JOB, "ridge", row, inputs)
        missing = float("nan")
    record.update(REFERENCE)
    record["_predictions"] = out_of_fold(len(inputs.y), plan.folds, folds, missing)
    return record


def add_lexical_test(
    table: pd.DataFrame,
    predictions: dict,
    plan,
    y,
    n_boot: int,
    seed: int,
    metric: str = "accuracy",
    score=None,
    p_value=None,
) -> pd.DataFrame:
    """The lexical row's ``p_vs_best``: a paired test (as between layers, ``p_value`` when given, e.g. in the
    run's metric) against the best single layer of the main features' hidden states, the one chosen on
    training rows (``is_best`` and the best ``selection_score``); in a run of ``cat(...)`` or ``stack`` specs
    only, against the chosen one of those. One test, so ``p_vs_best_holm`` is the same p."""
    lexical = [index for index in table.index[table.kind == "lexical"] if index in predictions]
    singles = baseline_rivals(table[table.index.isin(list(predictions))])
    if "selection_score" in singles:
        singles = singles[singles.is_best & singles.selection_score.notna()]
        key = "selection_score"
    else:
        key = metric
    if not lexical or singles.empty or not singles[key].notna().any():
        return table
    best, index = singles[key].idxmax(), lexical[0]
    if p_value is not None:
        p = p_value(plan, y, predictions[best], predictions[index], n_boot, seed)
    else:
        p = significance.paired_p_value(
            plan, y, predictions[best], predictions[index], n_boot, seed, score or significance.correct
        )
    table.at[index, "p_vs_best"] = table.at[index, "p_vs_best_holm"] = p
    table.at[index, "significant_vs_best"] = bool(p < significance.ALPHA)
    return table


@dataclass(frozen=True)
class LexicalJob(DeviceFreeJob):
    """One outer fold of the lexical baseline as a job of the run (``run_jobs``): the folds' jobs come first in
    the list, so that they start at once in the workers and run beside the probe jobs (with a GPU: in a process
    of their own while the GPU's jobs take turns), one fold per job rather than every fold on one core.
    ``family``: "logreg" (classes) or "ridge" (a number); ``fold``: the outer fold's index."""

    texts: LexicalTexts
    family: str
    fold: int = 0

    def prepare(self) -> None:
        """The n-gram counts, taken once in the run's process (every fold's job shares the texts): they then
        travel with the texts to each fold's worker."""
        with contextlib.suppress(ValueError):  # no n-gram at all: each fold's job says so (the run's note)
            self.texts.counts  # noqa: B018 - a cached property


@dataclass(frozen=True)
class LexicalOutput:
    """What a lexical fold's job gives back: the fold's result, or the error that skips the baseline."""

    fold: int
    family: str
    result: Any = None
    error: str | None = None


def run_lexical_job(job: LexicalJob, inputs: Any) -> LexicalOutput:
    """One outer fold of the lexical baseline, in a worker like the probe jobs (the same thread limit)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=inputs.threads):
        try:
            return LexicalOutput(job.fold, job.family, lexical_fold(job.texts, job.family, inputs, job.fold))
        except ValueError as error:  # e.g. an empty vocabulary: no n-gram in 2 training texts
            return LexicalOutput(job.fold, job.family, error=str(error))


def run_job_or_lexical(run_probe_job: Callable[..., Any], job: tuple[Any, ...]) -> Any:
    """One job of a sentence-level task: a lexical fold's (``LexicalJob``) or a probe job."""
    return run_lexical_job(*job) if isinstance(job[0], LexicalJob) else run_probe_job(*job)


def with_lexical_job(jobs: list[tuple[Any, ...]], texts: LexicalTexts | None, family: str, inputs: Any) -> list:
    """``jobs`` with the lexical baseline's jobs first, one per outer fold (when the run has the baseline). The
    n-gram counts are taken once, by ``run_jobs`` (``LexicalJob.prepare``), while the workers start."""
    if texts is None:
        return jobs
    folds = [(LexicalJob(texts, family, index), inputs) for index in range(fold_count(inputs.plan))]
    return [*folds, *jobs]


def take_lexical(outputs: list[Any], notes: list[str], inputs: Any = None) -> tuple[list[Any], dict | None]:
    """The probe jobs' outputs and the lexical row (None: no baseline, or skipped with a note), assembled from
    its folds' outputs among ``run_jobs``' outputs."""
    folds = sorted((output for output in outputs if isinstance(output, LexicalOutput)), key=lambda out: out.fold)
    rest = [output for output in outputs if not isinstance(output, LexicalOutput)]
    if not folds:
        return rest, None
    errors = [output.error for output in folds if output.error is not None]
    if errors:
        _skipped(errors[0], notes)
        return rest, None
    return rest, lexical_record(folds[0].family, [output.result for output in folds], inputs)


def lexical_meta(texts: LexicalTexts | None, family: str, table: pd.DataFrame) -> dict[str, Any] | None:
    """The ``lexical`` field of the JSON meta: what the baseline was (None: none in this run)."""
    if texts is None or not (table.kind == "lexical").any():
        return None
    meta: dict[str, Any] = {"features": DESCRIPTION, "classifier": family}
    if texts.b is not None:
        meta["pair_feature"] = PAIR_FEATURE
    return meta
