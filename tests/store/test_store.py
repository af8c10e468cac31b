"""The store's row strings: NUL (which HDF5 strings cannot hold) and the escape character survive exactly,
through extraction and through the merge of shards."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.store_files import write_store_file
from support.tiny import write_csv

import featx
from featx.errors import IncompleteError, InputError, StoreError
from featx.extraction import ExtractConfig, extract
from featx.extraction.shards.merge import merge
from featx.store import (
    STRING_ESCAPE,
    FeatureFile,
    FeatureWriter,
    partial_path,
    read_strings,
    schema,
    write_strings,
)

TRICKY = ["\x00", STRING_ESCAPE, STRING_ESCAPE + "0", STRING_ESCAPE + "e", "\x000", "a", "\ufffd", "é", " "]


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.lists(st.one_of(st.sampled_from(TRICKY), st.characters(blacklist_categories=("Cs",))), max_size=8).map(
            "".join
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_strings_round_trip(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("strings") / "s.h5"
    with h5py.File(path, "w") as file:
        dataset = write_strings(file, "values", values)
        assert bool(dataset.attrs.get("escaped", False)) == any("\x00" in v or STRING_ESCAPE in v for v in values)
    with h5py.File(path, "r") as file:
        assert read_strings(file["values"]) == values


def test_nul_in_texts_and_ids_is_kept_through_extract_and_merge(tiny_model, tmp_path):
    rows = [
        ("the dog\x00 runs", "pos", "r\x00one"),
        ("a cat sleeps \uffff0", "neg", "r2"),
        ("the bird sings", "pos", "r3"),
        ("no dog runs", "neg", "r4"),
    ]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "id"))
    options = dict(model=str(tiny_model), id_col="id", poolings="mean", progress=False)
    single = extract(ExtractConfig(corpus=corpus, output=tmp_path / "one.h5", **options))
    with featx.open(single.output) as features:
        assert features.texts == [text for text, _, _ in rows] and features.ids == [i for _, _, i in rows]
    for index in range(2):
        extract(ExtractConfig(corpus=corpus, output=tmp_path / "merged.h5", shards=2, shard_index=index, **options))
    merge(tmp_path / "merged.h5")
    with featx.open(tmp_path / "merged.h5") as features:
        assert features.texts == [text for text, _, _ in rows] and features.ids == [i for _, _, i in rows]


@pytest.mark.parametrize("name, read", [("rows/text", "texts"), ("rows/id", "ids"), ("rows/split", "split")])
def test_strings_that_are_not_utf8_are_a_store_error(tmp_path, name, read):
    """A hostile file's string dataset with bytes that are not UTF-8: one StoreError naming the file and the
    dataset, as for any other damage, not a UnicodeDecodeError (featx probe and featx labels read these)."""
    path, _ = write_store_file(tmp_path)
    with h5py.File(path, "r+") as file:
        if name in file:
            del file[name]
        file.create_dataset(name, data=np.array([b"\xff\xfe"] * 10, dtype=object), dtype=h5py.string_dtype("utf-8"))
    with (
        FeatureFile(path) as features,
        pytest.raises(StoreError, match=f"f.h5: dataset '{name}' holds text that is not UTF-8"),
    ):
        getattr(features, read)


@pytest.mark.parametrize("name", [schema.CORPUS_PATH, schema.MODEL, schema.TEXT_COL, schema.FINGERPRINT])
@pytest.mark.parametrize("value", [-1, 2.5, True])
def test_a_text_attribute_that_is_not_text_is_a_store_error(tmp_path, name, value):
    """Provenance attributes featx writes as text are read as paths and names (featx probe opened the recorded
    corpus path, and a number there ended in a TypeError traceback): another type is refused at open."""
    path, _ = write_store_file(tmp_path)
    with h5py.File(path, "r+") as file:
        file.attrs[name] = value
    with pytest.raises(StoreError, match=f"attribute '{name}' is {value!r}, not text"):
        FeatureFile(path)


def test_an_attribute_without_elements_opens_and_as_text_is_refused(tmp_path):
    """An attribute of no elements (an empty dataspace, a zero-length array) failed the size check's HDF5 call with
    a RuntimeError traceback: one featx does not read opens as stored; a text attribute held so is refused."""
    path, _ = write_store_file(tmp_path)
    with h5py.File(path, "r+") as file:
        file.attrs["note"], file.attrs["nothing"] = h5py.Empty("f"), np.zeros(0)
    with FeatureFile(path) as features:
        assert isinstance(features.attrs["note"], h5py.Empty) and features.attrs["nothing"].shape == (0,)
    with h5py.File(path, "r+") as file:
        file.attrs[schema.MODEL] = h5py.Empty("f")
    with pytest.raises(StoreError, match="attribute 'model' is .*, not text"):
        FeatureFile(path)


# -- layout, attributes, partial reads, old files ------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data"
OLD_FILE = DATA / "featx-0.1.0.features.h5"


def test_layout_and_attributes_of_a_written_file(tmp_path):
    path, values = write_store_file(tmp_path)
    import h5py

    with h5py.File(path, "r") as file:
        assert file.attrs[schema.FORMAT] == schema.FORMAT_NAME and file.attrs[schema.SCHEMA] == schema.SCHEMA_VERSION
        assert json.loads(file.attrs[schema.LAYERS]) == [0, 2] and file.attrs[schema.HIDDEN_SIZE] == 4
        assert json.loads(file.attrs[schema.SITES_ATTR]) == {
            "ffn": {"layers": [2], "width": 6, "modules": ["x:output"], "poolings": ["mean", "cls"]}
        }
        assert file["pooled/mean"].shape == (10, 2, 4) and file["pooled/mean"].chunks[1:] == (1, 4)
        assert file["sites/ffn/pooled/cls"].shape == (10, 1, 6) and file["sites/ffn"].attrs["site"] == "ffn"
        assert file["sites/ffn/tokens/states"].shape == (30, 1, 6) and file["tokens/offsets"][-1] == 30
        assert file[schema.ROWS_DONE][0] == 10 and bool(file.attrs[schema.COMPLETE])
        assert file["labels/y"].attrs["column"] == "y"
    with FeatureFile(path) as features:
        assert features.sites == ["hidden", "ffn"] and features.fingerprint == "fp"
        np.testing.assert_array_equal(features.features("cls", 2), values["pooled/cls"][:, 1])
        np.testing.assert_array_equal(features.features("mean", 2, site="ffn"), values["sites/ffn/pooled/mean"][:, 0])
        np.testing.assert_array_equal(features.token_states(2, site="ffn"), values["sites/ffn/tokens/states"][:, 0])
        assert features.label_columns == ["y"] and features.texts[3] == "text 3"
        # the second positional argument is the dtype: rows read as one get a clear error, not numpy's TypeError
        assert features.token_states(2, np.float16, "ffn").dtype == np.float16
        for wrong in (4, "rows", np.int64):
            with pytest.raises(InputError, match=r"token_states\(2, .*\): the second argument is the dtype") as err:
                features.token_states(2, wrong)
            assert "call token_states(layer, dtype=numpy.float32, site='hidden')" in err.value.hint
        # features and concatenated: the same check (featx.store.calls), arguments in another order or one too many
        assert features.features("mean", 2, np.float16, "ffn").dtype == np.float16
        assert features.concatenated("cls", [0, np.int64(2)], dtype=np.float64).shape == (10, 8)
        for call, args, wrong in [
            ("features", ("mean", 2, 5), r"the third argument is the dtype of the features returned .*, not 5"),
            ("features", (2, "mean"), r"the first argument is the pooling .*, not 2"),
            ("features", ("mean", "2"), r"the second argument is the layer .*, not '2'"),
            ("concatenated", ("mean", [2], 5), r"the third argument is the dtype"),
            ("concatenated", ("mean", 2), r"the second argument is the layers .*, not 2"),
            ("concatenated", (2, [0, 2]), r"the first argument is the pooling"),
        ]:
            with pytest.raises(InputError, match=re.escape(f"{call}({', '.join(map(repr, args))}): ") + wrong) as err:
                getattr(features, call)(*args)
            assert err.value.hint.startswith(f"call {call}(pooling, ")
        # a pooling or layer the file does not store: a hint naming what to choose (featx similarity --pooling X)
        for args, wrong, hint in [
            (("X", 2), "pooling 'X' is not stored", "choose a pooling the file stores (mean, cls)"),
            (("mean", 1), "layer 1 is not stored", "choose a stored layer"),
        ]:
            with pytest.raises(InputError, match=wrong) as err:
                features.features(*args)
            assert err.value.hint.startswith(hint), err.value.hint


def test_partial_file_shows_only_its_committed_rows(tmp_path):
    path, values = write_store_file(tmp_path, commit=4)
    assert not path.exists() and partial_path(path).exists()
    with pytest.raises(IncompleteError, match="4 of 10 rows written") as refused:
        FeatureFile(path)
    assert refused.value.hint == "run the same featx extract command again to resume it"  # no flag: fit has none
    with FeatureFile(path, allow_partial=True) as features:
        assert not features.complete and features.n_rows == 4
        np.testing.assert_array_equal(features.features("mean", 0), values["pooled/mean"][:4, 0])
        assert len(features.texts) == 4 and features.token_offsets[-1] == 12
    writer = FeatureWriter.resume(path)
    assert writer.rows_done == 4 and writer.matches("fp") and not writer.matches("fp", merge=True)
    writer.close()


@pytest.mark.parametrize("when", ["is_hdf5", "File"])
def test_a_partial_renamed_into_place_while_it_is_opened_is_a_store_error(tmp_path, monkeypatch, when):
    """A reader that found ``out.h5.partial`` as the extraction renamed it into place: the file is gone by the time
    h5py looks. Said as a StoreError (a reader retries), never h5py's FileNotFoundError (seen in a suite run of
    tests/robustness/test_faults.py's reader beside a writer)."""
    from featx.store import reader

    path, _ = write_store_file(tmp_path, commit=4)
    partial = partial_path(path)
    real = getattr(reader.h5py, when)

    def renamed_first(name, *args, **kwargs):
        if partial.exists():
            partial.rename(path)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(reader.h5py, when, renamed_first)
    if when == "File":  # is_hdf5 looks first, and reads the .partial still there
        monkeypatch.setattr(reader.h5py, "is_hdf5", lambda name: True)
    with pytest.raises(StoreError, match=r"f\.h5\.partial was moved or removed while it was being opened") as error:
        FeatureFile(path, allow_partial=True)
    assert "open it again" in error.value.hint and path.exists()


