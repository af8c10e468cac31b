import h5py
import numpy as np
import pytest
from support.helpers import interrupt_after_commits, max_abs_diff, reference_features
from support.tiny import SENTENCES, write_csv

import featx
from featx.errors import InputError, Interrupted, ModelError, StoreError
from featx.extraction import ExtractConfig, extract
from featx.store import partial_path

TEXTS = [row[0] for row in SENTENCES]


def run(corpus, model, tmp_path, name="out.h5", **options):
    options.setdefault("store_dtype", "float32")
    return extract(ExtractConfig(corpus=corpus, output=tmp_path / name, model=str(model), progress=False, **options))


def test_features_match_plain_transformers(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path)
    assert summary.rows == len(TEXTS) and summary.status == "written"
    reference = reference_features(tiny_model, TEXTS)
    with featx.open(summary.output) as features:
        assert features.layers == [0, 1, 2]
        assert features.poolings == ["cls", "mean", "max", "last", "pooler"]
        for pooling, expected in reference.items():
            for layer in features.layers:
                assert max_abs_diff(features.features(pooling, layer), expected[:, layer]) <= 1e-5, (pooling, layer)


def test_features_do_not_depend_on_batch_neighbours(tiny_model, corpus_csv, tmp_path):
    one = run(corpus_csv, tiny_model, tmp_path, "one.h5", batch_size=1)
    many = run(corpus_csv, tiny_model, tmp_path, "many.h5", batch_size=64)
    tight = run(corpus_csv, tiny_model, tmp_path, "tight.h5", batch_size=64, max_tokens=64)
    # below one full-length row (the tiny model's 64 tokens) the budget is raised to it, and the run says so
    low = run(corpus_csv, tiny_model, tmp_path, "low.h5", max_tokens=8)
    assert "--max-tokens 8 is below one row of the longest length (64 tokens): batches hold up to 64" in low.notes[0]
    assert not [note for note in tight.notes if "--max-tokens" in note]
    with featx.open(one.output) as a, featx.open(many.output) as b, featx.open(tight.output) as c:
        for pooling in a.poolings:
            for layer in a.layers:
                assert max_abs_diff(a.features(pooling, layer), b.features(pooling, layer)) <= 1e-5
                assert max_abs_diff(a.features(pooling, layer), c.features(pooling, layer)) <= 1e-5


def test_rows_keep_corpus_order_and_metadata(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path, commit_rows=5)
    with featx.open(summary.output) as features:
        assert features.texts == TEXTS
        assert features.ids == [str(i) for i in range(len(TEXTS))]
        assert list(features.split) == [row[3] for row in SENTENCES]
        assert features.label_columns == ["sentiment", "tense"]
        names = features.label_names("tense")
        assert [names[code] for code in features.labels("tense")] == [row[2] for row in SENTENCES]
        attrs = features.attrs
        for key in (
            "featx_version",
            "schema_version",
            "model",
            "model_sha256",
            "tokenizer",
            "max_length",
            "compute_dtype",
            "store_dtype",
            "poolings",
            "layers",
            "device",
            "corpus_path",
            "corpus_sha256",
            "n_rows",
            "complete",
        ):
            assert key in attrs, key
        assert attrs["complete"] and attrs["n_rows"] == len(TEXTS)
        assert attrs["store_dtype"] == "float32" and attrs["compute_dtype"] == "float32"


def test_layout_chunks_one_layer_per_chunk(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path, store_dtype="float16")
    with h5py.File(summary.output) as file:
        dataset = file["pooled/mean"]
        assert dataset.shape == (len(TEXTS), 3, 32) and dataset.dtype == np.float16
        assert dataset.chunks[1] == 1  # reading one layer never touches another layer's bytes
        assert set(file["rows"]) >= {"text", "id", "split", "n_tokens", "n_kept", "truncated"}


def test_float16_store_is_close_to_float32(tiny_model, corpus_csv, tmp_path):
    full = run(corpus_csv, tiny_model, tmp_path, "full.h5")
    half = run(corpus_csv, tiny_model, tmp_path, "half.h5", store_dtype="float16")
    with featx.open(full.output) as a, featx.open(half.output) as b:
        assert max_abs_diff(a.features("max", 2), b.features("max", 2)) < 1e-2


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_bfloat16_on_cpu_is_close_to_float32(tiny_model, corpus_csv, tmp_path, monkeypatch, onednn):
    """Mixed precision (bf16 products, float32 elsewhere) with oneDNN; all-bf16 without it."""
    monkeypatch.setenv("FEATX_ONEDNN", onednn)
    full = run(corpus_csv, tiny_model, tmp_path, "full.h5")
    low = run(corpus_csv, tiny_model, tmp_path, "low.h5", dtype="bfloat16")
    with featx.open(full.output) as a, featx.open(low.output) as b:
        assert b.attrs["compute_dtype"] == "bfloat16"
        for pooling in a.poolings:
            for layer in a.layers:
                x, y = a.features(pooling, layer), b.features(pooling, layer)
                assert np.linalg.norm(y - x) <= 3e-2 * np.linalg.norm(x), (pooling, layer)


