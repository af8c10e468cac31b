"""A study file is checked whole before any work: each bad input is one error naming the file, the key, its
line and (for an unknown key) the nearest known one; exit 2 on the command line."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from click.testing import CliRunner

import featx.study
from featx.cli import main
from featx.errors import FeatxError, InputError
from featx.extraction import local_model_folder
from featx.study import make_plan, study_config

GOOD = """\
[study]
output = "out"
metric = "accuracy"

[[models]]
name = "minilm"

[[models]]
name = "control"
random_init = true
seeds = [0, 1, 2]

[[corpora]]
name = "sst2"
path = "sst2.csv"
labels = ["label"]
text_col = "sentence"

[extract]
pooling = "mean"

[probe]
layer = "all"
no-control = true
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sst2.csv").write_text("sentence,label\na b,x\n")
    (tmp_path / "tasks").mkdir()
    for task in ("past_present", "subj_number"):
        (tmp_path / "tasks" / f"{task}.txt").write_text(f"tr\tPAST\tShe walked .\nte\tPRES\tShe walks {task} .\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "empty")
    # the same corpus named otherwise: a link, a hard link, a copy; a copy read as another format; other bytes
    (tmp_path / "sst2-link.csv").symlink_to(tmp_path / "sst2.csv")
    (tmp_path / "corpora").symlink_to(tmp_path, target_is_directory=True)  # corpora/sst2.csv: through a folder link
    os.link(tmp_path / "sst2.csv", tmp_path / "hard.csv")
    for name in ("copy.csv", "copy.tsv"):
        shutil.copy(tmp_path / "sst2.csv", tmp_path / name)
    (tmp_path / "other.csv").write_text("sentence,label\na c,x\n")  # the same size
    return tmp_path


def write(folder, text: str):
    path = folder / "study.toml"
    path.write_text(text)
    return path


def test_a_good_file_expands_seeds_and_takes_options_by_flag_or_field_name(folder):
    config = study_config(write(folder, GOOD))
    assert [model.name for model in config.models] == ["minilm", "control-s0", "control-s1", "control-s2"]
    assert [model.seed for model in config.models] == [None, 0, 1, 2]
    assert config.output == folder / "out"
    assert dict(config.corpora[0].options) == {"text_col": "sentence"}
    assert dict(config.probe) == {"layers": "all", "control": False}
    extract = config.extract_config(config.models[2], config.corpora[0])
    assert (extract.random_init, extract.init_seed, extract.poolings) == (True, 1, "mean")
    assert extract.output == str(folder / "out" / "control-s1" / "sst2" / "features.h5")


BAD = [
    # (change to GOOD, words of the message, line, words of the hint)
    (('output = "out"', 'outptu = "out"'), "[study] outptu: unknown key 'outptu'", 2, "did you mean 'output'?"),
    (("[probe]", "[probes]"), "unknown key 'probes'", None, "did you mean 'probe'?"),
    # a missing corpus file is refused by study run while an extraction of it is not done (test_missing_corpus)
    (('path = "sst2.csv"', 'path = "tasks"'), "[[corpora]] #1 path: corpus path", 15, "give a corpus file"),
    (('name = "control"\nrandom_init = true\nseeds = [0, 1, 2]', 'name = "minilm"'), "duplicate name", 9, "named so"),
    (("seeds = [0, 1, 2]", "seeds = [0, 0]"), "repeat a seed", 11, None),
    # every model is planned on every corpus before any work: 100,000 entries (4 MiB) took minutes
    (
        ('[[models]]\nname = "minilm"', "".join(f'[[models]]\nname = "m{i}"\n\n' for i in range(101))),
        "[[models]] #101: the study has 102 [[models]] entries, at most 100",
        305,
        "split the study",
    ),
    # each seed plans a model (~4 ms) before any work: a million seeds planned for over an hour
    (("seeds = [0, 1, 2]", f"seeds = {list(range(101))}"), "seeds gives 101 seeds; a [[models]]", 11, "[0, 1, 2]"),
    # --init-seed's bound, said at the seeds that gave it, not at [extract] as --init-seed
    (("seeds = [0, 1, 2]", "seeds = [4294967296]"), "#2 seeds: seeds [4294967296] must be a list of whole", 11, None),
    (("random_init = true\n", ""), "seeds are the random weights' seeds", 10, "random_init = true"),
    (('pooling = "mean"', 'pooling = "mean,bogus"'), "pooling 'bogus' is not available", 20, None),
    (('pooling = "mean"', 'layers = "1;3"'), "[extract] layers: --layer 1;3: layer '1;3' is not a number", 20, None),
    (('layer = "all"', 'layer = "cat(1,x)"'), "[probe] layer: --layer cat(1,x): layer 'x' is not a number", 23, None),
    (("random_init = true", "randominit = true"), "[[models]] #2 randominit: unknown option", 10, "'random_init'"),
    (("random_init = true", "init_seed = 3"), "'init_seed' is set by the study", 10, "[[models]] seeds"),
    (('pooling = "mean"', 'poolng = "mean"'), "[extract] poolng: unknown option 'poolng'", 20, "'pooling'"),
    (('layer = "all"', 'layr = "all"'), "[probe] layr: unknown option 'layr'", 23, "'layer'"),
    (
        ('layer = "all"', "sweep = true"),
        "[probe] sweep: a study runs featx probe's probes, not its --sweep",
        23,
        "--sweep on a cell's features file",
    ),  # not "unknown option 'sweep'", "did you mean 'seed'?"
    (('layer = "all"', 'label = "x"'), "'label' is set by the study", 23, "[[corpora]] labels"),
    (('pooling = "mean"', "max_length = -3"), "[extract] max_length: --max-length -3", 20, None),
    (('layer = "all"', "folds = 1"), "[probe] folds: --folds 1 is too small", 23, None),
    # C's grid has no flag (probe's nor fit's): named by its key, never as a made-up --cs
    (('layer = "all"', "cs = [0]"), "[probe] cs: cs must hold positive numbers", 23, "e.g. cs = [0.1, 1, 10]"),
    (('metric = "accuracy"', 'metric = "acuracy"'), "[study] metric: --metric acuracy is not known", 3, None),
    (('text_col = "sentence"', "text_col = 3"), "[[corpora]] #1 text_col", 17, None),
    (('name = "minilm"', 'name = "mini/lm"'), "name 'mini/lm' is not a folder name", 6, None),
    # a folder name too long for a file system: OSError "File name too long" in the run
    (('name = "minilm"', f'name = "{"m" * 101}"'), f"name '{'m' * 101}' is not a folder name", 6, "at most 100"),
    (('name = "minilm"', 'name = "minilm\\n"'), "name 'minilm\\n' is not a folder name", 6, None),  # "$" let it in
    (('labels = ["label"]', "labels = []"), "labels [] must name label columns", 16, None),
    (('[[models]]\nname = "minilm"', '[[models]]\nname = "minilm"\nmodel = "./missing"'), "model folder", 7, None),
    (('output = "out"', 'output = "out"\njobs = 0'), "[study] jobs: jobs 0 runs nothing", 3, None),
    (('output = "out"', 'output = "out"\njobs = "2"'), "[study] jobs: jobs '2' must be int", 3, "jobs = 2 (a whole"),
    (('metric = "accuracy"', "metric = 1"), "[study] metric: metric 1 must be str", 3, 'metric = "..." (in quotes)'),
    (('output = "out"', 'output = "out"\nengine = "rai"'), "unknown engine 'rai'", 3, None),
    (('output = "out"', 'output = "out"\ncorpus = 1'), "[study] corpus: unknown key", 3, None),
    (("[probe]", "[probe\n"), "not valid TOML", None, None),
    (('output = "out"', 'output = "/"'), "[study] output: the output path / is a filesystem root", 2, None),
    (('output = "out"', 'output = "."'), "[study] output: the output path", 2, "a folder of its own"),
    (('output = "out"', 'output = "out/../.."'), "is the study file's own folder or a folder above it", 2, None),
    # not "is not a folder": a link to one is refused as a link (nothing is written through one), naming its target
    (('output = "out"', 'output = "linked"'), "linked is a symbolic link; featx refuses to write", 2, "empty"),
    (('output = "out"', 'output = "sst2.csv"'), "sst2.csv is a file, not a folder", 2, "a new or study folder"),
    (('output = "out"', 'output = "out"\naddress = "127.0.0.1:1"'), "address is for the Ray engine", 3, "ray"),
    (('path = "sst2.csv"', 'path = "sst2.csv"\nsenteval = "tasks"'), "a path or senteval, not both", 16, None),
    (('path = "sst2.csv"', 'senteval = "none"'), "SentEval folder", 15, "task files"),
    (('path = "sst2.csv"', 'senteval = "empty"'), "holds no SentEval task files", 15, "probing data"),
    (('output = "out"', 'output = "o\\u0000ut"'), "[study] output: path 'o\\x00ut' holds a NUL", 2, "remove it"),
    (('output = "out"', 'output = "~nosuchuser-featx/out"'), "[study] output: path ~nosuchuser", 2, "spell it out"),
    (('path = "sst2.csv"', 'path = "~nosuchuser-featx/a.csv"'), "[[corpora]] #1 path: path ~nosuchuser", 15, None),
    (('name = "minilm"', 'name = "minilm"\nmodel = "~nosuchuser-featx/m"'), "#1 model: path ~nosuchuser", 7, None),
    (('path = "sst2.csv"', 'senteval = "~nosuchuser-featx/t"'), "#1 senteval: path ~nosuchuser", 15, None),
    # a group column is a corpus's: given per [[corpora]] (read from the corpus file by study run: test_study_groups)
    (('layer = "all"', 'group = "doc"'), "[probe] group: 'group' is set by the study", 23, "[[corpora]] group"),
    (("labels = [", 'group = "label"\nlabels = ['), "group 'label' is also one of the corpus's labels", 16, None),
    (("labels = [", "group = 3\nlabels = ["), "[[corpora]] #1 group: group 3 must name a label column", 16, "@texts"),
]


@pytest.mark.parametrize(("change", "words", "line", "hint"), BAD, ids=[case[1][:30] for case in BAD])
def test_each_bad_input_is_one_error_with_file_key_and_line(folder, change, words, line, hint):
    path = write(folder, GOOD.replace(*change))
    with pytest.raises(InputError) as caught:
        study_config(path)
    assert str(path) in caught.value.message
    assert words in caught.value.message
    if line is not None:
        assert f", line {line}:" in caught.value.message
    if hint is not None:
        assert hint in (caught.value.hint or "")


def test_a_sweep_in_the_probe_table_is_told_how_to_run_one_in_the_callers_words(folder):
    path = write(folder, GOOD.replace('layer = "all"', "sweep = true"))
    with pytest.raises(InputError, match="not its --sweep") as caught:
        featx.study.dry_run(str(path))
    assert caught.value.hint.startswith("run featx.probing.sweep('OUTPUT/<model>/<corpus>/features.h5', label=")
    ran = CliRunner().invoke(main, ["study", "run", str(path), "--dry-run"])
    assert ran.exit_code != 0 and "features.h5 --label LABEL --sweep on a cell" in ran.output, ran.output


AGAIN_MODEL = '[[models]]\nname = "again"\n'
HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"  # the hub id of the packaged default model
AGAIN_CORPUS = '[[corpora]]\nname = "again"\npath = "./sst2.csv"\nlabels = ["label"]\ntext_col = "sentence"\n'
REPEATS = [
    # (entry added before [[corpora]] or at the end, the error's words (None: accepted), its line)
    (AGAIN_MODEL, "[[models]] #3 name: [[models]] #3 repeats [[models]] #1: the packaged default model", 14),
    (AGAIN_MODEL + 'model = "default"\npooling = "mean"\n', "#3 repeats [[models]] #1", 14),  # [extract]'s own
    (AGAIN_MODEL + "max_length = 64\n", None, None),  # another extraction: not a repeat
    (
        AGAIN_MODEL + "random_init = true\nseeds = [5, 2]\n",
        "#3 name: [[models]] #3 (seed 2) repeats [[models]] #2 (seed 2)",
        14,
    ),
    (AGAIN_MODEL + "random_init = true\nseeds = [5]\n", None, None),
    # the same model by what is loaded: the packaged default by its folder; a folder and a link to it
    (AGAIN_MODEL + 'model = "{default}"\n', "#3 repeats [[models]] #1: '{default}' and the packaged default", 14),
    (
        AGAIN_MODEL + 'model = "empty"\n' + AGAIN_MODEL.replace("again", "linked") + 'model = "./linked/"\n',
        "[[models]] #4 repeats [[models]] #3: '{folder}/linked' and '{folder}/empty' load the same folder, ",
        17,
    ),
    # the packaged model's own hub id is the packaged model (decided from the id, offline); another hub id is its id
    (
        AGAIN_MODEL + f'model = "{HUB_ID}"\n',
        f"#3 name: [[models]] #3 repeats [[models]] #1: '{HUB_ID}' and the packaged default model are one model: "
        f"the packaged default is a copy of the hub's {HUB_ID}, the same options",
        14,
    ),
    (
        AGAIN_MODEL + f'model = "{HUB_ID}"\nrandom_init = true\nseeds = [1]\n',
        f"[[models]] #3 repeats [[models]] #2 (seed 1): '{HUB_ID}' and the packaged default model are one",
        14,
    ),
    (AGAIN_MODEL + f'model = "{HUB_ID}"\nmax_length = 64\n', None, None),
    (AGAIN_MODEL + 'model = "sentence-transformers/all-mpnet-base-v2"\n', None, None),
    (AGAIN_CORPUS, "[[corpora]] #2 name: [[corpora]] #2 repeats [[corpora]] #1: ./sst2.csv, the same options", 23),
    (AGAIN_CORPUS.replace('["label"]', '["other"]'), "[[corpora]] #2 repeats [[corpora]] #1", 23),
    (AGAIN_CORPUS + "max_length = 64\n", None, None),
    (AGAIN_CORPUS.replace('"sentence"', '"label"'), None, None),
    # the same bytes by any name: a link, a hard link, a copy (its sha256); not a copy read as TSV, nor other bytes;
    # each path as the study file gives it, and where a link leads
    (
        AGAIN_CORPUS.replace("./sst2", "sst2-link"),
        "#2 repeats [[corpora]] #1: sst2-link.csv (a link to {folder}/sst2.csv) and sst2.csv are the same file, ",
        23,
    ),
    (
        AGAIN_CORPUS.replace("./sst2", "corpora/sst2"),
        "#2 repeats [[corpora]] #1: corpora/sst2.csv (a link to {folder}/sst2.csv) and sst2.csv are the same file, ",
        23,
    ),
    (AGAIN_CORPUS.replace("./sst2", "hard"), "#2 repeats [[corpora]] #1: hard.csv and sst2.csv are the same file", 23),
    (AGAIN_CORPUS.replace("./sst2", "copy"), ": copy.csv and sst2.csv are the same bytes, the same options", 23),
    (AGAIN_CORPUS.replace("./sst2.csv", "copy.tsv"), None, None),
    (AGAIN_CORPUS.replace("./sst2", "other"), None, None),
]


@pytest.mark.parametrize(("entry", "words", "line"), REPEATS)
def test_a_model_or_corpus_given_twice_is_refused_naming_both_entries(folder, entry, words, line):
    """Two [[models]] (or [[corpora]]) entries whose extractions would be the very same (the same model or file,
    the same effective options, the same seed) would be extracted and probed twice: refused before any work,
    naming both entries; one that changes the features (an option, a seed) is another model."""
    where = "[[corpora]]" if entry.startswith("[[models]]") else "[probe]"
    names = {"default": str(local_model_folder("default")), "folder": str(folder.resolve())}
    text, words = GOOD.replace(where, f"{entry.format(**names)}\n{where}"), words and words.format(**names)
    if words is None:
        study_config(write(folder, text))
        return
    path = write(folder, text)
    with pytest.raises(InputError) as caught:
        study_config(path)
    assert f"{path}, line {line}: " in caught.value.message and words in caught.value.message
    assert "remove one" in caught.value.hint and "max_length" in caught.value.hint


def test_a_senteval_folder_is_one_corpus_per_task_and_a_task_file_one(folder):
    text = GOOD.replace('name = "sst2"\npath = "sst2.csv"', 'name = "se"\nsenteval = "tasks"')
    config = study_config(write(folder, text.replace('text_col = "sentence"\n', "")))
    assert [(corpus.name, corpus.path.name) for corpus in config.corpora] == [
        ("se-past_present", "past_present.txt"), ("se-subj_number", "subj_number.txt")
    ]  # fmt: skip
    assert all(corpus.labels == ("label",) for corpus in config.corpora)
    one = GOOD.replace('name = "sst2"\npath = "sst2.csv"', 'senteval = "tasks/subj_number.txt"')
    config = study_config(write(folder, one.replace('text_col = "sentence"\n', "")))
    assert [(corpus.name, corpus.path.name) for corpus in config.corpora] == [("subj_number", "subj_number.txt")]


def test_a_corpus_is_named_after_its_file_less_its_format_suffix_and_same_names_are_refused(folder):
    """``agnews.train.csv`` and ``agnews.test.csv`` are two corpora (their names were both ``agnews``, refused as
    a duplicate); ``sst2.csv.gz`` is ``sst2``; a SentEval task file keeps its dots too. Two files whose names
    differ only in their format are still refused as one name, with the hint to name them."""
    for name in ("agnews.train.csv", "agnews.test.csv", "sst2.csv.gz", "sst2.tsv"):
        (folder / name).write_text(f"sentence,label\n{name} b,x\n")  # other bytes: not one corpus twice
    (folder / "subj_number.v2.txt").write_text("tr\tPAST\tShe walked .\nte\tPRES\tShe walks .\n")
    entries = [{"path": str(folder / name)} for name in ("agnews.train.csv", "agnews.test.csv", "sst2.csv.gz")]
    study = {"models": [{"name": "m"}], "corpora": [*entries, {"senteval": str(folder / "subj_number.v2.txt")}]}
    names = [corpus.name for corpus in study_config(study).corpora]
    assert names == ["agnews.train", "agnews.test", "sst2", "subj_number.v2"]
    study["corpora"] = [{"path": str(folder / "sst2.csv.gz")}, {"path": str(folder / "sst2.tsv")}]
    duplicate = r"\[\[corpora\]\] #2 name: duplicate name 'sst2' \(from its file's name\)"
    with pytest.raises(InputError, match=duplicate) as caught:
        study_config(study)
    assert "[[corpora]] #1 name" in caught.value.hint and 'add name = "..."' in caught.value.hint


def test_a_missing_study_file_and_a_dict_study(folder):
    with pytest.raises(InputError, match="does not exist"):
        study_config(folder / "none.toml")
    study = {"models": [{"name": "m"}], "corpora": [{"path": str(folder / "sst2.csv"), "bogus": 1}]}
    with pytest.raises(InputError, match=r"^study: \[\[corpora\]\] #1 bogus: unknown option 'bogus'"):
        study_config(study)
    with pytest.raises(InputError, match="the study has no"):
        study_config({"models": [{"name": "m"}]})


def test_the_command_line_exits_2_before_any_work(folder):
    path = write(folder, GOOD.replace('layer = "all"', 'layr = "all"'))
    result = CliRunner().invoke(main, ["study", "run", str(path)])
    assert result.exit_code == 2
    assert "line 23" in result.output and "did you mean 'layer'?" in result.output
    assert not (folder / "out").exists()


# (function, the study file's extra [study] line, options, Python's words, command line, its words): each of
# featx.study's functions names the keyword given, the command line its flag or argument
CALLERS = [
    ("status", None, {}, "study='' is empty: give a study file", ["status"], "STUDY is empty: give a study file"),
    ("dry_run", None, {}, "study='' is empty: give a study file", ["run", "--dry-run"], "STUDY is empty"),
    ("write_report", None, {}, "study='' is empty: give a study file", ["report"], "STUDY is empty"),
    ("run", "", {"jobs": 0}, "jobs=0 must be a whole number", ["run", "--jobs", "0"], "--jobs 0 must be a whole"),
    ("run", 'address = "auto"', {}, "(or engine='ray'), or leave", ["run"], "(or --engine ray), or leave"),
    ("load", None, {}, "run the study first: featx.study.run('study.toml')", None, None),
    # a study not run yet: its report shares load's one hint (featx.report.run_study_first)
    ("write_report", "", {}, "first: featx.study.run('study.toml')", ["report"], "first: featx study run STUDY.toml"),
]


@pytest.mark.parametrize(
    ("function", "line", "options", "python", "args", "cli"), CALLERS, ids=[f"{c[0]}-{c[1] or ''}" for c in CALLERS]
)
def test_a_study_function_names_what_its_caller_gave(folder, function, line, options, python, args, cli):
    import featx.study

    study = "" if line is None else write(folder, GOOD.replace('metric = "accuracy"', line))
    given = folder if function == "load" else study  # load reads an output folder
    with pytest.raises(FeatxError) as caught:
        getattr(featx.study, function)(given, **options)
    assert python in str(caught.value) and "--" not in str(caught.value), str(caught.value)
    if args is not None:
        command = ["study", args[0], str(study), *args[1:]]
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2 and cli in result.output and not re.search(r"\w=\S", result.output), result.output
    assert not (folder / "out").exists()


def test_a_study_dict_written_as_a_file_reads_back_the_same(tmp_path):
    """``study_toml``: tables, arrays of tables and plain values, strings with quotes, backslashes, control
    characters and non-ASCII included, read back by the study file's own reader as the same dict."""
    from featx.study import study_toml
    from featx.study.source import read_study

    study = {
        "study": {"output": 'out "x"\\y\n\tz\x7f é', "jobs": 2, "metric": "accuracy"},
        "models": [{"name": "minilm"}, {"name": "minilm-random", "random_init": True, "seeds": [0, 1]}],
        "corpora": [{"name": "sst2", "path": "sst2.csv", "labels": ["label"]}],
        "probe": {"layer": "all", "c": 0.5},
    }
    path = tmp_path / "study.toml"
    path.write_text(study_toml(study), encoding="utf-8")
    assert read_study(path)[0] == study


@pytest.mark.parametrize("damage", ["weights", "config"])
def test_a_damaged_model_folder_is_refused_at_its_models_entry(folder, tiny_model, damage):
    import shutil

    broken = folder / "broken"
    shutil.copytree(tiny_model, broken)
    if damage == "weights":
        (broken / "model.safetensors").write_bytes((tiny_model / "model.safetensors").read_bytes()[:100])
    else:
        (broken / "config.json").write_text("{not json")
    path = write(folder, GOOD.replace('[[models]]\nname = "minilm"', '[[models]]\nname = "minilm"\nmodel = "broken"'))
    with pytest.raises(InputError) as caught:
        make_plan(path)  # before any work, as featx study run, status and --dry-run start
    assert f"{path}, line 7: [[models]] #1 model: " in caught.value.message and "broken" in caught.value.message
