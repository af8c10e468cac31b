"""``featx intervene --edit erase`` never scores an after probe on rows its eraser saw. Under cross-validation (a file
without a split) each fold's after probes read a pass edited by an eraser fitted on that fold's training rows only,
as ``featx erase`` fits its eraser inside every training part (the amnesic labels on their own folds, with the edited
label's values; with ``--group``, folds of whole groups); a split file still runs one edited pass, its eraser fitted
on the train split, that every probe reads, and gives the table it gave. A bundle's span (``--edit project|mean``)
is featx fit's, fitted on its own rows: a note says when those are the rows the probes are scored on."""

from __future__ import annotations

import numpy as np
import pytest

import featx
import featx.probing
from featx.interventions import forward, intervene

SLOW = pytest.mark.slow  # each run: a dozen passes of the tiny BERT and up to 30 probe fits (~1 s)
QUICK = dict(at="2", loss="no", n_bootstrap=100, write=False)  # the top layer: one layer of probes


class Spy:
    """What a run fitted and ran: each eraser with the file rows it was fitted on (found from the stored layer-2
    vectors it was handed), each pass with its edits, and each probe fit with its matrix and fold."""

    def __init__(self, monkeypatch, path):
        with featx.open(path) as features:
            self.stored = features.features("mean", 2)
        rows = {vector.tobytes(): row for row, vector in enumerate(self.stored)}
        assert len(rows) == len(self.stored)  # every row's vector tells the row
        self.erasers, self.passes, self.fits = [], [], []
        fit_eraser, run, fits = featx.probing.fit_eraser, forward.Forward.run, featx.probing.run_linear_tasks

        def spy_eraser(method, X, *args, **kwargs):
            eraser = fit_eraser(method, X, *args, **kwargs)
            self.erasers.append((eraser, np.array(sorted(rows[vector.tobytes()] for vector in X))))
            return eraser

        def spy_run(forward_self, maps=(), config=None):
            embeddings = run(forward_self, maps, config)
            self.passes.append((tuple(maps), embeddings))
            return embeddings

        def spy_fits(name, X, labels, train, test, *args):
            self.fits.append((X, train, test))
            return fits(name, X, labels, train, test, *args)

        monkeypatch.setattr(featx.probing, "fit_eraser", spy_eraser)  # what the interventions import
        monkeypatch.setattr(forward.Forward, "run", spy_run)
        monkeypatch.setattr(featx.probing, "run_linear_tasks", spy_fits)

    def eraser_of(self, edit):
        found = [
            (eraser, rows)
            for eraser, rows in self.erasers
            if np.array_equal(edit.left, eraser.left) and np.array_equal(edit.mean, eraser.mean)
        ]
        assert len(found) == 1
        return found[0]

    def after_fits(self, tasks: dict, layers) -> list[tuple]:
        """``(label, fold, layer, fitting rows of the eraser of the pass read)`` of every probe fit on an edited
        pass: the fold found by its rows, the pass and layer by the matrix."""
        edited = [(maps[0], run) for maps, run in self.passes if maps and maps[0].intervention.kind == "erase"]
        found = []
        for X, train, test in self.fits:
            (name, index), *_ = [
                (name, k)
                for name, task in tasks.items()
                for k, (fold_train, fold_test) in enumerate(task.plan.folds)
                if np.array_equal(train, fold_train) and np.array_equal(test, fold_test)
            ]
            kept = tasks[name].kept
            for edit, run in edited:
                for layer in layers:
                    if np.array_equal(X, run.array(layer, "mean")[kept]):
                        found.append((name, index, layer, self.eraser_of(edit)[1]))
        return found


def _tasks(path, names, group=None) -> dict:
    with featx.open(path) as features:
        return {name: featx.probing.load_task(features, name, 5, 0, group) for name in names}


@SLOW
@pytest.mark.parametrize("grouped", [False, True], ids=["folds", "group"])
def test_no_fold_is_scored_on_rows_its_eraser_saw(grouped, request, monkeypatch):
    """Without --group: the label and the amnesic 'topic' of ``tiny_features`` (80 rows, no split); with --group
    doc: the planted groups' label (120 rows in 24 documents, no split)."""
    path = request.getfixturevalue("grouped_file" if grouped else "tiny_features")
    names, group = (("label",), "doc") if grouped else (("label", "topic"), None)
    spy = Spy(monkeypatch, path)
    result = intervene(path, label="label", amnesic=",".join(names[1:]) or "none", group=group, **QUICK)
    tasks = _tasks(path, names, group)
    main = tasks["label"]
    seen = spy.after_fits(tasks, (2,))  # every fold's after probe read an edited pass, once:
    assert sorted((name, k) for name, k, _, _ in seen) == [(name, k) for name in sorted(names) for k in range(5)]
    for name, index, _, fitted in seen:
        train, test = tasks[name].plan.folds[index]
        rows = tasks[name].kept[train]
        assert not np.intersect1d(fitted, tasks[name].kept[test]).size  # the leak: it saw the fold's test rows
        np.testing.assert_array_equal(fitted, np.sort(rows[np.isin(rows, main.kept)]))  # its training rows
        if grouped:  # and no group of the fold's test rows
            groups = main.file_groups(len(spy.stored))
            assert not np.intersect1d(groups[fitted], groups[tasks[name].kept[test]]).size
    # beside the folds' erasers, the one fitted on every labelled row (the rank column's), whose pass runs only for
    # unlabelled rows (the drift and loss rows read each labelled row on its fold's pass): this file has none
    assert any(np.array_equal(rows, main.kept) for _, rows in spy.erasers)
    n_erasers = len({rows.tobytes() for _, rows in spy.erasers})
    assert n_erasers == 1 + 5 * len(names)
    assert result.meta["passes"]["edited"] == result.meta["passes"]["control"] == 5 * len(names)  # a control each
    assert any(note.startswith("the file has no split: each fold's after") for note in result.notes)
    _check_fold_passes(spy)


