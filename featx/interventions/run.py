"""``intervene``: the whole experiment of ``featx intervene`` in one call. Per edited layer: the edit (fitted or
taken from the bundle) and the random control of its rank, one unedited, one edited and one control pass over the
file's rows, then the table: the label's and the other columns' probes at every stored layer from the edit up
(before, after, control; paired tests Holm-adjusted per label and edit over the layers), the last layer's drift,
the bundle's flips and accuracy, and the LM loss where the checkpoint has a head. ``--edit steer`` runs the
dose-response instead (``steering.py``)."""

from __future__ import annotations

import time

import pandas as pd

from ..probing import SIGNIFICANCE_ALPHA
from ..safe_files import check_writable
from .config import InterveneConfig
from .edits import control_map, edit_map, steering_directions
from .loss import head_of, lm_model, loss_row
from .outputs import bundle_rows, drift_row, reproduction_note
from .plan import InterventionPlan, make_plan
from .probes import label_rows
from .result import TABLE_COLUMNS, InterveneResult


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


def _edits(plan: InterventionPlan, notes: list[str]) -> dict:
    """Each edited layer's edit and its control (fitted or resolved before the model is loaded)."""
    edits = {}
    for layer in plan.at:
        edit = edit_map(plan, layer)
        rank = int(edit.left.shape[1])
        if rank == 0:
            notes.append(f"the edit at layer {layer} has rank 0 (it removes nothing); its control is the identity")
        edits[layer] = (edit, control_map(plan, layer, rank))
    return edits


def _one_layer(plan: InterventionPlan, forward, base, head, layer: int, maps: tuple) -> list[dict]:
    edit, control = maps
    edited, controlled = forward.run((edit,)), forward.run((control,))
    records = []
    for name, role in ((plan.label, "edited"), *((other, "amnesic") for other in plan.amnesic)):
        records += label_rows(plan, name, role, plan.above[layer], edited, controlled)
    records.append(drift_row(plan, base, edited, controlled))
    records += bundle_rows(plan, base, edited, controlled)
    if head is not None:
        records.append(loss_row(plan, forward, head, edit, control))
    for record in records:
        record.update(edit=plan.config.edit, edit_layer=layer, rank=int(edit.left.shape[1]))
    return records


def intervene(config: InterveneConfig | str | None = None, **options) -> InterveneResult:
    """Run ``featx intervene`` (see ``InterveneConfig``); ``--edit steer`` runs the steering dose-response.
    Every input is checked, and every edit fitted or resolved, before the model is loaded."""
    from .forward import Forward

    config = InterveneConfig.build(config, **options)
    started = time.perf_counter()
    plan = make_plan(config)  # every check that needs the file, the bundle or the model's config
    if config.write:
        check_writable(plan.output.with_name(plan.output.name + ".csv"))
    if config.edit == "steer":
        from .contrast import answer_dose_response, prepare_contrast
        from .steering import dose_response

        contrast = prepare_contrast(plan)  # --answers: checked before the model is loaded
        directions = steering_directions(plan)
        if contrast is not None:
            return _written(answer_dose_response(plan, Forward(plan), contrast, directions, started), config)
        return _written(dose_response(plan, Forward(plan), directions, started), config)
    notes: list[str] = list(plan.notes)
    edits = _edits(plan, notes)
    model, why = lm_model(plan)
    if model is None:
        notes.append(f"LM loss skipped: {why}")
    forward = Forward(plan)
    head = head_of(model, forward) if model is not None else None
    base = forward.run()
    note = reproduction_note(plan, base)
    notes += [note] if note else []
    records = []
    for layer in plan.at:
        records += _one_layer(plan, forward, base, head, layer, edits[layer])
    table = _holm(pd.DataFrame(records))[TABLE_COLUMNS]
    meta = _meta(plan, forward, notes, started)
    return _written(InterveneResult(table, meta, plan.output, notes), config)


def _written(result: InterveneResult, config: InterveneConfig) -> InterveneResult:
    if config.write:
        result.write()
    return result


def _meta(plan: InterventionPlan, forward, notes: list[str], started: float) -> dict:
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
        **(plan.group_meta or {}),  # --group: as featx probe's meta
        "control": "random:RANK@L (RANK the edit's rank, --seed)",
        "implementation": forward.loaded.implementation,
        "n_rows": len(forward.texts),
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 3),
    }


__all__ = ["intervene"]