def test_bfloat16_pooler_head_runs_in_float32(tiny_model, corpus_csv, tmp_path):
    """bf16 cannot hold 1 - tanh(z) of a saturated pooler: the head runs in float32 on the bf16 [CLS]."""
    import torch
    from transformers import AutoModel

    low = run(corpus_csv, tiny_model, tmp_path, "low.h5", dtype="bfloat16")
    # The bf16 model's own head weights (rounded to bf16 at load), applied in float32.
    head = AutoModel.from_pretrained(str(tiny_model), dtype=torch.bfloat16).pooler.eval().float()
    with featx.open(low.output) as features, torch.inference_mode():
        for layer in features.layers:
            cls = torch.from_numpy(features.features("cls", layer))  # bf16 values, stored exactly in float32
            expected = head(cls[:, None, :]).numpy()
            assert max_abs_diff(features.features("pooler", layer), expected) <= 1e-5, layer


def test_subset_of_layers_and_poolings(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path, layers="-1,0", poolings="mean,cls")
    reference = reference_features(tiny_model, TEXTS)
    with featx.open(summary.output) as features:
        assert features.layers == [0, 2] and features.poolings == ["mean", "cls"]
        assert max_abs_diff(features.features("mean", -1), reference["mean"][:, 2]) <= 1e-5
        with pytest.raises(InputError, match="layer 1 is not stored"):
            features.features("mean", 1)
        with pytest.raises(InputError, match="pooling 'max' is not stored"):
            features.features("max", 0)


def test_truncation_is_counted_and_flagged(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path, max_length=8)
    reference = reference_features(tiny_model, TEXTS, max_length=8)
    with featx.open(summary.output) as features:
        truncated = features.truncated
        assert truncated.sum() == summary.truncated_rows > 0
        assert (features.n_kept <= 8).all()
        assert ((features.n_tokens > 8) == truncated).all()
        assert max_abs_diff(features.features("mean", 2), reference["mean"][:, 2]) <= 1e-5


def test_token_level_states(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path, tokens=True, commit_rows=4)
    with featx.open(summary.output) as features:
        offsets = features.token_offsets
        assert offsets[0] == 0 and offsets[-1] == features.n_kept.sum()
        states = features.token_states(1)
        assert states.shape == (offsets[-1], 32)
        mean = features.features("mean", 1)
        for row in range(features.n_rows):
            np.testing.assert_allclose(states[offsets[row] : offsets[row + 1]].mean(0), mean[row], atol=1e-5)
        word_ids = features.word_ids
        assert word_ids[offsets[0]] == -1 and word_ids[offsets[1] - 1] == -1  # [CLS] ... [SEP]
        assert word_ids[offsets[0] + 1] == 0
        assert len(features.token_ids) == offsets[-1]


def test_same_command_twice_is_up_to_date(tiny_model, corpus_csv, tmp_path):
    first = run(corpus_csv, tiny_model, tmp_path)
    mtime = first.output.stat().st_mtime_ns
    second = run(corpus_csv, tiny_model, tmp_path)
    assert second.status == "up-to-date" and first.output.stat().st_mtime_ns == mtime


def test_different_options_refuse_without_overwrite(tiny_model, corpus_csv, tmp_path):
    run(corpus_csv, tiny_model, tmp_path)
    # the error names what differs, the file's value and this command's (it said only "corpus, model or options")
    with pytest.raises(StoreError, match=r"different corpus, model or options: poolings \(the file's") as error:
        run(corpus_csv, tiny_model, tmp_path, poolings="mean")
    assert "['cls', 'mean', 'max', 'last', 'pooler'], this command's ['mean'])" in error.value.message
    with pytest.raises(StoreError, match=r"options: max_length \(the file's 64, this command's 8\)\n"):
        run(corpus_csv, tiny_model, tmp_path, max_length=8)
    assert run(corpus_csv, tiny_model, tmp_path, poolings="mean", overwrite=True).status == "written"


