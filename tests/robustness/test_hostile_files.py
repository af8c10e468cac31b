"""A generated suite of hostile features files: someone else's file is untrusted input.

Each case mutates a valid small features file the way an attacker (or a broken tool) would; opening it
(``featx.open``) and probing it (``featx probe``) must answer exit 2 with one line naming the file and
what is wrong, at once: nothing declared in the file is allocated or followed before it is checked.
"""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.errors import StoreError
from featx.extraction import ExtractConfig, extract


@pytest.fixture(scope="module")
def valid_file(tiny_model, tmp_path_factory):
    from support.faults import many_rows_csv

    folder = tmp_path_factory.mktemp("hostile")
    corpus = many_rows_csv(folder / "corpus.csv", 40)
    return extract(
        ExtractConfig(
            corpus=corpus,
            output=folder / "valid.h5",
            model=str(tiny_model),
            poolings="mean,cls",
            tokens=True,
            progress=False,
        )
    ).output


def _replace(file, name, **kwargs):
    del file[name]
    file.create_dataset(name, **kwargs)


def huge_declared_rows(file, tmp):  # a dataset declaring 10^9 rows in a small file (nothing allocated)
    layers, width = file["pooled/mean"].shape[1:]
    _replace(file, "pooled/mean", shape=(10**9, layers, width), dtype="float16", chunks=(1024, 1, width))
    file.attrs["n_rows"] = 10**9


def huge_declared_features(file, tmp):  # n_rows consistent, the features dataset larger than the rows
    layers, width = file["pooled/mean"].shape[1:]
    _replace(file, "pooled/mean", shape=(10**9, layers, width), dtype="float16", chunks=(1024, 1, width))


def overflowing_declared_features(file, tmp):  # 40 x 3 x 2^57 elements: numpy's product wrapped below zero
    layers = file["pooled/mean"].shape[1]
    del file["tokens"]
    for name in ("mean", "cls"):
        _replace(file, f"pooled/{name}", shape=(40, layers, 2**57), dtype="float16", chunks=(1, 1, 1024))
    file.attrs["hidden_size"] = 2**57


def huge_layers_attribute(file, tmp):
    file.attrs["layers"] = json.dumps(list(range(10**6)))


def huge_attribute(file, tmp):
    file.attrs["model"] = "x" * (40 << 20)


def many_attributes(file, tmp):
    for number in range(1000):
        file.attrs[f"junk{number}"] = number


def external_link(file, tmp):
    other = tmp / "secret.h5"
    with h5py.File(other, "w") as secret:
        secret["data"] = np.zeros((40, 3, 32), dtype="float16")
    del file["pooled/mean"]
    file["pooled/mean"] = h5py.ExternalLink(str(other), "data")


def soft_link(file, tmp):
    del file["pooled/mean"]
    file["pooled/mean"] = h5py.SoftLink("/pooled/cls")


def external_storage(file, tmp):
    raw = tmp / "raw.bin"
    raw.write_bytes(b"\0" * 100)
    _replace(file, "labels/sentiment", shape=(40,), dtype="int32", external=[(str(raw), 0, 160)])


def compressed(file, tmp):
    data = file["pooled/mean"][()]
    _replace(file, "pooled/mean", data=data, compression="gzip")


def bad_json_layers(file, tmp):
    file.attrs["layers"] = "[0, 1, "


def layers_not_ints(file, tmp):
    file.attrs["layers"] = json.dumps(["a", "b"])


def layers_out_of_order(file, tmp):  # would label layer 2's features as layer 0's
    file.attrs["layers"] = json.dumps(sorted(json.loads(file.attrs["layers"]), reverse=True))


def layers_repeated(file, tmp):
    layers = json.loads(file.attrs["layers"])
    file.attrs["layers"] = json.dumps([layers[0]] * len(layers))


def layers_negative(file, tmp):
    layers = json.loads(file.attrs["layers"])
    file.attrs["layers"] = json.dumps([layer - len(layers) for layer in layers])


def poolings_repeated(file, tmp):
    file.attrs["poolings"] = json.dumps(["mean", "mean"])


def bad_json_label_names(file, tmp):
    file["labels/sentiment"].attrs["names"] = "{not json"


def bad_json_sites(file, tmp):
    file.attrs["sites"] = "{"


def wrong_feature_dtype(file, tmp):
    data = file["pooled/mean"][()].astype(np.int64)
    _replace(file, "pooled/mean", data=data)


def wrong_feature_shape(file, tmp):
    data = file["pooled/mean"][()]
    _replace(file, "pooled/mean", data=data[:, :, :5])


def wrong_label_dtype(file, tmp):
    _replace(file, "labels/sentiment", data=np.zeros(40, dtype="float64"))


def short_texts(file, tmp):
    del file["rows/text"]
    file.create_dataset("rows/text", data=np.array(["a"] * 3, dtype=object), dtype=h5py.string_dtype())


def rows_done_past_the_end(file, tmp):
    file["progress/rows_done"][0] = 10**9


