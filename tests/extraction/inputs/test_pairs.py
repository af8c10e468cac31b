"""Sentence-pair extraction (featx/extraction/inputs/pairs.py, pair_runner.py): cross mode against a plain
``transformers`` forward of ``tokenizer(a, b)``, separate mode against extracting each column alone."""

import numpy as np
import pytest
from support.families import BY_NAME, reference_model
from support.tiny import write_csv

import featx
from featx.errors import InputError
from featx.extraction import ExtractConfig, extract

PAIRS = [
    ("the cat loved the film", "a dog will love this book", "5", "yes", "train"),
    ("the critics hated the plans", "the critics loved the plans", "2", "no", "train"),
    ("it is a very good house", "it is a good house", "4", "yes", "train"),
    ("they walked to the red house yesterday and it was really great", "blue", "1", "no", "train"),
    ("she hates awful films", "he will not run tomorrow", "3", "no", "test"),
    ("we saw new books today", "we saw old books yesterday and the cat walked to the city", "2", "yes", "test"),
    (
        "zebra quokka",
        "the old dog runs and the new cat walks and the red critic sees the blue plan today",
        "1",
        "no",
        "test",
    ),
]
HEADER = ("first", "second", "score", "same", "split")


def pair_csv(path, rows=PAIRS):
    return write_csv(path, rows, header=HEADER)


def run(corpus, model, tmp_path, name, **options):
    options.setdefault("store_dtype", "float32")
    options.setdefault("text_col", "first")
    return extract(ExtractConfig(corpus=corpus, output=tmp_path / name, model=str(model), progress=False, **options))