def test_an_hdf5_file_that_is_not_ours_is_refused(tmp_path):
    import h5py

    with h5py.File(tmp_path / "other.h5", "w") as file:
        file["x"] = np.zeros(3)
    with pytest.raises(StoreError, match="not a featx features file"):
        FeatureFile(tmp_path / "other.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(StoreError, match="is not an HDF5 file"):
        FeatureFile(tmp_path / "text.h5")


def test_a_file_written_by_featx_0_1_reads_unchanged(tmp_path):
    """Checked-in file written by the 0.1.0 layout code (tiny random BERT, hidden + ffn sites, tokens)."""
    with FeatureFile(OLD_FILE) as old:
        assert old.sites == ["hidden", "ffn"] and old.layers == [0, 1, 2] and old.complete
        assert old.poolings == ["cls", "mean", "max", "last", "pooler"] and old.site_poolings("ffn") == old.poolings[:4]
        assert old.features("mean", 2).shape == (12, 32) and old.features("max", 1, site="ffn").shape == (12, 64)
        assert old.token_states(1, site="ffn").shape == (int(old.token_offsets[-1]), 64)
        assert old.label_columns == ["sentiment", "tense"] and old.texts[0] == "the cat loved the film"
        assert np.isfinite(old.features("pooler", 2)).all()


def within_one_step(new: np.ndarray, old: np.ndarray) -> None:
    """Equal up to one representable step of the stored dtype (fp16 here)."""
    step = np.spacing(np.maximum(np.abs(new), np.abs(old)).astype(old.dtype)).astype(np.float64)
    np.testing.assert_array_less(np.abs(new.astype(np.float64) - old.astype(np.float64)), step * 1.0001)


def test_same_request_today_gives_the_0_1_file(tmp_path):
    """Same corpus, same (seeded) tiny model, same options: same fingerprint, and the same features up to one
    fp16 step. The 0.1 file was written on another CPU: oneDNN picks its kernels by instruction set, so an
    fp32 sum can differ in its last bit, which rounding to the stored fp16 shows as one step at most."""
    from support.tiny import build_tiny_bert

    model = build_tiny_bert(tmp_path / "tiny")
    corpus = shutil.copy(DATA / "old_corpus.csv", tmp_path / "old_corpus.csv")
    with FeatureFile(OLD_FILE) as old:
        recorded_model = old.attrs["model_sha256"]
    # The same request: 0.1 ran CPU batches of 8,192 padded tokens by default (1,024 since), and the batch
    # size is part of the fingerprint (resume replays the same batches).
    summary = featx.extract(
        corpus,
        model=str(model),
        output=tmp_path / "new.h5",
        sites="hidden,ffn",
        tokens=True,
        max_tokens=8192,
        progress=False,
    )
    with FeatureFile(OLD_FILE) as old, FeatureFile(summary.output) as new:
        if new.attrs["model_sha256"] != recorded_model:
            pytest.skip("this torch initialises the seeded tiny model differently from the one that wrote the file")
        assert new.fingerprint == old.fingerprint
        for site in old.sites:
            for pooling in old.site_poolings(site):
                for layer in old.site_layers(site):
                    within_one_step(
                        new.features(pooling, layer, site=site, dtype=np.float16),
                        old.features(pooling, layer, site=site, dtype=np.float16),
                    )
            for layer in old.site_layers(site):
                within_one_step(
                    new.token_states(layer, site=site, dtype=np.float16),
                    old.token_states(layer, site=site, dtype=np.float16),
                )


def test_an_interrupt_while_the_lock_is_taken_removes_its_file(tmp_path, monkeypatch):
    """SIGTERM/Ctrl-C between creating the lock file and returning from ``__enter__``: the file this process
    created and locked is removed (it was left behind before), and the next run takes the lock."""
    import fcntl

    from featx.store import OutputLock

    output = tmp_path / "out.h5"
    real_flock = fcntl.flock

    interrupted = []

    def flock_then_interrupt(handle, operation):  # the signal lands just after the lock is taken, once
        real_flock(handle, operation)
        if operation & fcntl.LOCK_EX and not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt

    monkeypatch.setattr(fcntl, "flock", flock_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        OutputLock(output).__enter__()
    monkeypatch.setattr(fcntl, "flock", real_flock)
    assert not (tmp_path / "out.h5.lock").exists()
    with OutputLock(output):
        assert (tmp_path / "out.h5.lock").read_text() == f"featx extract (pid {__import__('os').getpid()})"


def _open_then_interrupt(monkeypatch):
    """Make ``OutputLock._open`` create the file, then be cut short by a signal before it returns a handle."""
    import os

    from featx.store import OutputLock

    def open_then_interrupt(self):
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))
        raise KeyboardInterrupt

    monkeypatch.setattr(OutputLock, "_open", open_then_interrupt)


