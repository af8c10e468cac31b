"""Every option declared once: each command's click options are made from its config's fields (flag, type,
default, help, help group), ``--help`` lists them by group, and a renamed option's old spelling still works
with a deprecation warning, giving the same config as the new one."""

from __future__ import annotations

import dataclasses
import re

import click
import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.cli.generate import GROUP, OLD, ConfigCommand, field_values
from featx.errors import InputError
from featx.options import FeatxDeprecationWarning, flagged, keywords_of
from featx.probing.analyses.sweep import SweepConfig


def _commands(group: click.Group = main, prefix: str = "featx"):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix} {name}")
        else:
            yield f"{prefix} {name}", command


CONFIGURED = [(name, command) for name, command in _commands() if isinstance(command, ConfigCommand)]


def _generated(command: ConfigCommand) -> dict[str, click.Option]:
    return {param.name: param for param in command.params if isinstance(param, click.Option)}


def test_every_command_with_a_config_has_its_options_generated():
    named = {name for name, _ in CONFIGURED}
    assert named == {
        f"featx {name}"
        for name in ("extract", "merge", "probe", "labels add", "fit", "predict", "directions", "erase", "neurons")
        + ("explain", "plot", "compare", "similarity", "report", "study run", "lens", "intervene")
    }


@pytest.mark.parametrize("name, command", CONFIGURED, ids=[name for name, _ in CONFIGURED])
def test_a_command_names_its_config_through_the_package_face(name, command):
    """The CLI is thin and reaches a package through its face only: ``featx.Q:Config`` with Config in
    ``featx.Q.__all__``, never an inner module of Q."""
    import importlib

    module, config = command.config_path.split(":")
    assert module.count(".") == 1, f"{name}: {command.config_path} reaches into an inner module"
    assert config in importlib.import_module(module).__all__


@pytest.mark.parametrize("name, command", CONFIGURED, ids=[name for name, _ in CONFIGURED])
def test_every_field_with_a_flag_is_an_option_with_its_default_and_group(name, command):
    options = _generated(command)
    for item, spec in flagged(command.config):
        option = options[item.name]
        assert list(spec.flags) == option.opts + option.secondary_opts, item.name
        assert getattr(option, GROUP) == spec.group and option.help == spec.help
        if not option.is_flag:
            default = None if item.default is dataclasses.MISSING else item.default
            assert option.default == (default if spec.cli_default is None else spec.cli_default), item.name


@pytest.mark.parametrize("name, command", CONFIGURED, ids=[name for name, _ in CONFIGURED])
def test_every_generated_option_maps_to_a_field(name, command):
    fields = {item.name for item in dataclasses.fields(command.config)}
    assert command.params  # the options made on first use
    for param in command.generated:
        if isinstance(param, click.Option):
            old = getattr(param, OLD, None)
            assert (old[0] if old else param.name) in fields, param.name