def test_changed_corpus_refuses_without_overwrite(tiny_model, corpus_csv, tmp_path):
    run(corpus_csv, tiny_model, tmp_path)
    write_csv(corpus_csv, SENTENCES[:-1])
    with pytest.raises(StoreError, match="different corpus, model or options: the corpus file's content\n"):
        run(corpus_csv, tiny_model, tmp_path)


def test_resume_after_interruption_equals_uninterrupted_run(tiny_model, corpus_csv, tmp_path, monkeypatch):
    reference = run(corpus_csv, tiny_model, tmp_path, "ref.h5", commit_rows=3, tokens=True)
    interrupt_after_commits(monkeypatch, 2)
    with pytest.raises(Interrupted, match="6 of 12 rows are saved"):
        run(corpus_csv, tiny_model, tmp_path, "out.h5", commit_rows=3, tokens=True)
    monkeypatch.undo()
    output = tmp_path / "out.h5"
    assert not output.exists() and partial_path(output).exists()
    with pytest.raises(StoreError, match=r"unfinished extraction with .* options: commit_rows \(the file's 3, this"):
        run(corpus_csv, tiny_model, tmp_path, "out.h5", commit_rows=4, tokens=True)
    with pytest.raises(StoreError, match="incomplete"):
        featx.open(output)
    with featx.open(output, allow_partial=True) as partial:
        assert partial.n_rows == 6 and not partial.complete
    resumed = run(corpus_csv, tiny_model, tmp_path, "out.h5", commit_rows=3, tokens=True)
    assert resumed.status == "resumed" and resumed.resumed_from == 6
    with h5py.File(reference.output) as a, h5py.File(resumed.output) as b:
        for group in ("pooled", "tokens"):
            for name in a[group]:
                np.testing.assert_array_equal(a[group][name][()], b[group][name][()])


def test_running_out_of_gpu_memory_is_one_clear_error_and_keeps_the_rows(tiny_model, corpus_csv, tmp_path, monkeypatch):
    """A batch too large for the device (torch.OutOfMemoryError, raised here on the CPU) is a ModelError that
    names the batch, the rows kept and a smaller --max-tokens; the rows committed before stay in the file."""
    import torch

    from featx.extraction.forward import runner

    real, calls = runner.Runner.__call__, []

    def runs_out(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(runner.Runner, "__call__", runs_out)
    with pytest.raises(
        ModelError,
        match=r"ran out of memory on a batch of at most 1,024 padded tokens and 2 rows; "
        r"(2|4) of 12 rows are saved",
    ) as error:
        run(corpus_csv, tiny_model, tmp_path, "out.h5", batch_size=2, commit_rows=2)
    assert "--max-tokens" in error.value.hint and "--overwrite" in error.value.hint
    with featx.open(tmp_path / "out.h5", allow_partial=True) as partial:
        assert partial.n_rows in (2, 4) and not partial.complete


def test_random_init_keeps_architecture(tiny_model, corpus_csv, tmp_path):
    trained = run(corpus_csv, tiny_model, tmp_path, "a.h5")
    random = run(corpus_csv, tiny_model, tmp_path, "b.h5", random_init=True, init_seed=1)
    with featx.open(trained.output) as a, featx.open(random.output) as b:
        assert b.attrs["random_init"] and b.attrs["model_sha256"].startswith("random-init:")
        assert max_abs_diff(a.features("mean", 2), b.features("mean", 2)) > 1e-2


def test_pickle_only_model_is_refused(tiny_model, corpus_csv, tmp_path):
    import shutil

    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model, folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="only pickle-based weights"):
        run(corpus_csv, folder, tmp_path)


def test_unknown_hub_id_suggests_local_folder(corpus_csv, tmp_path):
    with pytest.raises(ModelError, match="not available offline"):
        extract(
            ExtractConfig(corpus=corpus_csv, output=tmp_path / "o.h5", model="nobody/no-such-model", progress=False)
        )


def test_a_model_name_too_long_for_a_path_is_one_clear_error(corpus_csv, tmp_path):
    with pytest.raises(ModelError, match=r"is not a usable name \(File name too long\)"):
        extract(ExtractConfig(corpus=corpus_csv, output=tmp_path / "o.h5", model="m" * 300, progress=False))


