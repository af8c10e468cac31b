"""``featx.fit``: train the deployed probe of one label on a features file and write it as a bundle.

The layer spec and pooling (``auto``: every stored one) are chosen by cross-validation on the training rows
(``choose``); the chosen head is then trained on every training row (its C or alpha chosen on a holdout of
them) and, when the file has a test split, scored once on the test rows, with a 95% bootstrap interval,
beside the majority class (or the training mean), the lexical baseline and the control task (``control``). The test
rows are read only for that score. Without a test split the cross-validated score is the estimate, and it stands
beside the same baselines cross-validated over the very folds the candidates were scored on (``cv_baselines``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..extraction import config_sha256, tokenizer_sha256
from ..options import keywords_of
from ..probing import bootstrap_intervals, few_scored_note, few_val_note, regression_bootstrap
from ..safe_files import check_writable, is_bundle_folder, refuse_replacing, writing
from ..store import FeatureFile
from .arc_plan import SELECTOR, resolve_arc_fit
from .arc_select import OFFSET_BOUNDS
from .arc_tree import TREE
from .attach import choose_heads, final_selector, head_test, head_test_lines, training_baselines
from .bundle import write_bundle
from .choose import Candidate, choose, fit_any, fit_options, score_of, take
from .config import FitConfig
from .control import control_text, cv_control, held_out_control
from .cv_baselines import (
    LEXICAL_NAMES,
    choice_groups,
    cv_baseline_text,
    cv_baselines,
    lexical_options,
    selection_folds,
    word_keys,
)
from .features import checked_candidates, matrix_reader
from .plan import FitPlan, resolve_fit
from .probe import Probe

# What a plan's items are called, by level.
ITEMS = {"sentence": "rows", "word": "words", "arc": "arcs"}


@dataclass
class FitResult:
    """What ``fit`` gives back: the probe (also written to ``path`` unless ``write=False``), the candidates'
    cross-validated scores (best first), the test score with its interval (without test rows: the baselines'
    scores over the same folds, ``cv_baselines``), and notes."""

    probe: Probe
    path: Path | None
    metric: str
    candidates: list[Candidate]
    test: dict | None  # {"score", "low", "high", "baseline", "n"} on the test split; None without one
    notes: list[str] = field(default_factory=list)
    trained_on: str = ""  # which rows the saved head was trained on (summary's line)
    group: str | None = None  # --group: the column whose groups every choice kept whole
    cv_baselines: dict | None = None  # without a test split: the baselines over the candidates' folds

    def _test_lines(self) -> list[str]:
        """The test score beside the majority class (training mean) and the lexical baseline."""
        test, probe, metric = self.test or {}, self.probe, self.metric
        if probe.arcs == SELECTOR:
            return head_test_lines(test)
        items = ITEMS[probe.level]
        baseline = "majority class" if probe.classes is not None else "training mean"
        reference = test["baseline"]
        shown = f"{reference:.4f}" if reference == reference else f"no {metric} (a constant prediction)"  # NaN
        lines = [
            f"test {metric}: {test['score']:.4f} [95% CI {test['low']:.4f}, {test['high']:.4f}] "
            f"on {test['n']} test {items}; {baseline}: {shown}"
        ]
        warning = few_scored_note(int(test["n"]), True, metric, items)
        if warning is not None:  # featx probe's warning, beside the score it is about
            lines.append(warning)
        if "lexical" in test:
            what = LEXICAL_NAMES[probe.level]
            lines.append(
                f"lexical baseline ({what}, fitted on the training {items}): {test['lexical']:.4f} "
                f"[95% CI {test['lexical_low']:.4f}, {test['lexical_high']:.4f}] on the same {items}"
            )
        if "control" in test:  # the chosen layer and pooling's head on featx probe's control labels
            lines.append(control_text(test["control"], test["score"], probe, f" on the same {items}"))
        return lines

    def _cv_beside(self) -> str:
        """The baselines over the same folds, after the cross-validated score (without a test split only)."""
        if self.test is not None or self.cv_baselines is None:
            return ""
        text = "; " + cv_baseline_text(self.probe, self.cv_baselines, self.metric)
        if "control" in self.cv_baselines:  # over the same folds, at the chosen layer and pooling only
            text += "; " + control_text(self.cv_baselines["control"], self.chosen.score, self.probe)
        return text

    @property
    def chosen(self) -> Candidate:
        """The chosen candidate (layer spec, pooling and cross-validated score)."""
        return self.candidates[0]

    def summary(self) -> list[str]:
        """The lines ``featx fit`` prints."""
        best, probe, metric = self.chosen, self.probe, self.metric
        cv = f"{best.score:.4f}" if np.isfinite(best.score) else "undefined"
        strength = "alpha" if probe.head.classifier == "ridge" else "C"
        tuned = "early-stopped" if probe.head.classifier == "mlp" else f"{strength} {probe.head.C:g}"  # no C: 'C nan'
        if probe.spec.kind == "stack":  # not a grid value: as short as one, and named
            tuned = f"C {probe.head.C:.2g}, the geometric mean of the layers' C"
        unit = "sentences" if probe.arcs == SELECTOR else ITEMS[probe.level]
        if self.group is not None:
            items = f"rows, a {self.group} group's rows in one fold"
        elif probe.arcs == SELECTOR:
            items = "sentences, a sentence's words in one fold, each held-out sentence's heads as its best tree"
        else:
            items = f"{unit}, a sentence's {unit} in one fold" if probe.level != "sentence" else "rows"
        lines = [
            _what(probe),
            f"chosen: layer {best.spec.name}, pooling {best.pooling}, {probe.head.classifier} "
            f"({tuned}), of {len(self.candidates)} candidate(s) by {metric} on the training {unit}",
            f"cross-validated {metric} (training {items}): {cv}" + self._cv_beside(),
            *([self.trained_on] if self.trained_on else []),
        ]
        if self.test is not None:
            lines += self._test_lines()
        else:
            lines.append("no test split: the cross-validated score is the estimate")
        if self.path is not None:
            lines.append(f"wrote {self.path}")
        return self.notes + lines


def _what(probe: Probe) -> str:
    """The first line of featx fit's summary: which label, at which level, with which classes."""
    classes = "" if probe.classes is None else f", {len(probe.classes)} classes"
    if probe.arcs == SELECTOR:
        return f"arc label '{probe.label}' (a head selector: each word's head among its sentence's words and the root)"
    if probe.arcs is not None:
        return f"arc label '{probe.label}' (a relation labeller of (head, dependent) arcs{classes})"
    return f"{'word ' if probe.level == 'word' else ''}label '{probe.label}' ({probe.task}{classes})"


