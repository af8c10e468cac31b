"""``featx intervene --edit steer`` never measures the dose-response on a row its steering direction was computed
from. The class-mean direction (the bundle does not read the edited layer): with a split, that of the train split's
rows, measured on the test split's rows only; without one, cross-fitted on ``--edit erase``'s folds (``--group``:
of whole groups), each fold's rows run through the model once per alpha and direction along the class-mean
difference of the other folds' rows, beside one seeded random direction. The bundle's own direction steers the test
split's rows of a file with one (featx fit never trains on them), else every row, with a note when the bundle was
fitted on this file's corpus."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from support.interventions import planted_rows
from support.tiny import write_csv

import featx
import featx.probing
from featx.errors import InputError
from featx.interventions import InterveneConfig, format_table, forward, intervene, make_plan
from featx.interventions.steer_rows import steering_rows

SLOW = pytest.mark.slow  # each run: 1 + 2 x alphas passes of the tiny BERT over the rows (~1 s)
STEER = dict(edit="steer", toward="dogs", at="1", alphas="0,4", write=False)
STEER_POS = {**STEER, "toward": "pos"}  # the grouped file's class


def _bundle(path, folder, label: str, layer: str):
    output = folder / f"{label}-{layer}.featx"
    featx.fit(path, label=label, layer=layer, pooling="mean", output=output, folds=3)
    return output


@pytest.fixture(scope="module")
def unsplit(tiny_model, tmp_path_factory):
    """The planted corpus without its split column (80 rows, 'animal' planted in the text), and a bundle of
    'animal' at layer 2: steering at layer 1 takes the class-mean direction."""
    folder = tmp_path_factory.mktemp("steer-unsplit")
    rows = [row[:3] for row in planted_rows()]
    corpus = write_csv(folder / "corpus.csv", rows, header=("text", "animal", "other"))
    path = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=path, poolings="mean", progress=False)
    return path, _bundle(path, folder, "animal", "2")


@pytest.fixture(scope="module")
def grouped_bundle(grouped_file, tmp_path_factory):
    return _bundle(grouped_file, tmp_path_factory.mktemp("steer-grouped"), "label", "2")


def _runs(monkeypatch) -> list:
    """Every forward pass a run makes: ``(its edits, the file rows it ran, its embeddings)``."""
    runs: list = []
    original = forward.Forward.run

    def spy(self, maps=(), config=None, rows=None):
        embeddings = original(self, maps, config, rows)
        every = np.arange(len(self.texts)) if rows is None else np.asarray(rows)
        runs.append((tuple(maps), every, embeddings))
        return embeddings

    monkeypatch.setattr(forward.Forward, "run", spy)
    return runs


def _class_mean(path, label: str, toward: str, rows: np.ndarray, layer: int = 1) -> np.ndarray:
    """The unit class-mean difference (``toward`` minus the rest) of the stored vectors of the file ``rows``."""
    with featx.open(path) as features:
        X = features.features("mean", layer).astype(np.float64)[rows]
        names = np.asarray(features.label_names(label))[features.labels(label)[rows]]
    vector = X[names == toward].mean(axis=0) - X[names != toward].mean(axis=0)
    return vector / np.linalg.norm(vector)


def _task(path, label: str, group=None):
    with featx.open(path) as features:
        return featx.probing.load_task(features, label, 5, 0, group)  # --edit erase's folds


def _random(width: int) -> np.ndarray:
    random = np.random.default_rng(0).standard_normal(width)
    return random / np.linalg.norm(random)


@SLOW
def test_without_a_split_each_fold_is_steered_along_the_other_folds_class_mean(unsplit, monkeypatch):
    path, bundle = unsplit
    runs = _runs(monkeypatch)
    result = intervene(path, bundle=bundle, **STEER)
    task = _task(path, "animal")
    assert not task.plan.is_split
    random = _random(32)
    for train, test in task.plan.folds:
        fitted, scored = task.kept[train], task.kept[test]
        assert not np.intersect1d(fitted, scored).size
        direction = _class_mean(path, "animal", "dogs", fitted)  # the fold's own: the other folds' rows only
        mine = [(maps, rows) for maps, rows, _ in runs if np.array_equal(rows, scored)]
        assert len(mine) == 1 + 2 * 2  # unedited, then per alpha the fold's direction and the random one
        shifts = [maps[0].shift for maps, _ in mine if maps]
        expected = [alpha * vector for alpha in (0.0, 4.0) for vector in (direction, random)]
        for shift, wanted in zip(shifts, expected, strict=True):
            np.testing.assert_allclose(shift, wanted, atol=1e-12)
    assert len(runs) == 5 * (1 + 2 * 2)  # one pass over the 80 rows per alpha and direction, fold by fold
    assert result.meta["n_rows"] == 80 and result.meta["runs_per_pass"] == 5
    assert result.meta["passes"] == {"unedited": 1, "steered": 4}
    assert "of the other folds' rows (5 folds)" in result.meta["direction_source"]
    assert any(note.startswith("the file has no split: the label's rows are in 5 folds") for note in result.notes)
    zero = result.table[result.table.alpha == 0]
    assert (zero.moved == 0).all() and (zero.score_change == 0).all()  # each fold's rows in the same batches


@SLOW
def test_with_a_split_only_the_test_rows_are_measured(planted_features, animal_bundle, monkeypatch):
    """The planted file's split: the direction of the train split's rows, every pass over its 32 test rows."""
    runs = _runs(monkeypatch)
    result = intervene(planted_features, bundle=animal_bundle, **STEER)
    with featx.open(planted_features) as features:
        split = np.asarray(features.split)
    test, train = np.flatnonzero(split == "test"), np.flatnonzero(split == "train")
    assert len(runs) == 1 + 2 * 2 and all(np.array_equal(rows, test) for _, rows, _ in runs)
    direction = _class_mean(planted_features, "animal", "dogs", train)
    np.testing.assert_allclose(runs[-2][0][0].shift, 4.0 * direction, atol=1e-12)  # alpha 4, the probe direction
    assert result.meta["n_rows"] == len(test) == 32 and set(result.table.n_rows) <= set(range(33))
    assert result.meta["direction_source"].endswith("at layer 1 of the train split's rows")
    assert result.meta["measured_rows"] == "the test split's labelled rows (32)"
    assert any(note.startswith("the file has a split: the steering direction") for note in result.notes)
    assert "; measured on the test split's labelled rows (32); probe / random" in format_table(result)
    moved = result.table[(result.table.alpha == 4) & (result.table.direction == "probe")].iloc[0]
    assert moved.moved > 0.5  # the planted label: the train rows' direction moves the test rows


def test_groups_are_never_split_across_the_steering_folds(grouped_file, grouped_bundle):
    """``--group doc`` (120 rows in 24 documents, no split): each fold's direction is the class mean of the other
    folds' rows, none of which shares a document with the fold's rows."""
    plan = make_plan(InterveneConfig(features=grouped_file, bundle=grouped_bundle, group="doc", **STEER_POS))
    steering = steering_rows(plan)
    task = _task(grouped_file, "label", "doc")
    groups = task.file_groups(120)
    assert len(steering.parts) == 5 and np.array_equal(np.sort(steering.rows), task.kept)
    for rows, direction in steering.parts:
        others = np.setdiff1d(task.kept, rows)
        assert not np.intersect1d(groups[rows], groups[others]).size  # no document on both sides
        np.testing.assert_allclose(direction, _class_mean(grouped_file, "label", "pos", others), atol=1e-9)
    np.testing.assert_array_equal(steering.groups(plan), plan.row_groups[steering.rows])
    assert "(5 folds by whole groups of doc)" in steering.source


@SLOW
def test_grouped_intervals_take_the_groups_of_the_measured_rows(grouped_file, grouped_bundle, monkeypatch):
    from featx.interventions import stats, steering

    calls: list = []

    def mean_interval(values, groups=None):
        calls.append((len(values), groups))
        return stats.mean_interval(values, groups)

    monkeypatch.setattr(steering, "mean_interval", mean_interval)
    result = intervene(grouped_file, bundle=grouped_bundle, group="doc", **STEER_POS)
    plan = make_plan(InterveneConfig(features=grouped_file, bundle=grouped_bundle, group="doc", **STEER_POS))
    expected = plan.row_groups[steering_rows(plan).rows]
    assert len(calls) == 4 and all(np.array_equal(groups, expected) for _, groups in calls)
    assert (result.meta["group"], result.meta["n_groups"]) == ("doc", 24)
    assert "by whole groups of doc" in format_table(result).splitlines()[0]
    assert any(note.startswith("the dose-response's intervals take the groups of group='doc'") for note in result.notes)


def test_the_bundles_own_direction_steers_the_test_rows_of_a_split(planted_features, tmp_path):
    """A bundle reading the edited layer: its direction, and with the file's split only the test split's rows
    (featx fit never trained the bundle on them); no note of rows it was fitted on."""
    from featx.interventions.edits import bundle_direction

    bundle = _bundle(planted_features, tmp_path, "animal", "1")
    plan = make_plan(InterveneConfig(features=planted_features, bundle=bundle, **STEER))
    with featx.open(planted_features) as features:
        test = np.flatnonzero(np.asarray(features.split) == "test")
    steering = steering_rows(plan)
    ((rows, direction),) = steering.parts
    np.testing.assert_array_equal(rows, test)
    shift = bundle_direction(plan)
    np.testing.assert_allclose(direction, shift / np.linalg.norm(shift))
    assert steering.source == "the bundle's direction toward dogs at layer 1"
    assert steering.measured == "the test split's rows (32)"
    assert steering.notes[0].startswith("the file has a split: the dose-response along the bundle's direction")
    assert not any("fitted (featx fit) on this file's corpus" in note for note in plan.notes)


def test_the_bundles_own_direction_steers_every_row_without_a_split(unsplit, tmp_path):
    """No split: every row of the file, and a note that the bundle was fitted on this file's corpus (its training
    rows are among those measured)."""
    path, _ = unsplit
    bundle = _bundle(path, tmp_path, "animal", "1")
    plan = make_plan(InterveneConfig(features=path, bundle=bundle, **STEER))
    steering = steering_rows(plan)
    ((rows, _),) = steering.parts
    np.testing.assert_array_equal(rows, np.arange(80))
    assert steering.measured == "every row (80)" and steering.notes == ()
    assert any("fitted (featx fit) on this file's corpus: its direction toward dogs" in note for note in plan.notes)


def test_a_class_mean_direction_read_by_a_bundle_fitted_on_the_measured_rows_says_so(
    unsplit, planted_features, animal_bundle
):
    """No split: the class-mean direction is cross-fitted, but the bundle whose score reads the dose-response was
    fitted (featx fit) on this file's corpus, every measured row among its training rows: a note says so, as for the
    bundle's own direction. With a test split, the measured rows are test rows the bundle never saw: no note."""
    path, bundle = unsplit
    plan = make_plan(InterveneConfig(features=path, bundle=bundle, **STEER))
    seen = [note for note in plan.notes if "fitted (featx fit) on this file's corpus" in note]
    assert len(seen) == 1 and "cross-fitted" in seen[0] and "the rows the dose-response is measured on" in seen[0]
    split = make_plan(InterveneConfig(features=planted_features, bundle=animal_bundle, **STEER))
    assert not any("fitted (featx fit) on this file's corpus" in note for note in split.notes)