def test_output_directory_problems(tiny_model, corpus_csv, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        run(corpus_csv, tiny_model, tmp_path, "missing/out.h5")
    with pytest.raises(InputError, match="should end in .h5"):
        run(corpus_csv, tiny_model, tmp_path, "out.csv")


def _foreign_hdf5(path):
    with h5py.File(path, "w") as file:
        file["x"] = np.arange(3)


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda path: path.mkdir(), "it is a folder"),
        (lambda path: path.write_text("notes\n"), "is not an HDF5 file"),
        (lambda path: path.write_bytes(b""), "is not an HDF5 file"),
    ],
    ids=["folder", "text file", "empty file"],
)
def test_an_existing_output_that_overwrite_would_refuse_is_refused_first_without_suggesting_it(
    corpus_csv, tmp_path, make, reason
):
    make(tmp_path / "out.h5")
    # The model does not exist: the output is refused before the model is looked for.
    with pytest.raises(StoreError, match=f"out.h5 already exists and cannot be used: .*{reason}") as error:
        run(corpus_csv, "nobody/no-such-model", tmp_path)
    assert "pass --overwrite" not in error.value.hint and "-o" in error.value.hint
    with pytest.raises(InputError, match="not a features file featx wrote"):
        run(corpus_csv, "nobody/no-such-model", tmp_path, overwrite=True)


@pytest.mark.slow
def test_an_existing_output_is_said_replaceable_only_where_overwrite_replaces_it(tiny_model, corpus_csv, tmp_path):
    _foreign_hdf5(tmp_path / "foreign.h5")
    (tmp_path / "link.h5").symlink_to(tmp_path / "foreign.h5")
    with pytest.raises(StoreError, match="link.h5 is an HDF5 file but not a featx features file") as error:
        run(corpus_csv, tiny_model, tmp_path, "link.h5")
    assert "pass --overwrite" not in error.value.hint
    with pytest.raises(InputError, match="symbolic link"):
        run(corpus_csv, tiny_model, tmp_path, "link.h5", overwrite=True)
    with pytest.raises(StoreError, match="foreign.h5 is an HDF5 file but not a featx features file") as error:
        run(corpus_csv, tiny_model, tmp_path, "foreign.h5")
    assert "pass --overwrite" in error.value.hint
    assert run(corpus_csv, tiny_model, tmp_path, "foreign.h5", overwrite=True).status == "written"


def test_pooler_requested_for_model_without_one(tmp_path, corpus_csv):
    import torch
    from support.tiny import build_tiny_bert
    from transformers import DistilBertConfig, DistilBertModel

    folder = build_tiny_bert(tmp_path / "distil")
    config = DistilBertConfig(vocab_size=200, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64)
    torch.manual_seed(0)
    DistilBertModel(config).save_pretrained(str(folder))
    with pytest.raises(InputError, match="has no pooler head"):
        run(corpus_csv, folder, tmp_path, poolings="pooler")
    summary = run(corpus_csv, folder, tmp_path)
    assert "pooler" not in summary.poolings and summary.layers == [0, 1, 2]


def test_summary_says_where_the_time_went(tiny_model, corpus_csv, tmp_path):
    summary = run(corpus_csv, tiny_model, tmp_path)
    parts = (summary.load_seconds, summary.tokenize_seconds, summary.forward_seconds)
    assert all(part > 0 for part in parts)
    assert sum(parts) <= summary.seconds
    assert summary.as_dict()["forward_seconds"] == summary.forward_seconds
    again = run(corpus_csv, tiny_model, tmp_path)
    assert again.status == "up-to-date" and again.forward_seconds == 0.0


def test_extract_says_what_the_reader_noticed_of_its_label_columns(tiny_model, tmp_path):
    corpus = tmp_path / "labelled.csv"
    corpus.write_text("text,label\n" + "".join(f"{text},{'pos' if i % 3 else ''}\n" for i, text in enumerate(TEXTS)))
    summary = run(corpus, tiny_model, tmp_path)
    assert any(note.startswith("label 'label':") and "row(s) missing" in note for note in summary.notes)


def test_a_fingerprint_nested_too_deeply_is_not_compared_and_not_a_traceback():
    """A features file's recorded fingerprint is untrusted: one nested too deeply for the JSON parser leaves the
    refusal without its list of differences, as an unreadable one does (no RecursionError)."""
    from featx.extraction.run.orchestrate import fingerprint_difference

    deep = "[" * 200_000 + "]" * 200_000
    assert fingerprint_difference(deep, '{"batch_size": 4}') == ""
    assert fingerprint_difference('{"batch_size": 4}', '{"batch_size": 8}') == (
        ": batch_size (the file's 4, this command's 8)"
    )