def _scored(plan: FitPlan, predicted: np.ndarray, metric: str | None = None) -> tuple[float, float, float]:
    """The test rows' metric of ``predicted`` (codes or values) with its 95% bootstrap interval: over test
    rows, or over whole test sentences for a word label, or whole groups with ``--group`` (as ``featx probe``
    resamples them)."""
    config, y_test, metric = plan.config, plan.y[plan.test], metric or plan.metric
    n_boot, seed = int(config.n_bootstrap), int(config.seed)
    groups = None if plan.grouping is None else plan.grouping.codes[plan.test]
    if plan.classes is None:
        low, high = regression_bootstrap(y_test, predicted, n_boot, seed, groups)[metric]
        return score_of(metric, y_test, predicted, None), float(low), float(high)
    k = len(plan.classes)
    low, high = bootstrap_intervals(y_test, predicted, k, n_boot, seed, groups)[metric]
    return score_of(metric, y_test, predicted, k), float(low), float(high)


def _test_score(plan: FitPlan, head: Any, X_test: Any, best: Candidate) -> dict:
    """The test rows' metric of ``head`` with a 95% bootstrap interval, the baseline's, and the lexical
    baseline's with its interval (``lexical``, ``lexical_low``, ``lexical_high``; absent where the file
    stores no texts: a note says so). A head selector: its test UAS and baselines (``attach.head_test``)."""
    if plan.arcs == SELECTOR:
        return head_test(plan, head, best.spec, best.pooling)
    y_test, y_train = plan.y[plan.test], plan.y[plan.train]
    score, low, high = _scored(plan, head.predict_codes(X_test))
    if plan.classes is None:
        baseline = np.full(len(y_test), float(np.mean(y_train)))
        k = None
    else:
        k = len(plan.classes)
        baseline = np.full(len(y_test), int(np.argmax(np.bincount(y_train, minlength=k))))
    test = {
        "score": score,
        "low": low,
        "high": high,
        "baseline": score_of(plan.metric, y_test, baseline, k),
        "n": int(len(y_test)),
    }
    lexical = _lexical(plan)
    if lexical is not None:
        test["lexical"], test["lexical_low"], test["lexical_high"] = _scored(plan, lexical)
    return test