def n_rows_not_a_number(file, tmp):
    file.attrs["n_rows"] = "many"


def token_offsets_past_the_states(file, tmp):
    offsets = file["tokens/offsets"][()]
    offsets[-1] = 10**12
    file["tokens/offsets"][:] = offsets


def label_codes_outside_names(file, tmp):
    codes = file["labels/sentiment"][()]
    codes[3] = 7  # two class names
    file["labels/sentiment"][:] = codes


def fewer_names_than_codes(file, tmp):
    names = json.loads(file["labels/sentiment"].attrs["names"])
    file["labels/sentiment"].attrs["names"] = json.dumps(names[:1])


def repeated_class_names(file, tmp):  # two classes under one name: every table would merge them
    names = json.loads(file["labels/sentiment"].attrs["names"])
    file["labels/sentiment"].attrs["names"] = json.dumps([names[0]] * len(names))


def labels_group_missing(file, tmp):
    del file["labels"]


def deeply_nested_label_names(file, tmp):
    file["labels/sentiment"].attrs["names"] = "[" * 100_000 + "]" * 100_000


def label_values_a_group(file, tmp):  # a continuous label's values: a group where one vector belongs
    file.create_group("label_values/sentiment")


def label_values_strings(file, tmp):
    file.create_dataset("label_values/sentiment", data=np.array([b"a"] * file.attrs["n_rows"]))


def label_values_short(file, tmp):  # read as the first rows' values: the label of every later row was lost
    file.create_dataset("label_values/sentiment", data=np.zeros(10))


def label_values_two_columns(file, tmp):
    file.create_dataset("label_values/sentiment", data=np.zeros((file.attrs["n_rows"], 2)))


def label_name_half_a_surrogate(file, tmp):  # JSON may escape "\ud800" alone; no UTF-8 CSV or terminal can hold it
    file["labels/sentiment"].attrs["names"] = '["neg", "p\\ud800s"]'


def model_name_not_utf8(file, tmp):  # h5py reads the bytes with surrogateescape: a str no CSV or terminal can hold
    file.attrs["model"] = np.array(b"tiny\xff\xfe", dtype=h5py.string_dtype("utf-8"))


# Label cases that ended in IndexError, KeyError, RecursionError or UnicodeEncodeError in fit, probe and labels: each
# command's case.
LABEL_CASES = [
    label_codes_outside_names,
    fewer_names_than_codes,
    labels_group_missing,
    deeply_nested_label_names,
    label_name_half_a_surrogate,
]

CASES = [
    *LABEL_CASES,
    label_values_a_group,
    label_values_strings,
    label_values_short,
    label_values_two_columns,
    repeated_class_names,
    huge_declared_rows,
    huge_declared_features,
    overflowing_declared_features,
    huge_layers_attribute,
    huge_attribute,
    many_attributes,
    external_link,
    soft_link,
    external_storage,
    compressed,
    bad_json_layers,
    layers_not_ints,
    layers_out_of_order,
    layers_repeated,
    layers_negative,
    poolings_repeated,
    bad_json_label_names,
    bad_json_sites,
    wrong_feature_dtype,
    wrong_feature_shape,
    wrong_label_dtype,
    short_texts,
    rows_done_past_the_end,
    n_rows_not_a_number,
    token_offsets_past_the_states,
    model_name_not_utf8,
]


@pytest.mark.slow
@pytest.mark.parametrize("mutate", CASES, ids=[case.__name__ for case in CASES])
def test_hostile_file_is_one_line_exit_2(valid_file, tmp_path, mutate):
    path = tmp_path / "hostile.h5"
    shutil.copy(valid_file, path)
    with h5py.File(path, "r+") as file:
        mutate(file, tmp_path)
    with pytest.raises(StoreError) as caught:
        featx.open(path)
    assert str(path) in caught.value.message and "\n" not in caught.value.message
    result = CliRunner().invoke(main, ["probe", str(path), "--label", "sentiment", "--layer", "1"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("featx: error: ")
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert str(path) in result.output  # refused before anything declared is allocated (no timing asserted)


def test_the_valid_file_opens(valid_file):
    with featx.open(valid_file) as features:
        assert features.n_rows == 40 and features.features("mean", 1).shape[0] == 40


@pytest.mark.parametrize("command", ["fit {path} --label sentiment --layer 1", "labels {path}"], ids=["fit", "labels"])
@pytest.mark.parametrize("mutate", LABEL_CASES, ids=[case.__name__ for case in LABEL_CASES])
def test_hostile_labels_are_one_line_in_fit_and_labels(valid_file, tmp_path, mutate, command):
    path = tmp_path / "hostile.h5"
    shutil.copy(valid_file, path)
    with h5py.File(path, "r+") as file:
        mutate(file, tmp_path)
    result = CliRunner().invoke(
        main,
        [*command.format(path=path).split(), *(["-o", str(tmp_path / "m.featx")] if command.startswith("fit") else [])],
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"featx: error: {path} is not a valid featx features file: "), result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