def test_which_direction_steers():
    from featx.interventions.bundle_checks import reads_steered_layer

    bundle = SimpleNamespace(layers=[1, 2], spec=SimpleNamespace(kind="cat"))
    at = dict(features="x.h5", bundle="b.featx", edit="steer", toward="dogs")
    assert reads_steered_layer(bundle, InterveneConfig(at="1", **at))
    assert not reads_steered_layer(bundle, InterveneConfig(at="1", site="ffn", **at))  # a site: the class mean
    assert not reads_steered_layer(bundle, InterveneConfig(at="0", **at))
    stack = SimpleNamespace(layers=[1], spec=SimpleNamespace(kind="stack"))
    assert not reads_steered_layer(stack, InterveneConfig(at="1", **at))
    assert not reads_steered_layer(None, InterveneConfig(at="1", **at))


@SLOW
def test_the_bundle_path_is_a_plain_steered_pass_of_the_test_rows(planted_features, tmp_path):
    """The bundle's own direction: the dose-response of the test rows' pass, by hand (``Forward.run`` of those rows
    with the steering edit), number for number."""
    from featx.interventions.edits import steer_map
    from featx.interventions.forward import Forward, bundle_matrix

    bundle_path = _bundle(planted_features, tmp_path, "animal", "1")
    result = intervene(planted_features, bundle=bundle_path, **STEER)
    plan = make_plan(InterveneConfig(features=planted_features, bundle=bundle_path, **STEER))
    ((test, direction),) = steering_rows(plan).parts
    model, bundle = Forward(plan), plan.bundle
    column = bundle.classes.index("dogs")

    def read(maps=()):
        X = bundle_matrix(model.run(maps, rows=test), bundle)
        return np.asarray(bundle.predict_features(X)), np.asarray(bundle.scores_features(X))[:, column]

    predicted, score = read()
    candidates = predicted != "dogs"
    table = result.table.set_index(["alpha", "direction"])
    for name, vector in (("probe", direction), ("random", _random(32))):
        after, after_score = read((steer_map(plan, vector, 4.0),))
        row = table.loc[(4.0, name)]
        assert row.moved == pytest.approx(np.mean(after[candidates] == "dogs"))
        assert row.score_change == pytest.approx(np.mean(after_score - score), abs=1e-9)
        assert row.n_rows == candidates.sum()
    assert len(test) == 32 and result.meta["n_rows"] == 32 and result.meta["runs_per_pass"] == 1