def _lexical(plan: FitPlan) -> np.ndarray | None:
    """The lexical baseline's test predictions, fitted on the training rows only (as in ``featx probe``):
    TF-IDF n-grams for a sentence label, the most frequent class of each word type for a word label."""
    from ..probing import lexical_predictions, per_type_predictions

    if plan.level in ("word", "arc"):  # an arc: its dependent's type, as featx probe keys it
        assert plan.classes is not None
        keys = word_keys(plan, plan.rows)
        return per_type_predictions(keys, plan.y, plan.train, plan.test, len(plan.classes))
    options = lexical_options(plan, _holdout_groups(plan))
    with FeatureFile(plan.path) as features:
        return lexical_predictions(features, plan.rows, plan.y, plan.train, plan.test, options, plan.notes)


def _holdout_groups(plan: FitPlan) -> np.ndarray | None:
    """The group of every row of ``plan.rows`` (a word's sentence, or ``--group``'s group), which the holdouts
    that choose C or alpha (or stop an mlp early) keep whole; None: rows held out one by one."""
    return None if plan.grouping is None else plan.grouping.codes


def _selection(plan: FitPlan, report: Callable[[str], None] | None, folds: list, same: list[int]) -> list[Candidate]:
    """Every candidate's score over ``folds`` (``same``: those that read the same vectors scored once); words: their
    sentences kept whole, --group: its groups."""
    rows, y, groups = plan.rows[plan.train], plan.y[plan.train], choice_groups(plan)
    options = fit_options(plan)
    return choose(plan.path, plan.candidates, rows, y, plan.classes, plan.metric, options, report, groups, folds, same)


