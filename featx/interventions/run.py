"""``intervene``: the whole experiment of ``featx intervene`` in one call. Per edited layer: the edits (fitted or
taken from the bundle; under cross-validation one eraser per fold, ``passes.py``) and each one's random control (its
rank and centring), one unedited pass over the file's rows and one per distinct edit and control, then the table: the
label's and the other columns' probes at every stored layer from the edit up (before, after, control, each fold
reading its own eraser's pass; paired tests Holm-adjusted per label and edit over the layers), the last layer's drift,
the bundle's flips and accuracy, and the LM loss where the checkpoint has a head (these three read each row on the
pass of an eraser not fitted on it: its fold's without a split). ``--edit steer`` runs the dose-response instead
(``steering.py``; its rows and directions: ``steer_rows.py``, never measured on a row its direction was computed
from)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..options import keywords_of
from ..probing import SIGNIFICANCE_ALPHA
from ..safe_files import check_writable, refuse_existing
from .config import InterveneConfig
from .loss import head_of, lm_model, loss_row
from .outputs import HeldOut, bundle_rows, drift_row, output_needs, reproduction_note
from .passes import LayerEdits, layer_edits, shares_split
from .plan import InterventionPlan, make_plan
from .probes import LabelProbes
from .result import TABLE_COLUMNS, InterveneResult
from .steer_rows import steering_rows


def _holm(table: pd.DataFrame) -> pd.DataFrame:
    from ..probing import holm

    for key in ("p_after", "p_control"):
        table[f"{key}_holm"] = float("nan")
    probes = table[table.kind == "probe"]
    for _, group in probes.groupby(["edit_layer", "name"], sort=False):
        for key in ("p_after", "p_control"):
            table.loc[group.index, f"{key}_holm"] = holm(group[key].to_numpy())
    table["at_chance"] = (table.kind == "probe") & (table.after_low <= table.majority + 1e-9)
    table["significant"] = table.p_after_holm < SIGNIFICANCE_ALPHA
    return table


def _edits(plan: InterventionPlan, notes: list[str]) -> dict[int, LayerEdits]:
    """Each edited layer's edits, every eraser fitted (and every control resolved) before the model is loaded."""
    edits = {}
    for layer in plan.at:
        edits[layer] = found = layer_edits(plan, layer)
        if found.rank == 0:
            notes.append(f"the edit at layer {layer} has rank 0 (it removes nothing); its control is the identity")
        ranks = found.fold_ranks()
        if ranks != [found.rank]:
            notes.append(
                f"at layer {layer} the folds' erasers remove {_spelled(ranks)} direction(s): the rank column ("
                f"{found.rank}) is that of the eraser fitted on the training rows"
            )
    if plan.config.edit == "erase":
        notes += _fold_notes(plan, edits)
    return edits


def _fold_notes(plan: InterventionPlan, edits: dict[int, LayerEdits]) -> list[str]:
    """What ``--edit erase`` fitted per fold: every label's folds without a split, or those of the labels
    cross-validated beside the split (no labelled test row)."""
    counts = ", ".join(f"{len(found.run())} at layer {layer}" for layer, found in edits.items())
    tasks = plan.tasks
    main = tasks[plan.label]
    if not main.plan.is_split:
        return [
            "the file has no split: each fold's after and control probes read a pass edited by an eraser fitted on "
            f"that fold's training rows only (edited passes: {counts}; one per distinct eraser of the folds, and one "
            "of the eraser of every labelled row where unlabelled rows need it); the drift, bundle and loss rows read "
            "each labelled row on its fold's pass, each unlabelled row on that of the eraser of every labelled row"
        ]
    measured = len(next(iter(edits.values())).measured)
    notes = [
        f"the drift, bundle and loss rows read the {measured} rows the train split's eraser was not fitted on (its "
        f"{len(main.training_rows())} labelled train rows are left out)"
    ]
    crossed = [name for name, task in tasks.items() if not shares_split(main, task)]
    if not crossed:
        return notes
    return notes + [
        f"{', '.join(repr(name) for name in crossed)}: no labelled test row, so cross-validated over train rows (the "
        "rows the train split's eraser was fitted on): each fold's after and control probes read a pass edited by an "
        f"eraser fitted on that fold's training rows only (edited passes: {counts})"
    ]


def _spelled(ranks: list[int]) -> str:
    return str(ranks[0]) if len(ranks) == 1 else f"{ranks[0]} to {ranks[-1]}"


def _pass_pairs(plan: InterventionPlan, forward, base, edits: LayerEdits, probes: dict) -> tuple[HeldOut, ...]:
    """Per edit, its pass and its control's, each scoring the folds that read it; of each, the rows the output rows
    read on it (``edits.held``). The unedited pass's measured rows, the edited ones' and the controls'."""
    needs, rows = output_needs(plan), edits.measured
    held = (HeldOut(rows, needs).take(base, rows), HeldOut(rows, needs), HeldOut(rows, needs))
    for key in edits.run():
        readers, own = edits.readers(key), edits.held.get(key, np.zeros(0, np.int64))
        for field, edit, out in (("after", edits.erasers[key], held[1]), ("control", edits.controls[key], held[2])):
            run = forward.run((edit,))
            for label, folds in readers.items():
                probes[label].score(field, run, folds)
            out.take(run, own)
    return held


