"""Damaged and hand-made features files (``featx/store/damage.py``, ``structure.py``): each is refused with featx's
StoreError, at open or on the read that meets the damage, never a traceback of h5py's."""

from __future__ import annotations

import io
import re

import h5py
import numpy as np
import pytest
from support.store_files import write_store_file

from featx.errors import FeatxError, StoreError
from featx.store import FeatureFile, finished_request, partial_path, resumable, schema


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    """The bytes of a small, valid features file (10 rows, two sites, token states): each test damages a copy."""
    path, _ = write_store_file(tmp_path_factory.mktemp("damaged"))
    return path.read_bytes()


def _read_everything(features: FeatureFile) -> None:
    for site in features.sites:
        for layer in features.site_layers(site):
            for pooling in features.site_poolings(site):
                features.features(pooling, layer, site=site)
            if features.has_tokens:
                features.token_states(layer, site=site)
    assert len(features.texts) == len(features.ids) == len(features.n_tokens) == len(features.truncated)
    for column in features.label_columns:
        assert len(features.labels(column)) == features.n_rows and features.label_names(column)


def _copy(tmp_path, data: bytes):
    path = tmp_path / "damaged.h5"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "link",
    [("labels/loop", "labels", "/labels"), ("labels/again", "pooled/mean", "/pooled/mean"), ("tokens/top", "/", "/")],
    ids=["group-into-itself", "dataset-twice", "root-inside"],
)
def test_an_object_linked_twice_is_refused_at_once(tiny_file, tmp_path, link):
    """A group hard-linked into itself sent the walk round the loop until its limit of 100,000 objects (10 s);
    featx links each object once, so the second link is refused where the walk meets it, naming both paths."""
    new, target, first = link
    path = _copy(tmp_path, tiny_file)
    with h5py.File(path, "r+") as file:
        file[new] = file[target]
    with pytest.raises(StoreError) as caught:
        FeatureFile(path)
    message = caught.value.message
    assert f"'/{new}' links to the object already at '{first}'" in message and "not written by featx" in message
    assert "extract the features again" in caught.value.hint


