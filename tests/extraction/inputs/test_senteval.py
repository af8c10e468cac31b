import gzip

import numpy as np
import pytest
from support.tiny import SENTENCES, write_csv

import featx
from featx.errors import InputError
from featx.extraction import senteval_tasks
from featx.extraction.inputs.corpus import read_corpus

TAGS = ("tr", "tr", "va", "te")


def task_file(path, n=None):
    """A SentEval task file of the tiny sentences: PRES/PAST labels, tags tr, tr, va, te in turn."""
    lines = [f"{TAGS[i % 4]}\t{'PRES' if i % 2 else 'PAST'}\t{SENTENCES[i][0]}" for i in range(n or len(SENTENCES))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_task_file_reads_as_text_label_and_split(tmp_path):
    corpus = read_corpus(task_file(tmp_path / "past_present.txt", 4))
    assert corpus.texts == [row[0] for row in SENTENCES[:4]]
    assert corpus.split == ["train", "train", "dev", "test"]
    assert corpus.ids == ["0", "1", "2", "3"]
    assert corpus.labels["label"].names == ["PAST", "PRES"]
    np.testing.assert_array_equal(corpus.labels["label"].codes, [0, 1, 0, 1])
    assert "read as a SentEval task file" in corpus.notes[0] and "2 train, 1 dev, 1 test" in corpus.notes[0]
    zipped = tmp_path / "past_present.txt.gz"
    zipped.write_bytes(gzip.compress((tmp_path / "past_present.txt").read_bytes()))
    assert read_corpus(zipped).texts == corpus.texts


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("tr\tA\tone\nte\tB\n", "line 2 has 2 tab-separated field(s), not 3"),
        ("tr\tA\tone\n\nte\tB\ttwo\n", "line 2 is empty"),
        ("tr\tA\tone\nxx\tB\ttwo\n", "line 2 has the unknown split tag 'xx'"),
        ("tr\tA\tone\nte\tB\t \n", "line 2 has an empty sentence"),
        ("tr\tA\tone\nte\tB\t\u200b\n", "line 2 has an empty sentence"),
    ],
)
def test_malformed_lines_are_named(tmp_path, content, expected):
    path = tmp_path / "task.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_corpus(path)
    assert expected in err.value.message and err.value.hint


def test_skip_empty_leaves_an_empty_sentence_out_and_the_ids_follow_the_lines(tmp_path):
    path = tmp_path / "task.txt"
    path.write_text("tr\tA\tone\nte\tB\t\nte\tA\tthree\n", encoding="utf-8")
    corpus = read_corpus(path, skip_empty=True)
    assert corpus.ids == ["0", "2"] and corpus.skipped_rows == [1]


def test_table_options_that_name_nothing_in_a_task_file_are_refused(tmp_path):
    with pytest.raises(InputError, match="--text-col 'sentence' names nothing"):
        read_corpus(task_file(tmp_path / "task.txt", 2), text_col="sentence")


def test_the_folder_lists_one_corpus_per_task(tmp_path):
    task_file(tmp_path / "tree_depth.txt", 3)
    task_file(tmp_path / "bigram_shift.txt", 3)
    (tmp_path / "notes.md").write_text("not a task")
    assert senteval_tasks(tmp_path) == [
        ("bigram_shift", tmp_path / "bigram_shift.txt"),
        ("tree_depth", tmp_path / "tree_depth.txt"),
    ]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, "holds no SentEval task files"),
        ({"a.txt": ""}, "is empty"),
        ({"a.txt": "text,label\nhi,1\n"}, "is not a SentEval task file"),
    ],
)
def test_a_bad_folder_is_refused(tmp_path, files, expected):
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    with pytest.raises(InputError) as err:
        senteval_tasks(tmp_path)
    assert expected in err.value.message and err.value.hint
    with pytest.raises(InputError, match="does not exist"):
        senteval_tasks(tmp_path / "missing")


def test_a_task_file_and_the_same_rows_as_csv_give_the_same_features(tmp_path, tiny_model):
    task = task_file(tmp_path / "past_present.txt")
    rows = [
        (text, "PRES" if i % 2 else "PAST", ("train", "train", "dev", "test")[i % 4])
        for i, (text, *_) in enumerate(SENTENCES)
    ]
    table = write_csv(tmp_path / "same.csv", rows, header=("text", "label", "split"))
    files = []
    for corpus in (task, table):
        output = tmp_path / f"{corpus.stem}.h5"
        featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
        files.append(featx.FeatureFile(output))
    a, b = files
    with a, b:
        assert a.ids == b.ids and a.texts == b.texts and list(a.split) == list(b.split)
        np.testing.assert_array_equal(a.features("mean", 2), b.features("mean", 2))
        np.testing.assert_array_equal(a.labels("label"), b.labels("label"))
