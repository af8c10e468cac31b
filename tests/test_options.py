"""``featx.options``: the frozen ``Options`` base and its check builders, each with the message and hint
a user sees. Data-driven: a case is (options, the message's pattern, the hint's pattern)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from featx.checks import names, number, numbers, one_of, parse_whole, path_like, requires, whole
from featx.errors import InputError
from featx.options import (
    Check,
    FeatxDeprecationWarning,
    Options,
    command_line,
    flag_of,
    flagged,
    keyword_doc,
    keywords_of,
    normalise,
    on_command_line,
    option,
    renamed,
)


@dataclass(frozen=True)
class Sample(Options):
    """Every builder once, on fields of the kinds the commands have."""

    size: Any = 4
    budget: Any = None
    rate: Any = 0.5
    share: Any = None
    grid: Any = (0.1, 1.0)
    method: Any = "leace"
    kind: Any = None
    parts: Any = "a,b"
    picked: Any = "x"
    join: Any = "id"
    labels: Any = None

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        whole("size", "--size"),
        whole("budget", "--budget", minimum=0, optional=True),
        number("rate", "--rate", high=1.0),
        number("share", "--share", low=0.0, low_open=False, optional=True, hint="e.g. --share 0.5"),
        numbers("grid", "--grid"),
        one_of("method", "--method", ("leace", "inlp")),
        one_of("kind", "--kind", ("a", "b"), optional=True, hint="use --kind a or --kind b"),
        names("parts", "--part", example="e.g. --part a,b"),
        names("picked", "--pick", choices=("x", "y")),
        requires("join", "--join", "labels", "--labels", default="id"),
    )


REFUSED = [
    ({"size": 0}, r"^--size 0 must be a whole number of at least 1$", r"^give --size a whole number of at least 1$"),
    ({"size": 2.5}, r"^--size 2.5 must be a whole number", r"at least 1$"),
    ({"size": True}, r"^--size True must be a whole number", r"at least 1$"),
    ({"size": None}, r"^--size None must be", r"at least 1$"),
    ({"budget": -1}, r"^--budget -1 must be a whole number of at least 0$", r"or leave it out for the default$"),
    (
        {"rate": 0},
        r"^--rate 0 must be a number above 0 and at most 1$",
        r"^give --rate a number above 0 and at most 1$",
    ),
    ({"rate": 1.5}, r"^--rate 1.5 must be a number above 0 and at most 1$", r"^give --rate"),
    ({"rate": float("nan")}, r"^--rate nan must be a number", r"^give --rate"),
    ({"rate": "half"}, r"^--rate half must be a number", r"^give --rate"),
    ({"share": -0.1}, r"^--share -0.1 must be a number at least 0$", r"^e\.g\. --share 0\.5$"),
    ({"grid": ()}, r"^--grid must hold positive numbers \(got \(\)\)$", r"^e\.g\. --grid 0\.1,1,10$"),
    ({"grid": (1.0, 0.0)}, r"^--grid must hold positive numbers", r"^e\.g\. --grid"),
    ({"grid": ("a",)}, r"^--grid must hold positive numbers \(got \('a',\)\)$", r"^e\.g\. --grid"),
    ({"grid": 3}, r"^--grid must hold positive numbers \(got 3\)$", r"^e\.g\. --grid"),
    ({"method": "pca"}, r"^--method 'pca' is not understood$", r"^choose one of: leace, inlp$"),
    ({"kind": "c"}, r"^--kind 'c' is not understood$", r"^use --kind a or --kind b$"),
    ({"parts": " , "}, r"^--part selects nothing$", r"^e\.g\. --part a,b$"),
    ({"picked": "x,z"}, r"^--pick 'z' is not available$", r"^choose from x, y$"),
    ({"picked": []}, r"^--pick selects nothing$", r"^choose from x, y$"),
    ({"join": "row"}, r"^--join applies to --labels only$", r"^add --labels, or leave --join out$"),
]


@pytest.mark.parametrize("options, message, hint", REFUSED, ids=[repr(case[0]) for case in REFUSED])
def test_every_builder_refuses_with_one_message_and_a_hint(options, message, hint):
    with pytest.raises(InputError) as error, command_line():  # the command line's wording: the flags
        Sample(**options)
    assert error.value.hint is not None
    assert re.search(message, error.value.message), error.value.message
    assert re.search(hint, error.value.hint), error.value.hint


# The same violations from Python: the keyword the caller gave, with its value as Python spells it.
FROM_PYTHON = [
    ({"size": 0}, r"^size=0 must be a whole number of at least 1$", r"^give size a whole number of at least 1$"),
    ({"budget": -1}, r"^budget=-1 must be a whole number of at least 0$", r"^give budget a whole number"),
    ({"rate": 1.5}, r"^rate=1.5 must be a number above 0 and at most 1$", r"^give rate a number above 0"),
    ({"grid": ()}, r"^grid must hold positive numbers \(got \(\)\)$", r"^e\.g\. grid=\(0\.1, 1, 10\)$"),
    ({"method": "pca"}, r"^method='pca' is not understood$", r"^choose one of: leace, inlp$"),
    ({"kind": "c"}, r"^kind='c' is not understood$", r"^use --kind a or --kind b$"),
    ({"parts": " , "}, r"^parts selects nothing$", r"^e\.g\. --part a,b$"),
    ({"picked": "z"}, r"^picked='z' is not available$", r"^choose from x, y$"),
    ({"join": "x"}, r"^join applies to labels only$", r"^add labels, or leave join out$"),
]


@pytest.mark.parametrize("options, message, hint", FROM_PYTHON, ids=[repr(case[0]) for case in FROM_PYTHON])
def test_a_python_caller_reads_the_keyword_it_gave(options, message, hint):
    """Inside a Python entry point (``keywords_of``) every builder names the field, which is the keyword; a flag
    written into a hint by hand is reworded only where the field declares it (``Sample``'s fields have none)."""
    with pytest.raises(InputError) as error, keywords_of(Sample):
        Sample(**options)
    assert re.search(message, error.value.message), error.value.message
    assert re.search(hint, error.value.hint), error.value.hint


def test_a_decorated_generator_speaks_its_callers_words_at_each_step_only():
    """``keywords_of`` on a generator function (``featx.report.plot_files``) covers its body, which runs as it is
    iterated, not only the call that made it; between steps, its consumer is not inside (its own calls are its)."""

    @keywords_of(Sample)
    def steps():
        yield on_command_line()
        Sample(size=0)

    made = steps()
    assert next(made) is False and on_command_line()
    with pytest.raises(InputError, match=r"^size=0 must be"):
        next(made)
    with pytest.raises(InputError, match=r"^--size 0 must be"), command_line():
        list(steps())


def test_accepted_values_are_normalised_once():
    sample = Sample(
        size=1, budget=0, rate=1.0, share=0.0, grid=[1, "10"], method=" INLP ", kind="B", parts=["b", " a ", "b"]
    )
    assert sample.grid == (1.0, 10.0)
    assert sample.method == "inlp" and sample.kind == "b"
    assert sample.parts == ("b", "a")
    assert Sample(picked="Y, x, y").picked == ("y", "x")
    assert Sample(parts="a, ,b,a").parts == ("a", "b")
    assert Sample(kind=None, budget=None, share=None).kind is None


def test_requires_is_quiet_at_the_default_or_with_the_other_option():
    assert Sample(join="id").join == "id"
    assert Sample(join="row", labels="labels.csv").join == "row"


def test_options_are_frozen_and_replace_checks_again():
    sample = Sample()
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.size = 3  # type: ignore[misc]
    changed = sample.replace(size=8, method="INLP")
    assert (changed.size, changed.method, sample.size, sample.method) == (8, "inlp", 4, "leace")
    with pytest.raises(InputError, match="--size 0"):
        sample.replace(size=0)
    with pytest.raises(InputError, match="--size 0"):
        dataclasses.replace(sample, size=0)


def test_checks_run_in_table_order_and_the_first_failure_is_reported():
    with pytest.raises(InputError, match="--size"):
        Sample(size=0, method="pca")


def test_normalise_sets_a_field_of_a_frozen_config():
    sample = Sample()
    normalise(sample, "method", "inlp")
    assert sample.method == "inlp"


def test_a_config_without_constraints_checks_nothing():
    @dataclass(frozen=True)
    class Plain(Options):
        value: int = -5

    assert Plain().value == -5 and Plain.CONSTRAINTS == ()


def test_build_takes_a_config_or_its_first_field_and_names_unknown_options():
    made = Sample.build(7, method="INLP")
    assert (made.size, made.method) == (7, "inlp")
    assert Sample.build(made) is made
    assert Sample.build(made, size=9).size == 9 and made.size == 7
    with pytest.raises(InputError) as error:
        Sample.build(7, sizes=3, colour="red")
    assert error.value.message == "unknown option(s) of Sample: colour, sizes"
    assert error.value.hint.startswith("the options are: size, budget, rate")
    with pytest.raises(InputError, match="--size 0"):
        Sample.build(0)


@dataclass(frozen=True)
class Declared(Options):
    """Fields declared once with ``option``: a flag, its help and group, an old spelling."""

    path: Any = None
    rows: Any = option(8, flag="--rows", help="Rows per step.", group="Steps", old=("--batch-rows",))
    progress: Any = option(True, flag=("--quiet", "-q"), negate=True, help="No progress bar.")
    hidden: Any = option(3)


def test_option_keeps_the_flag_in_the_field_and_none_without_one():
    (rows, spec), (progress, quiet) = flagged(Declared)
    assert (rows.name, rows.default, spec.name, spec.group, spec.old_keywords) == (
        "rows",
        8,
        "--rows",
        "Steps",
        ("batch_rows",),
    )
    assert quiet.name == "--quiet" and quiet.negate
    assert flag_of(dataclasses.fields(Declared)[-1]) is None and Declared().hidden == 3


def test_an_old_keyword_is_taken_with_a_deprecation_warning_and_not_beside_the_new_one():
    with pytest.warns(FeatxDeprecationWarning, match=r"^batch_rows is deprecated, use rows; batch_rows will be"):
        made = Declared.build("x", batch_rows=4)
    assert made == Declared.build("x", rows=4)
    with pytest.raises(InputError) as error:
        renamed(Declared, {"rows": 1, "batch_rows": 2})
    assert (error.value.message, error.value.hint) == ("batch_rows and rows are the same option", "give only rows")


def test_keyword_doc_is_made_from_the_fields():
    assert keyword_doc(Declared, ["rows"], {"rows": 2}) == "    rows (--rows, default 2): Rows per step."


def test_numpy_numbers_are_taken_and_stored_as_python_ones():
    import numpy as np

    sample = Sample(size=np.int64(3), rate=np.float32(0.5), budget=np.int32(0))
    assert (sample.size, sample.rate, sample.budget) == (3, 0.5, 0)
    assert type(sample.size) is int and type(sample.rate) is float and type(sample.budget) is int
    with pytest.raises(InputError, match="^--size True must be a whole number"):
        Sample(size=np.True_)


@dataclass(frozen=True)
class Files(Options):
    source: Any
    target: Any = option(None, flag=("-o", "--output"))
    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (path_like("source", "target"),)


def test_a_config_made_directly_names_an_unknown_or_missing_option():
    with pytest.raises(InputError) as error:
        Sample(colour="red")
    assert (error.value.message, error.value.hint.split(",")[0]) == (
        "unknown option(s) of Sample: colour",
        "the options are: size",
    )
    with pytest.raises(InputError, match=r"^Files needs source\n"):
        Files(target="x")
    assert Files("a.h5").source == "a.h5" and Files.build(Files("a.h5"), target="b.h5").target == "b.h5"


def test_parse_whole_reads_ascii_digits_only():
    """str.isdigit takes '²' (int refuses it: a traceback) and '٣' (int reads 3); int takes '1_0' and ' 1'."""
    assert [parse_whole(text) for text in ("0", "12", "007")] == [0, 12, 7]
    assert [parse_whole(text, signed=True) for text in ("-1", "3")] == [-1, 3]
    refused = ("\u00b2", "\u0663", "1_0", " 1", "1\n", "+1", "-1", "", "1.0", "--1", None, 3)
    assert [parse_whole(text) for text in refused] == [None] * len(refused)
    assert [parse_whole(text, signed=True) for text in ("--1", "-", "-\u00b2")] == [None] * 3
    # past int64 no count or index is meant, and int() raises (not refuses) past 4,300 digits: a traceback
    assert parse_whole("9" * 18) == int("9" * 18)
    assert [parse_whole("9" * 19), parse_whole("9" * 5000), parse_whole("-" + "9" * 5000, signed=True)] == [None] * 3


def test_path_like_refuses_what_is_not_a_path_naming_the_flag():
    assert Files(source=Path("a.h5"), target="b.h5").target == "b.h5"
    with pytest.raises(InputError, match=r"^--output takes a path, not a list \(\[.b.h5.\]\)\n"), command_line():
        Files("a.h5", target=["b.h5"])
    with (
        pytest.raises(InputError, match=r"^target takes a path, not a list .*\n  hint: give target one"),
        keywords_of(Files),
    ):
        Files("a.h5", target=["b.h5"])
    with pytest.raises(InputError, match=r"^source takes a path, not a NoneType"):
        Files(None)  # a field without a default, not typed as optional: None is not a path


def _listed_options() -> list[tuple[type, str, str]]:
    """``(config, field, flag)`` of every list-like option of every command (``listed=True``)."""
    from featx.deploy import FitConfig, PredictConfig
    from featx.extraction import ExtractConfig
    from featx.interventions.config import InterveneConfig
    from featx.logit_lens.config import LensConfig
    from featx.probing.analyses.erase import EraseConfig
    from featx.probing.analyses.neurons import NeuronConfig
    from featx.probing.config import ProbeConfig
    from featx.report.compare import CompareConfig

    configs = (ExtractConfig, ProbeConfig, FitConfig, PredictConfig, EraseConfig, NeuronConfig, InterveneConfig)
    return [
        (cls, item.name, spec.name)
        for cls in (*configs, LensConfig, CompareConfig)
        for item, spec in flagged(cls)
        if spec.listed
    ]


LISTED = _listed_options()


def test_the_list_like_options_of_the_commands_are_declared_listed():
    flags = {(cls.__name__, flag) for cls, _, flag in LISTED}
    for command in ("ExtractConfig", "ProbeConfig"):
        assert {(command, "--layer"), (command, "--pooling"), (command, "--site")} <= flags
    assert {("FitConfig", "--layer"), ("EraseConfig", "--amnesic"), ("CompareConfig", "--names")} <= flags


@pytest.mark.parametrize("cls, name, flag", LISTED, ids=[f"{cls.__name__}-{flag}" for cls, _, flag in LISTED])
@pytest.mark.parametrize("empty", ["", " , ", []])
def test_an_empty_list_option_is_refused_by_one_rule(cls, name, flag, empty):
    """``--layer ''`` had meant all layers, ``--site ''`` hidden, ``--pooling ''`` was refused: now every list-like
    option of every command refuses an empty value alike, before any other check."""
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(InputError) as error, command_line():
        cls(**{first: "x.h5", name: empty})
    assert error.value.message.startswith(f"{flag} ") and "is empty: it takes one value or a comma list" in str(
        error.value.message
    )
    assert error.value.hint.startswith(f"give {flag} at least one value, or leave it out for its default")


def test_the_empty_rule_names_the_default_and_leaves_none_alone():
    @dataclass(frozen=True)
    class Listed(Options):
        layers: Any = option("all", flag="--layer", listed=True, help="Layers.")
        plain: Any = option("", flag="--plain", help="Not a list.")

    with pytest.raises(InputError) as error, command_line():
        Listed(layers="")
    assert (error.value.message, error.value.hint) == (
        "--layer '' is empty: it takes one value or a comma list",
        "give --layer at least one value, or leave it out for its default (all)",
    )
    with pytest.raises(InputError) as error, keywords_of(Listed):
        Listed(layers=[])
    assert (error.value.message, error.value.hint) == (
        "layers=[] is empty: it takes one value or a comma list",
        "give layers at least one value, or leave it out for its default (all)",
    )
    assert Listed(layers=None).layers is None and Listed(plain="").plain == ""


def test_the_cli_refuses_an_empty_layer_site_or_pooling_before_any_work(tmp_path):
    from click.testing import CliRunner

    from featx.cli import main

    corpus = tmp_path / "c.csv"
    corpus.write_text("text,label\na,x\nb,y\n", encoding="utf-8")
    for command in (["extract", str(corpus), "--dry-run"], ["probe", str(tmp_path / "missing.h5")]):
        for flag in ("--layer", "--site", "--pooling"):
            result = CliRunner().invoke(main, [*command, flag, ""])
            assert result.exit_code == 2, result.output
            assert f"featx: error: {flag} '' is empty" in result.output


EMPTY_ARGUMENTS = [  # (the function, its arguments, its keywords, the argument named)
    ("featx:fit", ("",), {}, "features"),
    ("featx:probe", ("",), {"label": "label"}, "features"),
    ("featx:extract", ("",), {"model": "m"}, "corpus"),
    ("featx:explain", ("",), {}, "results"),
    ("featx:lens", ("",), {"model": "m", "template": "{text}"}, "corpus"),
    ("featx.probing:erase", ("",), {"label": "label"}, "features"),
    ("featx.probing:neurons", ("",), {"label": "label"}, "features"),
    ("featx.probing:add_labels", ("f.h5", ""), {}, "label_file"),
    ("featx.deploy:predict", ("",), {"corpus": "c.csv"}, "bundle"),
    ("featx.deploy:predict", ("b.featx",), {"corpus": ""}, "corpus"),
    ("featx.deploy:export_directions", ("",), {"output": "d.safetensors"}, "bundle"),
    ("featx.extraction:merge", ("",), {}, "output"),
    ("featx.interventions:intervene", ("",), {}, "features"),
]


@pytest.mark.parametrize(
    "function, args, keywords, name", EMPTY_ARGUMENTS, ids=[c[0] + "-" + c[3] for c in EMPTY_ARGUMENTS]
)
def test_an_empty_path_argument_is_refused_by_its_keyword_from_python(function, args, keywords, name):
    """``featx.fit("")`` (which ``pathlib`` reads as '.', the current folder) is refused when its config is made,
    naming the argument as Python spells it, ``features=''``; the command line names it ``FEATURES``."""
    import importlib

    from featx.options import ARGUMENTS

    module, attribute = function.split(":")
    with pytest.raises(InputError) as raised:
        getattr(importlib.import_module(module), attribute)(*args, **keywords)
    assert raised.value.message == f"{name}='' is empty: give {ARGUMENTS[name]}", raised.value.message