def _damaged(data: bytes, case: str) -> bytes:
    """``data`` damaged as ``case`` says, at a place found in the bytes themselves."""
    damaged = bytearray(data)
    if case == "truncated":
        return data[: len(data) // 2]
    if case == "superblock":
        damaged[8] ^= 0xFF  # the superblock's version
    elif case == "root group's index":  # a group's B-tree: HDF5's RuntimeError, a traceback before
        damaged[data.index(b"TREE")] ^= 0x20
    else:
        with h5py.File(io.BytesIO(data), "r") as file:
            dataset = file["pooled/mean"]
            header, chunk = h5py.h5o.get_info(dataset.id).addr, dataset.id.get_chunk_info(0).byte_offset
        if case == "object header":
            damaged[header] ^= 0xFF  # its version
        else:  # a chunk's address in the dataset's chunk index, far past the end: the read fails, not the open
            damaged[data.index(int(chunk).to_bytes(8, "little")) + 7] = 0x7F
    return bytes(damaged)


@pytest.mark.parametrize(
    "case", ["truncated", "superblock", "root group's index", "object header", "chunk index"], ids=str
)
def test_a_damaged_file_is_a_store_error_at_open_or_on_read(tiny_file, tmp_path, case):
    path = _copy(tmp_path, _damaged(tiny_file, case))
    damaged = re.escape(f"{path} cannot be read; it looks damaged (")
    with pytest.raises(StoreError, match=damaged) as caught, FeatureFile(path) as features:  # refused at open...
        assert case == "chunk index"  # ...but for the one damage the open's checks do not read: on its read
        _read_everything(features)
    assert "run featx extract again" in caught.value.hint and "\n" not in caught.value.message


def test_featx_s_own_error_inside_a_read_is_not_called_damage(tiny_file, tmp_path, monkeypatch):
    """Only an error raised inside h5py is the file's: the same kinds raised by featx's code go on as they are."""
    from featx.store import reader

    monkeypatch.setattr(reader, "read_strings", lambda *args: {}["a featx bug"])
    with FeatureFile(_copy(tmp_path, tiny_file)) as features, pytest.raises(KeyError, match="a featx bug"):
        assert features.texts


def test_seeded_byte_flips_open_and_read_or_are_featx_s_error(tiny_file, tmp_path):
    """30 copies, each with 1 to 4 bits flipped at seeded places: every open and every read works or raises featx's
    error. Global heap collections are left alone: HDF5 itself loops forever on some damage there (damage.py)."""
    heaps = [(m.start(), m.start() + int.from_bytes(tiny_file[m.start() + 8 : m.start() + 16], "little"))
             for m in re.finditer(b"GCOL", tiny_file)]  # fmt: skip
    places = np.array([i for i in range(len(tiny_file)) if not any(a <= i < b for a, b in heaps)])
    rng, outcomes = np.random.default_rng(0), set()
    for _ in range(30):
        data = bytearray(tiny_file)
        for place in rng.choice(places, int(rng.integers(1, 5))):
            data[place] ^= 1 << int(rng.integers(8))
        try:
            with FeatureFile(_copy(tmp_path, bytes(data))) as features:
                _read_everything(features)
            outcomes.add("read")
        except FeatxError as error:
            outcomes.add(type(error).__name__)
    assert {"read", "StoreError"} <= outcomes  # the flips reach both what is checked and what is not


@pytest.mark.parametrize("where", ["attribute", "text dataset"])
def test_a_variable_length_sequence_is_refused_before_it_is_read(tiny_file, tmp_path, where):
    """featx writes variable-length strings only; HDF5 crashed reading a damaged variable-length type."""
    path = _copy(tmp_path, tiny_file)
    with h5py.File(path, "r+") as file:
        sequence = h5py.vlen_dtype(np.uint8)
        values = np.empty(10, dtype=object)
        values[:] = [np.arange(2, dtype=np.uint8)] * 10
        if where == "attribute":
            file.attrs.create("note", values[:1], dtype=sequence)
        else:
            del file[schema.TEXT]
            file.create_dataset(schema.TEXT, data=values, dtype=sequence)
    message = (
        "attribute 'note' of '/' is of a variable-length type" if where == "attribute" else "'rows/text' has dtype"
    )
    with pytest.raises(StoreError, match=re.escape(message)):
        FeatureFile(path)
    if where == "attribute":  # the quick looks at a file (finished? resumable?) check it before reading too
        with h5py.File(path, "r+") as file:  # as the very attribute they read
            file.attrs.create(schema.REQUEST_KEY, values[:1], dtype=sequence)
            file.attrs[schema.COMPLETE] = True
        assert finished_request(path) is None
        partial = partial_path(tmp_path / "resumed.h5")
        path.rename(partial)
        assert not resumable(tmp_path / "resumed.h5")


def _as_float16(name: str):
    def change(file):
        values = file[name][()]
        del file[name]
        file.create_dataset(name, data=values.astype(np.float16))

    return change


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.attrs.__setitem__(schema.STORE_DTYPE, "float16"), "'pooled/mean' has dtype float32, but the file"),
        (_as_float16("sites/ffn/tokens/states"), "'sites/ffn/tokens/states' has dtype float16, but the file's store"),
        (lambda f: f.attrs.__setitem__(schema.STORE_DTYPE, "float64"), "attribute 'store_dtype' is 'float64', not"),
        (lambda f: f.attrs.__delitem__(schema.STORE_DTYPE), "attribute 'store_dtype' is missing, not float16"),
    ],
    ids=["another", "one-dataset", "not-a-feature-dtype", "missing"],
)
def test_store_dtype_is_every_feature_dataset_s_dtype(tiny_file, tmp_path, change, message):
    """A reader trusts ``store_dtype`` (``FeatureFile.store_dtype``: ``featx fit`` hashes word vectors as stored)."""
    path = _copy(tmp_path, tiny_file)
    with h5py.File(path, "r+") as file:
        change(file)
    with pytest.raises(StoreError, match=re.escape(message)):
        FeatureFile(path)
    with FeatureFile(_copy(tmp_path, tiny_file)) as features:
        assert features.store_dtype == np.float32 and features.features("mean", 2).dtype == np.float32