def _one_layer(plan: InterventionPlan, forward, base, head, edits: LayerEdits) -> list[dict]:
    layer = edits.layer
    roles = {name: "edited" if name == plan.label else "amnesic" for name in plan.tasks}
    probes = {name: LabelProbes(plan, task, roles[name], plan.above[layer]) for name, task in plan.tasks.items()}
    unedited, edited, controlled = _pass_pairs(plan, forward, base, edits, probes)
    records = [record for probe in probes.values() for record in probe.records()]
    records.append(drift_row(plan, unedited, edited, controlled))
    records += bundle_rows(plan, unedited, edited, controlled)
    if head is not None:
        records.append(loss_row(plan, forward, head, edits))
    for record in records:
        record.update(edit=plan.config.edit, edit_layer=layer, rank=edits.rank)
    return records


@keywords_of(InterveneConfig)  # from Python, a message names the keyword given (at=9), the CLI the flag
def intervene(config: InterveneConfig | str | None = None, **options) -> InterveneResult:
    """Run ``featx intervene`` (see ``InterveneConfig``); ``--edit steer`` runs the steering dose-response.
    Every input is checked, and every edit fitted or resolved, before the model is loaded."""
    from .forward import Forward

    config = InterveneConfig.build(config, **options)
    started = time.perf_counter()
    plan = make_plan(config)  # every check that needs the file, the bundle or the model's config
    if config.write:  # as featx erase and neurons: nothing replaced without --overwrite, the figure's included
        written = [plan.output.with_name(plan.output.name + end) for end in (".csv", ".json", ".png")]
        refuse_existing(written, config.overwrite)
        check_writable(written[0])
    if config.edit == "steer":
        from .contrast import answer_dose_response, prepare_contrast
        from .steering import dose_response

        contrast = prepare_contrast(plan)  # --answers: checked before the model is loaded
        steering = steering_rows(plan)  # every direction computed, on rows apart from those it steers
        if contrast is not None:
            return _written(answer_dose_response(plan, Forward(plan), contrast, steering, started), config)
        return _written(dose_response(plan, Forward(plan), steering, started), config)
    notes: list[str] = list(plan.notes)
    edits = _edits(plan, notes)  # the probed labels' tasks: plan.tasks, loaded once by make_plan
    model, why = lm_model(plan)
    if model is None:
        notes.append(f"LM loss skipped: {why}")
    forward = Forward(plan)
    head = head_of(model, forward, plan) if model is not None else None
    base = forward.run()
    note = reproduction_note(plan, base)
    notes += [note] if note else []
    records = []
    for layer in plan.at:
        records += _one_layer(plan, forward, base, head, edits[layer])
    table = _holm(pd.DataFrame(records))[TABLE_COLUMNS]
    meta = _meta(plan, forward, notes, started, edits)
    return _written(InterveneResult(table, meta, plan.output, notes), config)


def _written(result: InterveneResult, config: InterveneConfig) -> InterveneResult:
    if config.write:
        result.write()
    return result


def _meta(plan: InterventionPlan, forward, notes: list[str], started: float, edits: dict[int, LayerEdits]) -> dict:
    config = plan.config
    return {
        "kind": "intervene",
        "features_file": str(plan.features.resolve()),
        "model": plan.provenance.model,
        "model_sha256": plan.provenance.model_sha256,
        "model_folder": str(plan.provenance.model_folder),
        "label": plan.label,
        "amnesic_labels": list(plan.amnesic),
        "edit": config.edit,
        "method": config.method if config.edit == "erase" else None,
        "bundle": str(config.bundle) if config.bundle is not None else None,
        "at": list(plan.at),
        **({"site": config.site} if config.site else {}),  # a run without --site writes what it wrote before
        "pooling": plan.pooling,
        "seed": config.seed,
        "n_bootstrap": config.n_bootstrap,  # the resamples of the probe rows' intervals on a split
        **(plan.group_meta or {}),  # --group: as featx probe's meta
        "control": "random:RANK@L (RANK the edit's rank, --seed), centred on the edit's mean",
        # results of earlier featx lack this key: their control was uncentred (featx report says so)
        "control_centring": "edit" if config.edit != "project" else "none (as the edit)",
        "implementation": forward.loaded.implementation,
        "n_rows": len(forward.texts),
        "passes": {  # the model's passes over the file's rows, every edited layer's together (the LM loss's aside)
            "unedited": 1,
            "edited": sum(len(found.run()) for found in edits.values()),
            "control": sum(len(found.controls) for found in edits.values()),
        },
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 3),
    }


__all__ = ["intervene"]