@keywords_of(FitConfig)  # from Python, an error names the keyword given (layer=9), the CLI the flag
def fit(config: FitConfig | str | Path | None = None, report: Callable[[str], None] | None = None, **options: Any):
    """Fit and save a probe: ``featx.fit("feats.h5", label="sentiment", layer="auto", output="m.featx")``.

    Returns a ``FitResult``; its ``probe`` predicts at once, and ``path`` is the bundle written (None with
    ``write=False``). ``report`` receives a line per candidate scored."""
    from threadpoolctl import threadpool_limits

    from ..probing import JOB_THREADS

    config = FitConfig.build(config, **options)
    plan = resolve_arc_fit(config) if config.arcs else resolve_fit(config)
    if plan.config.write:  # before any fitting: only a bundle is ever replaced, at a path that can be written
        refuse_replacing(plan.output, plan.config.overwrite, "probe bundle", is_bundle_folder)
        check_writable(plan.output)  # before the candidates are scored, not after
    # every matrix read checked before the first fit; which candidates read the same vectors (each read once)
    same = checked_candidates(plan.path, plan.candidates, plan.level, compare=plan.arcs != SELECTOR)
    folds = selection_folds(plan)  # the candidates' folds, and the baselines' without a test split
    candidates = choose_heads(plan, report, folds) if plan.arcs == SELECTOR else _selection(plan, report, folds, same)
    best, opts = candidates[0], fit_options(plan)
    if plan.arcs == SELECTOR:  # its C chosen with its layer and pooling; its training sentences only
        head, dev, X = final_selector(plan, best), None, None
    else:
        read = matrix_reader(plan.level)
        with FeatureFile(plan.path) as features:
            X = read(features, best.spec, best.pooling, plan.rows)
        dev = _dev_positions(plan, best.spec.kind)
        _note_few_val(plan, dev, opts["classifier"])
        with threadpool_limits(limits=JOB_THREADS):  # small products: extra BLAS threads mostly spin
            holdout = _holdout_groups(plan)
            groups = None if holdout is None else holdout[plan.train]
            head = fit_any(opts["classifier"], take(X, plan.train), plan.y[plan.train], plan.classes, opts, dev, groups)
    test = _test_score(plan, head, None if X is None else take(X, plan.test), best) if len(plan.test) else None
    cv = cv_baselines(plan, folds) if test is None else None
    if X is not None and plan.config.control:  # the control task at the chosen layer and pooling, as probe shows it
        _add_control(plan, X, opts, test, cv, folds, dev)
    info = _info(plan, candidates, test, dev, cv)
    probe = Probe(head, best.spec, best.pooling, _extraction(plan), info)
    path = None
    if plan.config.write:
        with writing(plan.output):  # a full disk or a read-only folder: one line, no half-written bundle
            probe.path = path = write_bundle(probe, plan.output, overwrite=plan.config.overwrite)
    trained_on = _trained_on(plan, dev, opts["classifier"])
    return FitResult(probe, path, plan.metric, candidates, test, plan.notes, trained_on, plan.config.group, cv)


def _add_control(plan: FitPlan, X: Any, opts: dict, test: dict | None, cv: dict | None, folds: list, dev) -> None:
    """The control task's score beside the test score (``test["control"]``), or without test rows beside the
    cross-validated one over the same folds (``cv["control"]``): the chosen head refitted on control labels."""
    from threadpoolctl import threadpool_limits

    from ..probing import JOB_THREADS, Groups

    holdout = _holdout_groups(plan)
    with threadpool_limits(limits=JOB_THREADS):
        if test is not None:
            test["control"] = held_out_control(plan, X, opts, dev, None if holdout is None else holdout[plan.train])
        elif cv is not None:
            groups = choice_groups(plan)  # as the candidates' folds gave their heads' holdouts
            cv["control"] = cv_control(plan, X, folds, opts, groups.codes if isinstance(groups, Groups) else groups)


def _dev_positions(plan: FitPlan, kind: str) -> np.ndarray | None:
    """Positions in the training rows (words) of the val split's, for a head on one matrix: its C or alpha is
    chosen, or an mlp early-stopped, on them, as featx probe does; None without a val split, or for a stack."""
    if plan.dev is None or kind == "stack":
        return None
    return np.flatnonzero(np.isin(plan.train, plan.dev))


def _note_few_val(plan: FitPlan, dev: np.ndarray | None, classifier: str) -> None:
    """A note when the val rows that choose the saved head's C or alpha (or stop its mlp) are too few to trust
    (``probing.few_val_note``: its threshold, and per class for a sentence label's classes)."""
    if dev is None:
        return
    chosen = {"mlp": "early stop", "ridge": "alpha"}.get(classifier, "C")
    items = "word pairs" if plan.arcs == SELECTOR else ITEMS[plan.level]
    names = plan.classes if plan.level == "sentence" else None
    note = few_val_note(plan.y, plan.train, plan.train[dev], f"the saved head's {chosen}", items, names)
    if note is not None:
        plan.notes.append(note)