def test_a_signal_inside_open_after_the_file_was_created_leaves_no_lock_file(tmp_path, monkeypatch):
    """SIGTERM/Ctrl-C after ``_open`` created the lock file but before any handle to it was kept (the window a
    robustness test hit under load: the file stayed behind after exit 143)."""
    from featx.store import OutputLock

    output = tmp_path / "out.h5"
    _open_then_interrupt(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        OutputLock(output).__enter__()
    assert not (tmp_path / "out.h5.lock").exists()


def test_a_signal_inside_open_leaves_a_lock_file_another_run_holds(tmp_path, monkeypatch):
    import fcntl

    from featx.store import OutputLock

    output = tmp_path / "out.h5"
    lock = tmp_path / "out.h5.lock"
    with open(lock, "w") as other:  # another run's lock: a separate open file description holding the flock
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _open_then_interrupt(monkeypatch)
        with pytest.raises(KeyboardInterrupt):
            OutputLock(output).__enter__()
        assert lock.exists()


@pytest.mark.slow
def test_a_lock_held_by_another_process_is_never_removed_by_the_one_refused(tmp_path):
    import subprocess
    import sys

    from featx.errors import StoreError
    from featx.store import OutputLock

    output = tmp_path / "out.h5"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from featx.store import OutputLock\n"
            f"with OutputLock(__import__('pathlib').Path({str(output)!r})):\n"
            "    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="writing"):
            OutputLock(output).__enter__()
        assert (tmp_path / "out.h5.lock").exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(
    ("python", "hint"),
    [
        (False, "free disk space or choose a writable place with -o"),
        (True, "free disk space or choose a writable output path"),
    ],
)
def test_a_derived_file_that_cannot_be_written_names_the_output_as_its_caller_does(tmp_path, python, hint):
    """``featx erase -o`` on the command line, a writable output path from ``featx.probing.erase``."""
    from featx.options import command_line, keywords_of
    from featx.probing import EraseConfig
    from featx.store import write_derived

    output = tmp_path / "missing" / "erased.h5"
    with pytest.raises(StoreError) as raised, keywords_of(EraseConfig) if python else command_line():
        write_derived(tmp_path / "source.h5", output, {"mean": {0: np.zeros((2, 3), np.float32)}}, {"kind": "erasure"})
    assert raised.value.message == f"cannot write {output}: No such file or directory" and raised.value.hint == hint
    assert not output.parent.exists()


@pytest.mark.parametrize("writer", ["derived", "labels"])
def test_a_temporary_file_swapped_for_a_link_is_never_written_through(features_copy, tmp_path, monkeypatch, writer):
    """A derived file (featx erase) and a label add write their temporary HDF5 file through its descriptor: they
    created it, closed it and reopened it by name, so a link planted there meanwhile had h5py truncate (or
    shutil.copyfile overwrite) its target."""
    from support.faults import link_each_temporary

    from featx.store import add_label_columns, write_derived

    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    with FeatureFile(features_copy) as features:
        n_rows, layers = features.n_rows, features.layers
    before = features_copy.read_bytes()
    link_each_temporary(monkeypatch, victim)
    with pytest.raises(StoreError, match="was replaced by another while featx wrote it"):
        if writer == "derived":
            pooled = {"mean": {layers[0]: np.zeros((n_rows, 4), np.float32)}}
            write_derived(features_copy, tmp_path / "erased.h5", pooled, {"kind": "erasure"})
        else:
            add_label_columns(features_copy, {})
    assert victim.read_bytes() == b"precious" and features_copy.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["feats.h5", "victim"]


@pytest.mark.parametrize(
    ("python", "hint"),
    [
        (False, "remove the link (someone may have planted it), or choose another output with -o"),
        (True, "remove the link (someone may have planted it), or choose another output path"),
    ],
)
def test_a_planted_lock_link_is_named_as_its_caller_does(tmp_path, python, hint):
    from featx.options import command_line, keywords_of
    from featx.store import OutputLock

    output = tmp_path / "out.h5"
    (tmp_path / "out.h5.lock").symlink_to(tmp_path / "elsewhere")
    caller = keywords_of(ExtractConfig) if python else command_line()
    with pytest.raises(StoreError) as raised, caller, OutputLock(output):
        pass
    assert raised.value.hint == hint


def test_a_derived_file_of_a_contrast_run_drops_the_other_answers_token_counts(features_copy, tmp_path):
    """``featx erase`` of a ``--contrast`` file: the derived file has no answer sites, so ``rows/contrast_n_kept``
    (one column per further answer) would make it a file featx refuses to open; it is left out."""
    import h5py

    from featx.store import write_derived

    with FeatureFile(features_copy) as features:
        n_rows, layers, width = features.n_rows, features.layers, features.hidden_size
    with h5py.File(features_copy, "a") as file:  # as a --contrast run with two answers writes it
        file.create_dataset("rows/contrast_n_kept", data=np.full((n_rows, 1), 3, np.int32))
    pooled = {"mean": {layers[0]: np.zeros((n_rows, width), np.float32)}}
    output = write_derived(features_copy, tmp_path / "erased.h5", pooled, {"kind": "erasure"})
    with FeatureFile(output) as derived:
        assert derived.contrast_n_kept.shape == (n_rows, 0)
        assert derived.n_rows == n_rows