def _check_fold_passes(spy: Spy) -> None:
    """Each fold's edited pass holds at the edited layer its eraser applied to the unedited pass (mean pooling and
    an affine edit commute), within 1e-4: the hooks' arithmetic, which tests/extraction/edits checks against
    transformers for any edit, applied with the fold's own eraser."""
    (base,) = [run for maps, run in spy.passes if not maps]
    reference = base.array(2, "mean")
    scale = float(np.abs(reference).max())
    for maps, run in spy.passes:
        if maps and maps[0].intervention.kind == "erase":
            eraser, _ = spy.eraser_of(maps[0])
            gap = float(np.abs(run.array(2, "mean") - eraser(reference)).max())
            assert gap <= 1e-4 * scale


@SLOW
def test_a_split_file_runs_one_edited_pass_and_the_table_it_gave(erased_at_1, planted_features):
    """The planted file has a split: one eraser, fitted on the train split, one edited and one control pass, every
    probe (the label's and the amnesic 'other') reading them: the after and control columns are those of a probe
    trained on the train rows and scored on the test rows of those two passes, computed here by hand."""
    from featx.extraction import EditMap, Intervention
    from featx.interventions import InterveneConfig, make_plan
    from featx.interventions.edits import control_map
    from featx.interventions.forward import Forward
    from featx.probing import DEFAULT_CS, fit_eraser, run_linear_tasks, summarise

    assert erased_at_1.meta["passes"] == {"unedited": 1, "edited": 1, "control": 1}
    tasks = _tasks(planted_features, ("animal", "other"))
    main = tasks["animal"]
    train = main.training_rows()
    with featx.open(planted_features) as features:
        eraser = fit_eraser("leace", features.features("mean", 1)[main.kept[train]], main.y[train], 2, 50, 0)
    edit = EditMap(Intervention("erase", 1), eraser.mean, eraser.left, eraser.right, np.zeros(len(eraser.mean)))
    plan = make_plan(InterveneConfig(features=planted_features, label="animal", at="1", write=False))
    model = Forward(plan)
    assert model.config.progress is plan.config.progress is True  # a bar over each pass's rows unless -q
    control = control_map(plan, 1, edit)  # centred as the eraser is, on the train split's mean, with its rank
    np.testing.assert_array_equal(control.mean, eraser.mean)
    assert control.left.shape == eraser.left.shape
    passes = model.run((edit,)), model.run((control,))
    table = erased_at_1.table.set_index(["name", "layer"])
    for name, task in tasks.items():
        (fold_train, fold_test), dev = task.plan.folds[0], task.plan.dev[0]
        for layer in (1, 2):
            for key, run in zip(("after", "control"), passes, strict=True):
                X = run.array(layer, "mean")[task.kept]
                fold = run_linear_tasks("logreg", X, [task.y], fold_train, fold_test, dev, 2, DEFAULT_CS, False, 0)
                row = summarise(task.plan, task.y, fold, 2, 200, 0)
                got = table.loc[(name, layer), [key, f"{key}_low", f"{key}_high"]].to_numpy(float)
                np.testing.assert_allclose(got, [row["accuracy"], row["accuracy_low"], row["accuracy_high"]])


def test_a_bundle_fitted_on_the_scored_rows_is_said_in_a_note(tiny_features, planted_features):
    """``--edit project|mean`` with a bundle featx fit made from this file's corpus (the fingerprints' corpus sha256)
    when the file has no split: the bundle saw every labelled row, the rows the probes after the edit are scored
    on. Not said of another corpus, of a file with a split (its test rows are not the bundle's), nor of --edit
    erase (whose erasers are fitted per fold)."""
    from types import SimpleNamespace

    from featx.interventions import InterveneConfig
    from featx.interventions.bundle_checks import seen_rows_note

    def bundle(fingerprint):
        return SimpleNamespace(info={"features_file": {"fingerprint": fingerprint}})

    for path, said in ((tiny_features, True), (planted_features, False)):
        project = InterveneConfig(features=path, edit="project", bundle="b.featx", at="1")
        with featx.open(path) as features:
            note = seen_rows_note(bundle(features.fingerprint), project, features)
            assert (note is not None and "scored on" in note and "no split" in note) == said
            assert seen_rows_note(bundle('{"corpus_sha256": "another"}'), project, features) is None
            erase = InterveneConfig(features=path, at="1", bundle="b.featx")
            assert seen_rows_note(bundle(features.fingerprint), erase, features) is None