def _trained_on(plan: FitPlan, dev: np.ndarray | None, classifier: str) -> str:
    """Which rows the saved head was trained on: the line both featx fit and featx probe print."""
    if plan.arcs == SELECTOR and plan.grouping is not None:
        return (
            f"trained on the {len(np.unique(plan.grouping.codes[plan.train]))} training sentences, each word's gold "
            "head against every other candidate of its sentence (a softmax over its candidates), C chosen with the "
            "layer and pooling"
        )
    items = ITEMS[plan.level]
    if dev is None:
        return f"trained on {len(plan.train)} {items} (every labelled {items[:-1]} outside the test split)"
    chosen = "early-stopped" if classifier == "mlp" else f"its {'alpha' if plan.classes is None else 'C'} chosen"
    sentences = ""
    if plan.level != "sentence" and plan.grouping is not None and plan.dev is not None:  # a word's sentence
        sentences = f" of {len(np.unique(plan.grouping.codes[plan.dev]))} sentences"
    return (
        f"trained on the {len(plan.train) - len(dev)} train {items}, {chosen} on the {len(dev)} val "
        f"{items}{sentences} (as featx probe trains)"
    )


def _extraction(plan: FitPlan) -> dict:
    """What the bundle records of the extraction; the sha256 of the tokenizer's and the config's files as the
    features file recorded them at extraction, else (an older file) hashed from the model folder now."""
    from .model_ref import model_folder

    extraction = dict(plan.extraction)
    for name, digest in (("tokenizer_sha256", tokenizer_sha256), ("config_sha256", config_sha256)):
        if not extraction.get(name):
            folder = model_folder(extraction)
            extraction[name] = digest(folder) if folder is not None else None
    return extraction


def _kept_together(plan: FitPlan) -> str:
    """What the choice's folds keep whole: a word label's sentences, ``--group``'s groups, or nothing."""
    if plan.level != "sentence":
        unit = "word pairs" if plan.arcs == SELECTOR else ITEMS[plan.level]
        return f" ({unit}; a sentence's {unit} in one fold and on one side of every holdout)"
    if plan.grouping is not None:
        return f" (by whole groups of {plan.grouping.column}: folds and holdouts never split a group)"
    return ""


def _group_fields(plan: FitPlan) -> dict:
    """``group`` and ``n_groups`` (the groups of the training rows) of a fit with ``--group``; nothing without."""
    if plan.grouping is None or plan.config.group is None:
        return {}
    return {"group": plan.grouping.column, "n_groups": plan.grouping.take(plan.train).count}


def _info(plan: FitPlan, candidates: list[Candidate], test: dict | None, dev: np.ndarray | None, cv=None) -> dict:
    def number(value):
        return float(value) if value is not None and np.isfinite(value) else None

    return {
        "label": plan.label,
        "level": plan.level,
        **({"arcs": plan.arcs} if plan.arcs is not None else {}),
        "selection": {
            "metric": plan.metric,
            "on": "cross-validation over the training rows" + _kept_together(plan),
            **_group_fields(plan),
            "folds": int(plan.config.folds),
            "seed": int(plan.config.seed),
            "n_train": int(len(plan.train)),
            "n_val": None if dev is None else int(len(dev)),  # the final head's C (alpha, mlp stopping) chosen on
            "cv_score": number(candidates[0].score),
            "candidates": [{"layer": c.spec.name, "pooling": c.pooling, "score": number(c.score)} for c in candidates],
            "test": None if test is None else {key: number(value) for key, value in test.items()},
            **({"n_bootstrap": int(plan.config.n_bootstrap)} if test is not None else {}),  # the test intervals'
            **({"cv_baselines": cv} if cv is not None else {}),  # without a test split: scored over the same folds
        },
        # a head selector: its baselines as fitted on the training words, which featx predict applies to its input
        **({"head_baselines": training_baselines(plan)} if plan.arcs == SELECTOR else {}),
        # a head selector: the |offset| buckets of its pair features (a bundle of an earlier featx has none), and its
        # heads decoded as each sentence's best tree (an earlier featx's: each word's best candidate on its own)
        **({"offset_buckets": list(OFFSET_BOUNDS), "head_decode": TREE} if plan.arcs == SELECTOR else {}),
        "features_file": {"path": str(plan.path.resolve()), "fingerprint": plan.fingerprint},
    }


__all__ = ["FitResult", "fit"]