def test_extract_help_shows_the_named_groups_in_field_order():
    result = CliRunner().invoke(main, ["extract", "--help"])
    assert result.exit_code == 0, result.output
    titles = [line[:-1] for line in result.output.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert titles == [
        "Input and layout",
        "Sites, length and device",
        "Reading the corpus",
        "Model and output",
        "Commits and shards",
        "Word inputs",
        "Prompts",
        "Edits inside the forward pass",
        "Other options",
    ]
    section = result.output.split("Commits and shards:")[1].split("\n\n")[0]
    assert "--dry-run" in section and "--commit-rows" in section and "-q, --quiet" in section
    assert "--seed" not in result.output.replace("--init-seed", "")  # the old spelling is hidden


def _config(command_name: str, arguments: list[str]):
    command = main.commands[command_name]
    assert isinstance(command, ConfigCommand)
    with command.make_context(command_name, arguments) as context:
        values = field_values(command.config, context.params)
    return {
        name: value for name, value in values.items() if name in {f.name for f in dataclasses.fields(command.config)}
    }


def test_extract_seed_is_init_seed_with_a_warning():
    new = _config("extract", ["c.csv", "--random-init", "--init-seed", "7"])
    with pytest.warns(FeatxDeprecationWarning, match=r"^--seed is deprecated, use --init-seed; --seed will be"):
        old = _config("extract", ["c.csv", "--random-init", "--seed", "7"])
    assert old == new and new["init_seed"] == 7


def test_the_cli_prints_the_deprecation_as_a_featx_warning(tmp_path):
    result = CliRunner().invoke(main, ["extract", str(tmp_path / "missing.csv"), "--seed", "3", "-q"])
    assert "featx: warning: --seed is deprecated, use --init-seed; --seed will be removed in 0.3.0" in result.output


def test_extract_python_keyword_seed_is_init_seed_with_a_warning():
    from featx.extraction import make_config

    with pytest.warns(FeatxDeprecationWarning, match=r"^seed is deprecated, use init_seed; seed will be removed"):
        old = make_config("c.csv", random_init=True, seed=5)
    assert old == make_config("c.csv", random_init=True, init_seed=5)


def test_the_quiet_flag_turns_progress_off():
    assert _config("extract", ["c.csv", "-q"])["progress"] is False
    assert _config("extract", ["c.csv"])["progress"] is True


def test_embed_takes_the_config_fields_as_keywords_and_documents_them_from_the_fields():
    from featx.errors import InputError
    from featx.extraction.inmemory.sentences import EMBED_KEYWORDS, embed, embed_options

    assert embed_options({"layers": [1, 2], "poolings": ("cls", "mean")})["layers"] == "1,2"
    assert embed_options({})["store_dtype"] == "float32"  # embed's own default
    with pytest.warns(FeatxDeprecationWarning, match="^seed is deprecated, use init_seed"):
        assert embed_options({"seed": 4})["init_seed"] == 4
    with pytest.raises(InputError, match=r"^unknown embed option\(s\): colour"):
        embed_options({"colour": "red"})
    for keyword in EMBED_KEYWORDS:
        assert f"    {keyword} (--" in (embed.__doc__ or ""), keyword


def test_predict_batch_rows_is_commit_rows_with_a_warning():
    new = _config("predict", ["b.featx", "c.csv", "--commit-rows", "16"])
    with pytest.warns(FeatxDeprecationWarning, match=r"^--batch-rows is deprecated, use --commit-rows; --batch-rows"):
        old = _config("predict", ["b.featx", "c.csv", "--batch-rows", "16"])
    assert old == new and new["commit_rows"] == 16


def test_predict_python_keyword_batch_rows_is_commit_rows_with_a_warning():
    from featx.deploy import PredictConfig

    with pytest.warns(FeatxDeprecationWarning, match=r"^batch_rows is deprecated, use commit_rows"):
        old = PredictConfig.build("b.featx", corpus="c.csv", batch_rows=8)
    assert old == PredictConfig.build("b.featx", corpus="c.csv", commit_rows=8)


@pytest.mark.parametrize("command", ["probe", "fit"])
def test_task_is_one_fixed_choice_in_probe_and_fit(command):
    option = _generated(main.commands[command])["task"]
    assert isinstance(option.type, click.Choice) and list(option.type.choices) == [
        "auto",
        "classification",
        "regression",
    ]
    assert _config(command, ["f.h5", "--task", "Regression"])["task"] == "regression"
    result = CliRunner().invoke(main, [command, "f.h5", "--task", "numbers"])
    assert result.exit_code == 2 and "'numbers' is not one of 'auto', 'classification', 'regression'" in result.output


@pytest.mark.parametrize("command", ["extract", "probe", "fit", "predict", "erase", "neurons", "lens", "intervene"])
def test_quiet_is_accepted_by_every_long_running_command(command):
    arguments = {"predict": ["b.featx", "c.csv"], "lens": ["c.csv"]}.get(command, ["f.h5"])
    main.commands[command].make_context(command, [*arguments, "-q"]).close()
    main.commands[command].make_context(command, [*arguments, "--quiet"]).close()
    if command != "fit":  # fit's -q is its own flag (no line per candidate), the others' the config's progress field
        assert _config(command, [*arguments, "-q"])["progress"] is False
        assert _config(command, arguments)["progress"] is True


@pytest.mark.parametrize("command", ["extract", "probe", "predict"])
def test_device_means_the_torch_device_the_command_computes_on(command):
    assert _generated(main.commands[command])["device"].help.startswith("Torch device ")


def test_n_bootstrap_is_one_shared_option_wherever_it_is_a_flag():
    """--n-bootstrap is declared once (probing's bootstrap_option): the same default, bounds and common help on probe
    (and its --sweep), erase, neurons, fit, lens and intervene, in the help group of the command's --seed, each
    command adding only what its intervals are without a split and what else it sets."""
    options = {name: _generated(command).get("n_bootstrap") for name, command in CONFIGURED}
    options = {name: option for name, option in options.items() if option is not None}
    assert sorted(options) == [f"featx {name}" for name in ("erase", "fit", "intervene", "lens", "neurons", "probe")]
    common = "Bootstrap resamples of the test rows (whole sentences or groups where the probes keep them together) "
    common += "behind each 95% interval of a train/test split, 1 to 100000; "
    for name, option in options.items():
        seed = _generated(dict(CONFIGURED)[name])["seed"]
        assert option.opts == ["--n-bootstrap"] and option.default == 1000, name
        assert getattr(option, GROUP) == getattr(seed, GROUP), name
        assert (option.help or "").startswith(common), name


def _shown(name: str) -> dict[str, click.Option]:
    """Option ``name`` of every command that shows it (extract's hidden --seed, --init-seed's old spelling, not)."""
    options = {command_name: _generated(command).get(name) for command_name, command in CONFIGURED}
    return {command_name: option for command_name, option in options.items() if option and not option.hidden}


FOLDS_AND_SEED = ["erase", "fit", "lens", "neurons", "probe"]  # and --seed, intervene (erase's 5 folds, fixed)


def test_folds_and_seed_are_one_shared_option_each_wherever_they_are_flags():
    """--folds and --seed are declared once (probing's folds_option, seed_option): the same default, bounds and
    common help everywhere, in the help group of the command's --n-bootstrap; each command says only when it folds
    (fit: for its choice) and what else its seed seeds."""
    folds, seeds = _shown("folds"), _shown("seed")
    assert sorted(folds) == [f"featx {name}" for name in FOLDS_AND_SEED]
    assert sorted(seeds) == [f"featx {name}" for name in sorted([*FOLDS_AND_SEED, "intervene"])]
    for name, option in folds.items():
        assert option.opts == ["--folds"] and option.default == 5, name
        assert re.fullmatch(r"Cross-validation folds .+; at least 2\.", option.help or ""), name
    for name, option in seeds.items():
        assert option.opts == ["--seed"] and option.default == 0, name
        assert getattr(option, GROUP) == getattr(_generated(dict(CONFIGURED)[name])["n_bootstrap"], GROUP), name
        common = r"Seed of the folds(, | and )the bootstrap resamples.*; 0 to 4294967295\."
        assert re.fullmatch(common, option.help or ""), name
    assert (folds["featx probe"].help or "").startswith("Cross-validation folds when there is no train/test split")
    assert "of the choice" in (folds["featx fit"].help or "")


# Each command's config (featx probe --sweep's too) and the least it needs besides the option refused (so that
# nothing else is refused first).
CONFIGS = {**{name: command.config for name, command in CONFIGURED}, "featx probe --sweep": SweepConfig}
NEEDS = {"featx lens": {"answers": " a, b", "template": "{text}"}, "featx intervene": {"at": "1"}}
TOO_FEW_FOLDS = ("{given} is too small", "use at least 2 folds (default 5)")
NEGATIVE_SEED = ("{given} must be a whole number of at least 0", "give {named} a whole number from 0 to 4294967295")
REFUSED_ALIKE = [(f"featx {name}", "folds", 1, TOO_FEW_FOLDS) for name in [*FOLDS_AND_SEED, "probe --sweep"]] + [
    (f"featx {name}", "seed", -1, NEGATIVE_SEED) for name in [*FOLDS_AND_SEED, "probe --sweep", "intervene"]
]


@pytest.mark.parametrize(
    "name, field, value, refusal", REFUSED_ALIKE, ids=[f"{case[0]} {case[1]}" for case in REFUSED_ALIKE]
)
def test_folds_1_and_seed_minus_1_are_refused_alike_by_every_command(name, field, value, refusal):
    """One check each (check_folds, check_seed): the same message and hint on every command, naming the flag
    (a config made as the command line makes it) or the keyword (from Python)."""
    config = CONFIGS[name]
    options = {dataclasses.fields(config)[0].name: "missing.h5", **NEEDS.get(name, {}), field: value}
    flag, (message, hint) = f"--{field}", refusal
    with pytest.raises(InputError) as error:
        config(**options)
    assert (error.value.message, error.value.hint) == (
        message.format(given=f"{flag} {value}"),
        hint.format(named=flag),
    )
    with keywords_of(config), pytest.raises(InputError) as error:
        config(**options)
    assert (error.value.message, error.value.hint) == (
        message.format(given=f"{field}={value}"),
        hint.format(named=field),
    )


def test_files_record_a_renamed_option_under_the_name_0_2_0_wrote():
    from featx.extraction import make_config
    from featx.options import recorded

    record = recorded(make_config("c.csv", random_init=True, init_seed=3))
    assert record["seed"] == 3 and "init_seed" not in record


def test_a_config_made_directly_takes_the_old_keyword_too():
    from featx.extraction import ExtractConfig

    with pytest.warns(FeatxDeprecationWarning, match="^seed is deprecated, use init_seed"):
        old = ExtractConfig("c.csv", random_init=True, seed=2)
    assert old == ExtractConfig("c.csv", random_init=True, init_seed=2) and old.replace(init_seed=3).init_seed == 3


def test_merge_and_labels_add_take_their_options_from_their_configs(tmp_path):
    """``featx merge`` and ``featx labels add`` have configs too: their flags are generated, -q turns merge's
    progress off, and a bad --join is refused by the config's constraint, naming the flag."""
    from featx.extraction import MergeConfig
    from featx.probing import LabelsAddConfig

    merge = main.commands["merge"]
    add = main.commands["labels"].commands["add"]
    assert set(_generated(merge)) == {"keep_shards", "overwrite", "progress"}
    assert set(_generated(add)) == {"join", "missing_labels", "sep"}
    assert field_values(MergeConfig, {"output": "o.h5", "progress": True})["progress"] is False
    assert MergeConfig("o.h5").progress is False and MergeConfig.build("o.h5", keep_shards=True).keep_shards
    result = CliRunner().invoke(main, ["labels", "add", str(tmp_path / "f.h5"), str(tmp_path / "l.csv"), "--join", "x"])
    assert result.exit_code == 2 and "--join 'x' is not understood" in result.output
    assert LabelsAddConfig("f.h5", "l.csv", join=" ROW ").join == "row"


# The options a config needs besides its path fields to be made at all (the others are left at their defaults).
NEEDED = {
    "InterveneConfig": {"at": "1"},
    "LensConfig": {"corpus": "c.csv", "template": "Review: {text} Sentiment:", "answers": "good,bad"},
    "ReportConfig": {"results": "r.probe.csv"},
    "DirectionsConfig": {"output": "d.safetensors"},
}


def _path_fields(config: type) -> list[str]:
    return [item.name for item in dataclasses.fields(config) if "Path" in str(item.type)]


@pytest.mark.parametrize("name, command", CONFIGURED, ids=[name for name, _ in CONFIGURED])
def test_every_path_option_refuses_what_is_not_a_path_naming_it(name, command, tmp_path, monkeypatch):
    """A Python caller's list or number where a config takes a path is an InputError naming the flag (or the keyword
    of a field without one) when the config is made: never a TypeError from deep inside a run, nor accepted."""
    from featx.errors import InputError

    monkeypatch.chdir(tmp_path)
    config = command.config
    required = {item.name: "x.h5" for item in dataclasses.fields(config) if item.default is dataclasses.MISSING}
    base = {**required, **NEEDED.get(config.__name__, {})}
    config(**base)  # the base is a good config
    assert _path_fields(config), name
    specs = {item.name: spec for item, spec in flagged(config)}
    for field in _path_fields(config):
        for wrong in (["a.h5"], 3):
            with pytest.raises(InputError) as error:
                config(**{**base, field: wrong})
            named = specs[field].name if field in specs else field
            assert named in error.value.message or type(wrong).__name__ in error.value.message, (field, error.value)
        if field in specs:  # an empty path ('' would be '.', the current folder): refused, naming the keyword
            with pytest.raises(InputError) as error, keywords_of(config):
                config(**{**base, field: ""})
            assert error.value.message == f"{field}='' is empty: give a path, or leave it out", error.value


def _path_options() -> list[tuple[str, click.Command, str]]:
    return [
        (name, command, spec.name)
        for name, command in CONFIGURED
        for item, spec in flagged(command.config)
        if item.name in _path_fields(command.config)
    ]


PATH_OPTIONS = _path_options()


@pytest.mark.parametrize("name, command, flag", PATH_OPTIONS, ids=[f"{name}-{flag}" for name, _, flag in PATH_OPTIONS])
def test_an_empty_path_option_is_refused_on_the_command_line(name, command, flag, tmp_path, monkeypatch):
    """``-o ''`` was read as '.' (click makes Path('') the current folder): fit said '. already exists', extract
    '. should end in .h5'. Every path option of every command refuses it first, naming all its spellings."""
    monkeypatch.chdir(tmp_path)
    assert {"-o/--output", "--baseline", "--labels", "--bundle"} <= {flag for _, _, flag in PATH_OPTIONS} | {
        "/".join(spec.flags) for _, command, _ in PATH_OPTIONS for _, spec in flagged(command.config)
    }
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    spec = next(spec for _, spec in flagged(command.config) if spec.name == flag)
    args = [*name.split()[1:], *("x.h5" for _ in arguments), spec.flags[0], ""]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.output == (  # the shape of an empty path argument's refusal (tests/cli/test_cli.py)
        f"featx: error: {'/'.join(spec.flags)} is empty: give a path, or leave it out\n"
        "  hint: an empty path would read as '.', the current folder\n"
    ), result.output


@pytest.mark.parametrize("terminal", [False, True])
def test_a_progress_bar_only_on_a_terminal(tiny_model, corpus_csv, tmp_path, monkeypatch, terminal):
    """Standard error into a pipe or a log file gets no progress bar (no carriage returns); a terminal does."""
    from featx.cli import generate

    monkeypatch.setattr(generate, "_on_terminal", lambda stream: terminal)
    args = ["extract", str(corpus_csv), "--model", str(tiny_model), "-o", str(tmp_path / "f.h5")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert ("extract: 100%" in result.stderr) is terminal and ("\r" in result.stderr) is terminal


@pytest.mark.parametrize("quiet", [False, True])
def test_probe_draws_a_bar_of_its_jobs_on_a_terminal_unless_quiet(tiny_features, tmp_path, monkeypatch, quiet):
    """featx probe's bar (one step per job) on a terminal's standard error; -q leaves it out and nothing else: the
    table and the 'wrote' line stay on standard output."""
    from featx.cli import generate

    monkeypatch.setattr(generate, "_on_terminal", lambda stream: True)
    args = ["probe", str(tiny_features), "--layer", "0", "--pooling", "mean", "--folds", "2", "--jobs", "1", "-o"]
    result = CliRunner().invoke(main, [*args, str(tmp_path / "r"), "--no-lexical", "--no-control", *["-q"] * quiet])
    assert result.exit_code == 0, result.output
    assert ("probe: 100%" in result.stderr) is not quiet and (result.stderr == "") is quiet
    assert "majority class" in result.stdout and "\nwrote " in result.stdout


def test_the_span_poolings_are_described_where_they_are_chosen():
    """``span_*`` are values of ``--pooling``: its help names each with what it computes over which tokens and what
    it needs; ``--pool-at`` (one token's state) points there instead of describing them loosely."""
    from featx.extraction import ExtractConfig
    from featx.extraction.inputs.templates import SPAN_POOLINGS

    helps = {item.name: spec.help for item, spec in flagged(ExtractConfig)}
    pooling = helps["poolings"]
    assert all(name in pooling for name in SPAN_POOLINGS) and "--template or --chat-template" in pooling
    assert "the mean, the element-wise max and the last token's state over the row's own text tokens" in pooling
    assert "template and special tokens excluded" in pooling
    assert "span_mean" not in helps["pool_at"] and "--pooling span_*" in helps["pool_at"]