def reference_pairs(model_path, pairs, max_length=None, model=None, type_ids=True):
    """Per pair, a plain forward of ``model(**tokenizer(a, b))`` (``model``: the folder's ``AutoModel`` unless
    given): ``{pooling: (rows, layers, hidden)}``, ``pooler`` the model's own pooler output where it has one;
    ``type_ids``: the tokenizer must give token type ids (they are part of what is compared)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    if model is None:
        model = AutoModel.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="eager").eval()
    out = {name: [] for name in ("cls", "mean", "max", "last", "mean_a", "mean_b", "pooler")}
    truncation = {"truncation": "longest_first", "max_length": max_length} if max_length else {}
    with torch.no_grad():
        for a, b in pairs:
            encoded = tokenizer(a, b, return_tensors="pt", **truncation)
            assert ("token_type_ids" in encoded) == type_ids
            output = model(**encoded, output_hidden_states=True)
            states = torch.stack(output.hidden_states, 1)[0].double().numpy()
            if getattr(output, "pooler_output", None) is not None:
                out["pooler"].append(output.pooler_output[0].double().numpy())
            sequence = np.array([-1 if s is None else s for s in encoded.sequence_ids(0)])
            out["cls"].append(states[:, 0])
            out["mean"].append(states.mean(1))
            out["max"].append(states.max(1))
            out["last"].append(states[:, -1])
            out["mean_a"].append(states[:, sequence == 0].mean(1))
            out["mean_b"].append(states[:, sequence == 1].mean(1))
    return {name: np.stack(values) for name, values in out.items() if values}


def assert_matches(features, reference, order=None) -> float:
    """Every pooling of ``reference`` at every stored layer (``pooler`` at the top only, where transformers
    defines it) within 1e-4; returns the largest absolute difference."""
    order = np.arange(features.n_rows) if order is None else order
    worst = 0.0
    for pooling, expected in reference.items():
        for layer in features.layers if pooling != "pooler" else features.layers[-1:]:
            got = features.features(pooling, layer)[order]
            difference = float(np.abs(got - (expected if pooling == "pooler" else expected[:, layer])).max())
            assert difference <= 1e-4, (pooling, layer)
            worst = max(worst, difference)
    return worst


# Encoders of the zoo other than BERT, one per way a pair differs (each run costs suite time; every encoder of the zoo
# matched within 1e-6 when checked by script): featx's native encoders (RoBERTa, MPNet), relative attention
# (DeBERTa-v2), ModernBERT's local attention, T5's ``a </s> b </s>`` and BART's encoder.
PAIR_FAMILIES = ["roberta", "mpnet", "deberta-v2", "modernbert", "t5-encoder", "bart-encoder"]


@pytest.mark.parametrize("name", PAIR_FAMILIES)
def test_cross_mode_of_other_encoders_equals_a_plain_forward_of_tokenizer_a_b(name, family_models, tmp_path):
    """Each in its own pair format (RoBERTa's ``<s> a </s></s> b </s>``, T5's ``a </s> b </s>``): every pooling,
    ``mean_a`` and ``mean_b`` too, and the pooler where the model has one, of the pairs batched with neighbours of
    other lengths equals a plain forward of each pair alone (its encoder for T5 and BART)."""
    family = BY_NAME[name]
    folder = family_models(family)
    summary = run(pair_csv(tmp_path / "pairs.csv"), folder, tmp_path, "cross.h5", text_pair_col="second")
    reference = reference_pairs(
        folder, [row[:2] for row in PAIRS], model=reference_model(family, folder), type_ids=False
    )
    with featx.open(summary.output) as features:
        assert features.pair_mode == "cross" and {"mean_a", "mean_b"} <= set(features.poolings)
        assert ("pooler" in features.poolings) == ("pooler" in reference)
        print(family.name, f"cross pairs {assert_matches(features, reference):.1e}")


def test_cross_mode_equals_a_plain_forward_of_tokenizer_a_b(tiny_model, tmp_path):
    summary = run(pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "cross.h5", text_pair_col="second")
    with featx.open(summary.output) as features:
        assert features.pair_mode == "cross" and features.text_pair_col == "second"
        assert features.poolings == ["cls", "mean", "max", "last", "pooler", "mean_a", "mean_b"]
        assert features.pair_texts == [row[1] for row in PAIRS] and "second" not in features.label_columns
        assert_matches(features, reference_pairs(tiny_model, [row[:2] for row in PAIRS]))


def test_cross_mode_truncates_longest_first_and_counts_each_row(tiny_model, tmp_path):
    summary = run(
        pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "short.h5", text_pair_col="second", max_length=12
    )
    with featx.open(summary.output) as features:
        assert_matches(features, reference_pairs(tiny_model, [row[:2] for row in PAIRS], max_length=12))
        truncated = features.truncated
        assert truncated.any() and not truncated.all() and (features.n_kept <= 12).all()
        assert summary.truncated_rows == int(truncated.sum())


def test_cross_mode_rows_do_not_depend_on_batch_neighbours(tiny_model, tmp_path):
    one = run(pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "one.h5", text_pair_col="second", batch_size=1)
    order = np.random.default_rng(3).permutation(len(PAIRS))
    shuffled = pair_csv(tmp_path / "shuffled.csv", [PAIRS[i] for i in order])
    many = run(shuffled, tiny_model, tmp_path, "many.h5", text_pair_col="second", batch_size=64)
    with featx.open(one.output) as alone, featx.open(many.output) as together:
        back = np.argsort(order)  # row i of the original is row back[i] of the shuffled file
        for pooling in alone.poolings:
            for layer in alone.layers:
                np.testing.assert_allclose(
                    together.features(pooling, layer)[back], alone.features(pooling, layer), atol=1e-5
                )


def test_cross_mode_tokens_record_each_tokens_segment(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    summary = run(
        pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "tokens.h5", text_pair_col="second", tokens=True
    )
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    with featx.open(summary.output) as features:
        offsets, segments, ids = features.token_offsets, features.token_segments, features.token_ids
        for row, (a, b, *_) in enumerate(PAIRS):
            encoded = tokenizer(a, b)
            span = slice(offsets[row], offsets[row + 1])
            assert ids[span].tolist() == encoded["input_ids"]
            assert segments[span].tolist() == [-1 if s is None else s for s in encoded.sequence_ids(0)]


def test_separate_mode_sides_equal_each_column_extracted_alone(tiny_model, tmp_path, monkeypatch):
    """Each side as its column alone; the summary and the progress bar's rate count both sides' tokens (the bar
    counted side a's only)."""
    from featx.extraction.run import loop

    counted: list[int] = []  # the tokens the progress bar's rate counts, batch by batch
    add = loop._Speed.add
    monkeypatch.setattr(loop._Speed, "add", lambda speed, n_tokens: counted.append(n_tokens) or add(speed, n_tokens))
    corpus = pair_csv(tmp_path / "pairs.csv")
    pair = run(corpus, tiny_model, tmp_path, "separate.h5", text_pair_col="second", pair_mode="separate")
    assert sum(counted) == pair.tokens
    side_a = run(corpus, tiny_model, tmp_path, "a.h5")
    side_b = run(corpus, tiny_model, tmp_path, "b.h5", text_col="second")
    with featx.open(pair.output) as both, featx.open(side_a.output) as a, featx.open(side_b.output) as b:
        assert both.pair_mode == "separate" and both.sites == ["hidden", "pair_b"] and both.poolings == a.poolings
        for pooling in a.poolings:
            for layer in a.layers:
                u, v = both.pair_features(pooling, layer)
                np.testing.assert_allclose(u, a.features(pooling, layer), atol=1e-5)
                np.testing.assert_allclose(v, b.features(pooling, layer), atol=1e-5)
        np.testing.assert_array_equal(both.n_kept, a.n_kept)
        np.testing.assert_array_equal(both.pair_n_kept, b.n_kept)
        assert pair.tokens == side_a.tokens + side_b.tokens


def test_plain_requests_keep_their_fingerprint(tiny_model, tmp_path):
    """The pair options enter the fingerprint only when used."""
    corpus = pair_csv(tmp_path / "pairs.csv")
    plain = run(corpus, tiny_model, tmp_path, "plain.h5")
    cross = run(corpus, tiny_model, tmp_path, "cross.h5", text_pair_col="second")
    with featx.open(plain.output) as a, featx.open(cross.output) as b:
        assert "pair" not in a.fingerprint and '"pair_mode": "cross"' in b.fingerprint
        assert a.pair_mode is None and a.pair_texts is None


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(text_pair_col="nope"), "no text pair column 'nope'"),
        (dict(pair_mode="separate"), "--pair-mode separate needs --text-pair-col"),
        (dict(text_pair_col="first"), "is the text column itself"),
        (dict(text_pair_col="second", pair_mode="joint"), "--pair-mode 'joint' is not understood"),
        (dict(text_pair_col="second", pair_mode="separate", tokens=True), "--tokens is stored for --pair-mode cross"),
        (dict(text_pair_col="second", long="window"), "--long window does not apply to sentence pairs"),
        (dict(text_pair_col="score"), "text pair column 'score' holds only numbers"),
    ],
)
def test_bad_pair_options_are_refused_clearly(tiny_model, tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        run(pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "bad.h5", **options)
    assert not (tmp_path / "bad.h5").exists()


def test_an_empty_pair_text_is_refused_or_skipped_like_an_empty_text(tiny_model, tmp_path):
    rows = PAIRS[:3] + [("a good film", "  ", "3", "no", "train")] + PAIRS[3:]
    corpus = pair_csv(tmp_path / "pairs.csv", rows)
    with pytest.raises(InputError, match="empty or whitespace-only text.*'second'.*row 3") as error:
        run(corpus, tiny_model, tmp_path, "empty.h5", text_pair_col="second")
    assert "--skip-empty" in error.value.hint
    summary = run(corpus, tiny_model, tmp_path, "skipped.h5", text_pair_col="second", skip_empty=True)
    assert summary.rows == len(PAIRS) and summary.skipped_empty == 1


def test_cli_extracts_pairs_end_to_end(tiny_model, tmp_path):
    from click.testing import CliRunner

    from featx.cli import main

    corpus = pair_csv(tmp_path / "pairs.csv")
    result = CliRunner().invoke(
        main,
        [
            "extract",
            str(corpus),
            "--model",
            str(tiny_model),
            "-q",
            "--text-col",
            "first",
            "--text-pair-col",
            "second",
            "--pair-mode",
            "separate",
            "-o",
            str(tmp_path / "cli.h5"),
        ],
    )
    assert result.exit_code == 0, result.output
    with featx.open(tmp_path / "cli.h5") as features:
        assert features.pair_mode == "separate" and features.n_rows == len(PAIRS)
    result = CliRunner().invoke(
        main,
        [
            "extract",
            str(corpus),
            "--model",
            str(tiny_model),
            "-q",
            "--pair-mode",
            "cross",
            "-o",
            str(tmp_path / "bad.h5"),
        ],
    )
    assert result.exit_code != 0 and "needs --text-pair-col" in result.output and "Traceback" not in result.output


def test_cross_mode_of_a_roberta_like_model_takes_segments_from_sequence_ids(tmp_path):
    """One token type (no type ids from the tokenizer): mean_a/mean_b still split the pair at the right tokens."""
    import torch
    import transformers
    from support.families import BY_NAME, tokenizer_object
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    family = BY_NAME["roberta"]
    folder = tmp_path / "roberta"
    backend = tokenizer_object(family)
    backend.post_processor = processors.RobertaProcessing(
        ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>"))
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=64,
        model_input_names=["input_ids", "attention_mask"],
        **family.tokens,
    )
    tokenizer.save_pretrained(str(folder))
    torch.manual_seed(0)
    config = transformers.RobertaConfig(vocab_size=backend.get_vocab_size(), **family.config_args)
    transformers.RobertaModel(config).eval().save_pretrained(str(folder), safe_serialization=True)
    summary = run(
        pair_csv(tmp_path / "pairs.csv"),
        folder,
        tmp_path,
        "roberta.h5",
        text_pair_col="second",
        poolings="mean,mean_a,mean_b",
    )
    model = transformers.RobertaModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    with featx.open(summary.output) as features, torch.no_grad():
        for row, (a, b, *_) in enumerate(PAIRS):
            encoded = tokenizer(a, b, return_tensors="pt")
            assert "token_type_ids" not in encoded
            states = torch.stack(model(**encoded, output_hidden_states=True).hidden_states, 1)[0].numpy()
            sequence = np.array([-1 if s is None else s for s in encoded.sequence_ids(0)])
            assert (sequence == -1).sum() == 4  # <s> a </s></s> b </s>
            for layer in features.layers:
                for pooling, tokens in (("mean", sequence > -2), ("mean_a", sequence == 0), ("mean_b", sequence == 1)):
                    expected = states[layer, tokens].mean(0)
                    assert np.abs(features.features(pooling, layer)[row] - expected).max() <= 1e-4, (pooling, layer)


def test_a_pair_file_is_up_to_date_for_the_same_request_and_refused_for_another_mode(tiny_model, tmp_path):
    from featx.errors import StoreError

    corpus = pair_csv(tmp_path / "pairs.csv")
    run(corpus, tiny_model, tmp_path, "pairs.h5", text_pair_col="second")
    assert run(corpus, tiny_model, tmp_path, "pairs.h5", text_pair_col="second").status == "up-to-date"
    with pytest.raises(StoreError, match="different corpus, model or options"):
        run(corpus, tiny_model, tmp_path, "pairs.h5", text_pair_col="second", pair_mode="separate")


@pytest.mark.parametrize("mode", ["cross", "separate"])
def test_dry_run_estimates_a_pair_extraction(tiny_model, tmp_path, mode):
    from featx.extraction.dryrun.estimation import estimate

    config = ExtractConfig(
        corpus=pair_csv(tmp_path / "pairs.csv"),
        output=tmp_path / "dry.h5",
        model=str(tiny_model),
        text_col="first",
        text_pair_col="second",
        pair_mode=mode,
        progress=False,
    )
    result = estimate(config)
    assert result.seconds > 0 and result.rows == len(PAIRS) and not (tmp_path / "dry.h5").exists()


def test_a_pair_dataset_of_the_wrong_shape_is_refused_on_open(tiny_model, tmp_path):
    import shutil

    import h5py

    from featx.errors import StoreError

    summary = run(
        pair_csv(tmp_path / "pairs.csv"), tiny_model, tmp_path, "pairs.h5", text_pair_col="second", tokens=True
    )
    for name in ("rows/text_pair", "tokens/segment_ids"):
        damaged = shutil.copy(summary.output, tmp_path / "damaged.h5")
        with h5py.File(damaged, "r+") as file:
            del file[name]
            file.create_dataset(name, data=np.zeros(3, dtype=np.int8 if "tokens" in name else "S1"))
        with pytest.raises(StoreError, match=f"dataset '{name}' has shape"):
            featx.open(damaged)
