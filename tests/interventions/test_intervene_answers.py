"""``featx intervene --edit steer --template T --answers A`` on a tiny GPT-2 with its LM head: per alpha, the share
of rows whose answer logit difference rose, the share flipped to the class's answer and the mean change, for the
class-mean direction of the train split and a random one of equal norm, measured on the test split's rows, equal a
hand computation (each prompt run alone through transformers' own LM model with a hand-written hook adding alpha
times the direction to block 0's output); bad input refused with one line before any forward pass."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.lens_models import build_with_head, lens_corpus
from support.tiny import SENTENCES, write_csv

import featx
import featx.probing
from featx.cli import main
from featx.errors import FeatxError
from featx.interventions import intervene

TEMPLATE = "Review: {text} Sentiment:"
ANSWERS = "pos= walk,neg= the"  # single tokens of the zoo's tokenizer


@pytest.fixture(scope="module")
def decoder_features(tmp_path_factory):
    folder = tmp_path_factory.mktemp("steer-answers")
    model = build_with_head("gpt2", folder / "gpt2")
    corpus = lens_corpus(folder / "corpus.csv", rows=12)
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(model), output=output, poolings="mean", store_dtype="float32", progress=False)
    return model, output


def _direction(features_path, layer: int, toward: str) -> tuple[np.ndarray, list[str]]:
    """The unit class-mean difference of the train split's rows, and the test split's texts: the only rows the
    dose-response is measured on (never one the direction was computed from)."""
    with featx.open(features_path) as features:
        X = features.features("mean", layer).astype(np.float64)
        codes, names = features.labels("sentiment"), features.label_names("sentiment")
        train = (codes >= 0) & (features.split == "train")
        test = (codes >= 0) & (features.split == "test")
        texts = [text for text, kept in zip(features.texts, test, strict=True) if kept]
    inside = codes == names.index(toward)
    vector = X[train & inside].mean(axis=0) - X[train & ~inside].mean(axis=0)
    return vector / np.linalg.norm(vector), texts


def _hand_logits(model_folder, texts, shift) -> np.ndarray:
    """Each prompt alone through ``GPT2LMHeadModel``, block 0's output plus ``shift``: the logits of ' the' and
    ' walk' (the classes' answers, in the label's order neg, pos) at the last token."""
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(str(model_folder))
    model = GPT2LMHeadModel.from_pretrained(str(model_folder), dtype=torch.float32).eval()
    ids = [tokenizer(answer, add_special_tokens=False)["input_ids"][0] for answer in (" the", " walk")]
    added = torch.tensor(shift, dtype=torch.float32)

    def add(module, args, output):
        return output + added if isinstance(output, torch.Tensor) else (output[0] + added, *output[1:])

    handle = model.transformer.h[0].register_forward_hook(add)
    out = []
    with torch.no_grad():
        for text in texts:
            logits = model(**tokenizer(TEMPLATE.replace("{text}", text), return_tensors="pt")).logits
            out.append(logits[0, -1, ids].double().numpy())
    handle.remove()
    return np.array(out)


@pytest.mark.slow  # ~4 s: five passes of the tiny decoder and the hand computation
def test_the_dose_response_read_by_the_answers_equals_a_hand_computation(decoder_features):
    model, path = decoder_features
    result = intervene(
        path,
        label="sentiment",
        edit="steer",
        at="1",
        toward="pos",
        alphas="0,8",
        answers=ANSWERS,
        template=TEMPLATE,
        write=False,
    )
    direction, texts = _direction(path, 1, "pos")
    rng = np.random.default_rng(0).standard_normal(len(direction))
    directions = {"probe": direction, "random": rng / np.linalg.norm(rng)}
    before = _hand_logits(model, texts, np.zeros(len(direction)))
    table = result.table.set_index(["alpha", "direction"])
    for (alpha, name), row in table.iterrows():
        after = _hand_logits(model, texts, alpha * directions[name])
        rise = (after[:, 1] - after[:, 0]) - (before[:, 1] - before[:, 0])
        assert row.score_change == pytest.approx(rise.mean(), abs=1e-4)
        assert row.moved == pytest.approx(np.mean(rise > 1e-6)), (alpha, name)
        candidates = before.argmax(axis=1) != 1
        if candidates.any():
            assert row.flipped == pytest.approx(np.mean(after[candidates].argmax(axis=1) == 1))
    assert set(table.loc[0.0, "moved"]) == {0.0} and set(table.loc[0.0, "score_change"]) == {0.0}
    assert result.meta["reader"].startswith("the answers at the end of")
    assert set(table.n_rows) == {len(texts)} == {result.meta["n_rows"]}  # the test split's 4 of the 12 rows
    assert result.meta["direction_source"].endswith("of the train split's rows")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"answers": "pos= good,neg= the"}, "' good' is 3 tokens of the .* tokenizer"),
        ({"answers": " walk"}, "gives one answer"),
        ({"toward": "meh"}, "toward='meh': label 'sentiment' has no such class"),
        ({"template": "Review: {text}"}, "has no answer position: it ends in a field"),
        ({"template": None}, "answers and template go together"),
        ({"edit": "erase", "toward": None}, "they apply to edit='steer'"),
    ],
)
def test_bad_answers_are_one_line_before_any_forward_pass(options, message, decoder_features, no_forward):
    _, path = decoder_features
    options = {"edit": "steer", "toward": "pos", "answers": ANSWERS, "template": TEMPLATE, **options}
    with pytest.raises(FeatxError, match=message) as error:
        intervene(path, label="sentiment", at="1", write=False, **options)
    assert "\n" not in error.value.message


@pytest.mark.parametrize("given", ["Review: {text}\\n", "@FILE"])
def test_the_template_is_read_as_extract_and_lens_read_it(given, decoder_features, tmp_path, no_forward):
    """A typed \\n is a newline, and @FILE the file's text (both the prompt 'Review: {text}' plus a newline, which ends
    in its field): refused as ending in the row's text, not read as a literal backslash-n or a template '@FILE'."""
    _, path = decoder_features
    (tmp_path / "prompt.txt").write_text("Review: {text}\n")
    template = given.replace("@FILE", f"@{tmp_path / 'prompt.txt'}")
    args = ["intervene", str(path), "--label", "sentiment", "--at", "1", "--edit", "steer", "--toward", "pos"]
    result = CliRunner().invoke(main, [*args, "--template", template, "--answers", ANSWERS])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, "has no answer position: it ends in a field")