@SLOW
def test_a_pass_over_some_rows_gives_their_rows_of_a_pass_over_every_row(planted_features, animal_bundle):
    """Each fold's rows run apart: their features equal those of a plain pass over the whole file within 1e-4."""
    from featx.interventions.forward import Forward

    plan = make_plan(InterveneConfig(features=planted_features, bundle=animal_bundle, **STEER))
    model = Forward(plan)
    every = model.run().array(2, "mean")
    rows = np.array([3, 17, 18, 40, 41, 42, 79])
    some = model.run(rows=rows).array(2, "mean")
    assert float(np.abs(some - every[rows]).max()) <= 1e-4 * float(np.abs(every).max())


def test_a_fold_without_a_row_of_the_class_is_refused_before_any_forward_pass(
    grouped_file, grouped_bundle, tmp_path, no_forward
):
    """'rare': pos on one document's rows only, neg elsewhere. By whole documents, the fold holding that document
    has no pos row left to take the class mean from: one line, before the model is loaded."""
    import shutil

    path = tmp_path / "feats.h5"
    shutil.copy(grouped_file, path)
    with featx.open(path) as features:
        ids, docs = list(features.ids), np.asarray(features.label_names("doc"))[features.labels("doc")]
    labels = tmp_path / "labels.csv"
    rare = ["pos" if doc == "d5" else "neg" for doc in docs]
    labels.write_text("id,rare\n" + "".join(f"{i},{value}\n" for i, value in zip(ids, rare, strict=True)))
    featx.probing.add_labels(path, labels)
    with pytest.raises(InputError, match=r"toward='pos': the training rows of fold \d hold no row of pos") as error:
        intervene(path, label="rare", bundle=grouped_bundle, group="doc", **STEER_POS)
    assert "\n" not in error.value.message