def test_an_amnesic_label_cross_validated_beside_a_split_gets_erasers_of_its_own(
    planted_features, tmp_path, monkeypatch
):
    """The planted file has a split, and 'trainonly' ('other' on the train rows, missing on the test rows) has no
    labelled test row: its probes are cross-validated over train rows, every one of which the train split's eraser
    saw. Its folds read erasers fitted on their own training rows (a note says so); the edited label's probe, on
    the split, still reads the one eraser of the train split."""
    import shutil

    from featx.interventions import InterveneConfig, make_plan
    from featx.interventions.run import _edits

    path = tmp_path / "feats.h5"
    shutil.copy(planted_features, path)
    with featx.open(path) as features:
        ids, split = list(features.ids), np.asarray(features.split)
        other = np.asarray(features.label_names("other"))[features.labels("other")]
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "id,trainonly\n"
        + "".join(f"{i},{o if s == 'train' else ''}\n" for i, o, s in zip(ids, other, split, strict=True))
    )
    featx.probing.add_labels(path, labels)
    spy = Spy(monkeypatch, path)
    plan = make_plan(InterveneConfig(features=path, label="animal", amnesic="trainonly", at="2", write=False))
    tasks = plan.tasks
    assert tasks["animal"].plan.is_split and not tasks["trainonly"].plan.is_split
    notes: list[str] = []
    edits = _edits(plan, notes)[2]
    for name, keys in edits.folds.items():
        for index, key in enumerate(keys):
            _, fitted = spy.eraser_of(edits.erasers[key])
            scored = tasks[name].kept[tasks[name].plan.folds[index][1]]
            assert not np.intersect1d(fitted, scored).size  # the leak: the train split's eraser saw them all
    assert edits.folds["animal"] == [edits.key]  # the split's own eraser, fitted on the train split
    np.testing.assert_array_equal(spy.eraser_of(edits.edit)[1], np.flatnonzero(split == "train"))
    assert len(set(edits.folds["trainonly"])) == 5
    assert any(note.startswith("'trainonly': no labelled test row") for note in notes)


def test_each_output_row_and_control_reads_an_edit_that_never_saw_the_row(tiny_features, planted_features):
    """The drift, bundle and loss rows read each row on the pass of an eraser not fitted on it: without a split, each
    labelled row on its fold's eraser (the fold that scores it); with one, the rows the train split's eraser was not
    fitted on. Each edit's control is its own: its rank, centred on its mean (the mean of its fitting rows)."""
    from featx.interventions import InterveneConfig, make_plan
    from featx.interventions.passes import layer_edits

    for path, label, layer in ((tiny_features, "label", 2), (planted_features, "animal", 1)):
        plan = make_plan(InterveneConfig(features=path, label=label, amnesic="none", at=str(layer), write=False))
        edits, main = layer_edits(plan, layer), plan.tasks[label]
        for key, rows in edits.held.items():
            fitted = np.frombuffer(key, dtype=main.kept.dtype)
            assert len(rows) and not np.intersect1d(fitted, rows).size  # no row read on an eraser that saw it
            np.testing.assert_array_equal(edits.controls[key].mean, edits.erasers[key].mean)
            assert edits.controls[key].left.shape == edits.erasers[key].left.shape
        if main.plan.is_split:
            train = main.kept[main.training_rows()]
            every = np.arange(len(edits.measured) + len(train))
            np.testing.assert_array_equal(edits.measured, np.setdiff1d(every, train))
        else:
            for key, (_, test) in zip(edits.folds[label], main.plan.folds, strict=True):
                np.testing.assert_array_equal(edits.held[key], np.sort(main.kept[test]))
            _check_held_passes(plan, edits, len(main.kept))


def _check_held_passes(plan, edits, n_rows: int) -> None:
    """The measured rows' arrays, each row's from the pass (and the control pass) of the edit that reads it."""
    from types import SimpleNamespace

    from featx.interventions.run import _pass_pairs

    tags = {id(edit): float(k) for k, edit in enumerate([*edits.erasers.values(), *edits.controls.values()])}

    def run(maps=()):
        value = tags[id(maps[0])] if maps else -1.0
        return SimpleNamespace(array=lambda layer, pooling: np.full((n_rows, 2), value))

    probes = {name: SimpleNamespace(score=lambda *args: None) for name in plan.tasks}
    _, edited, controlled = _pass_pairs(plan, SimpleNamespace(run=run), run(), edits, probes)
    top = (max(plan.stored_layers), plan.pooling)
    for key, rows in edits.held.items():
        where = np.searchsorted(edits.measured, rows)
        assert (edited.array(*top)[where] == tags[id(edits.erasers[key])]).all()
        assert (controlled.array(*top)[where] == tags[id(edits.controls[key])]).all()
