"""The store's row strings: NUL (which HDF5 strings cannot hold) and the escape character survive exactly,
through extraction and through the merge of shards."""

from __future__ import annotations

import h5py
from hypothesis import given, settings
from hypothesis import strategies as st

import featx
from featx.extraction import ExtractConfig, extract
from featx.extraction.merge import merge
from featx.store import STRING_ESCAPE, _write_strings, read_strings

from conftest import write_csv

TRICKY = ["\x00", STRING_ESCAPE, STRING_ESCAPE + "0", STRING_ESCAPE + "e", "\x000", "a", "\ufffd", "é", " "]


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.lists(st.one_of(st.sampled_from(TRICKY), st.characters(blacklist_categories=("Cs",))),
                                max_size=8).map("".join), min_size=1, max_size=6))
def test_any_strings_round_trip(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("strings") / "s.h5"
    with h5py.File(path, "w") as file:
        dataset = _write_strings(file, "values", values)
        assert bool(dataset.attrs.get("escaped", False)) == any("\x00" in v or STRING_ESCAPE in v for v in values)
    with h5py.File(path, "r") as file:
        assert read_strings(file["values"]) == values


def test_nul_in_texts_and_ids_is_kept_through_extract_and_merge(tiny_model, tmp_path):
    rows = [("the dog\x00 runs", "pos", "r\x00one"), ("a cat sleeps \uffff0", "neg", "r2"),
            ("the bird sings", "pos", "r3"), ("no dog runs", "neg", "r4")]
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