def test_a_decoder_without_an_lm_head_is_refused(tmp_path, no_forward):
    from support.families import BY_NAME, build_family
    from support.lens_models import lens_corpus

    model = build_family(BY_NAME["llama"], tmp_path / "bare")  # LlamaModel, untied: no lm_head in its checkpoint
    corpus = lens_corpus(tmp_path / "corpus.csv", rows=6)
    path = tmp_path / "bare.features.h5"
    featx.extract(corpus, model=str(model), output=path, poolings="mean", store_dtype="float32", progress=False)
    args = ["intervene", str(path), "--label", "sentiment", "--at", "1", "--edit", "steer", "--toward", "pos"]
    result = CliRunner().invoke(main, [*args, "--template", TEMPLATE, "--answers", ANSWERS])
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, "has no LM head")


def test_answers_on_an_encoder_are_refused(planted_features, no_forward):
    with pytest.raises(FeatxError, match="answers reads a decoder's next-token answer, and .* is an encoder"):
        intervene(
            planted_features,
            label="animal",
            at="1",
            edit="steer",
            toward="dogs",
            answers=" a, b",
            template="{text} Is:",
        )


@pytest.mark.slow  # ~3 s: the tiny decoder's passes fold by fold and the hand computation
def test_without_a_split_each_fold_is_read_along_the_other_folds_direction(decoder_features, tmp_path):
    """The decoder's corpus without its split column (12 rows): each of ``--edit erase``'s 5 folds is steered along
    the class-mean difference of the other folds' rows; the answers' dose-response equals the hand computation of
    every fold's rows with its own direction."""
    model, _ = decoder_features
    corpus = write_csv(tmp_path / "corpus.csv", [row[:3] for row in SENTENCES], header=("text", "sentiment", "tense"))
    path = tmp_path / "corpus.features.h5"
    featx.extract(corpus, model=str(model), output=path, poolings="mean", store_dtype="float32", progress=False)
    options = dict(label="sentiment", edit="steer", at="1", toward="pos", answers=ANSWERS, template=TEMPLATE)
    result = intervene(path, alphas="8", write=False, **options)
    with featx.open(path) as features:
        task = featx.probing.load_task(features, "sentiment", 5, 0)
        X = features.features("mean", 1).astype(np.float64)
        texts = list(features.texts)
    pos = np.asarray(task.class_names)[task.y] == "pos"
    rises = {"probe": [], "random": []}
    rng = np.random.default_rng(0).standard_normal(X.shape[1])
    for train, test in task.plan.folds:  # the fold's direction: its training rows' class means, never its own rows
        vector = X[task.kept[train][pos[train]]].mean(axis=0) - X[task.kept[train][~pos[train]]].mean(axis=0)
        fold_texts = [texts[row] for row in task.kept[test]]
        before = _hand_logits(model, fold_texts, np.zeros(len(vector)))
        for name, unit in (("probe", vector / np.linalg.norm(vector)), ("random", rng / np.linalg.norm(rng))):
            after = _hand_logits(model, fold_texts, 8.0 * unit)
            rises[name].append((after[:, 1] - after[:, 0]) - (before[:, 1] - before[:, 0]))
    table = result.table.set_index("direction")
    for name, parts in rises.items():
        rise = np.concatenate(parts)
        assert table.loc[name, "score_change"] == pytest.approx(rise.mean(), abs=1e-4)
        assert table.loc[name, "moved"] == pytest.approx(np.mean(rise > 1e-6))
    assert result.meta["n_rows"] == 12 and result.meta["runs_per_pass"] == 5
    assert "of the other folds' rows (5 folds)" in result.meta["direction_source"]