@pytest.mark.parametrize(
    ("where", "python", "cli"),
    [
        (
            "no/dir",
            "create it first, or choose another path with output",
            "create it first, or choose another path with -o",
        ),
        ("file", "choose another path with output=OUT.h5", "choose another path with -o OUT.h5"),
    ],
)
def test_an_output_folder_that_cannot_take_the_file_is_named_as_its_caller_does(
    tiny_model, corpus_csv, tmp_path, where, python, cli
):
    """A missing output folder, or a file where it should be: refused before the model loads, the hint naming
    ``output`` from Python and ``-o`` on the command line."""
    from click.testing import CliRunner

    from featx.cli import main

    (tmp_path / "file").write_text("not a folder")
    output = tmp_path / where / "out.h5"
    with pytest.raises(InputError) as raised:
        featx.extract(corpus_csv, model=str(tiny_model), output=output, progress=False)
    assert raised.value.hint == python
    result = CliRunner().invoke(main, ["extract", str(corpus_csv), "--model", str(tiny_model), "-o", str(output)])
    assert result.exit_code == 2 and result.output.rstrip().endswith(f"hint: {cli}"), result.output


@pytest.mark.parametrize(
    ("python", "hint"),
    [
        (False, "choose another output with -o (--overwrite replaces only a features file featx wrote"),
        (True, "choose another output path (overwrite=True replaces only a features file featx wrote"),
    ],
)
def test_an_output_featx_extract_cannot_use_is_named_as_its_caller_does(tmp_path, python, hint):
    """A folder where the features file should go: the hint names ``-o`` and ``--overwrite`` on the command line,
    the ``output`` and ``overwrite`` keywords from Python."""
    from featx.extraction.run.orchestrate import refuse_unusable_output
    from featx.options import command_line, keywords_of

    with pytest.raises(StoreError) as raised, keywords_of(ExtractConfig) if python else command_line():
        refuse_unusable_output(tmp_path)
    assert raised.value.hint.startswith(hint), raised.value.hint


def test_an_albert_pooler_file_from_before_its_tanh_is_not_reused(family_models, tiny_model, corpus_csv, tmp_path):
    """ALBERT's pooler pooling left its tanh out before 30 Nov 2026 (``runner._pooler_head``): such a file is named
    in the fingerprint (``pooler``), so one written before is refused as made with other options (by the full check,
    as one of another featx version, whose request key differs), not reused: 0.2.0's own has this very request's
    key, which the quick check took as up to date; every other file (the tiny BERT's) keeps its fingerprint."""
    import json

    import h5py
    from click.testing import CliRunner
    from support.errors import assert_one_clear_error
    from support.families import BY_NAME

    from featx import store
    from featx.cli import main
    from featx.extraction import quick_up_to_date

    albert = family_models(BY_NAME["albert"])
    summary = run(corpus_csv, albert, tmp_path, poolings="pooler,mean")
    with featx.open(summary.output) as features:
        recorded = json.loads(features.fingerprint)
    assert recorded["pooler"] == "linear and activation"
    config = ExtractConfig(corpus=corpus_csv, output=summary.output, model=str(albert), poolings="pooler,mean",
                           store_dtype="float32", progress=False)  # fmt: skip
    assert quick_up_to_date(config).status == "up-to-date"
    with h5py.File(summary.output, "r+") as file:  # as 0.2.0 wrote it before the fix: the same request key
        file.attrs[store.schema.FINGERPRINT] = json.dumps({k: v for k, v in recorded.items() if k != "pooler"})
    assert quick_up_to_date(config) is None
    args = ["extract", str(corpus_csv), "--model", str(albert), "-o", str(summary.output), "--pooling", "pooler,mean"]
    result = CliRunner().invoke(main, [*args, "--store-dtype", "float32", "-q"])
    assert result.exit_code == 2
    assert_one_clear_error(
        result.output,
        r"made from a different corpus, model or options: the pooler pooling \(ALBERT's without its tanh before 30 "
        r"Nov 2026\) .* hint: pass --overwrite to replace it",
    )
    bert = run(corpus_csv, tiny_model, tmp_path, name="bert.h5", poolings="pooler")
    with featx.open(bert.output) as features:
        assert "pooler" not in json.loads(features.fingerprint)
    again = config.replace(output=bert.output, model=str(tiny_model), poolings="pooler")
    assert quick_up_to_date(again).status == "up-to-date"  # a pooler file without the key but not ALBERT's
