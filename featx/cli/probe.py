"""``featx probe``, ``featx labels add`` and ``featx explain``: the probing stage."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main, note
from .generate import PATH_ARGUMENT, ConfigCommand, grouped_option


@main.command(cls=ConfigCommand, config="featx.probing:ProbeConfig")
@click.argument("features", required=False, type=PATH_ARGUMENT)
@grouped_option(
    "Output and analyses",
    "--sweep",
    is_flag=True,
    help="Instead: per layer, probes of increasing complexity (logreg C grid, rank-r, MLP widths) "
    "and their accuracy/complexity Pareto fronts, beside the control task's; the best probe and layer are "
    "chosen on held-out training rows (selection_score).",
)
def probe(features, sweep, **options):
    """Train probes per layer and pooling on FEATURES (default: the last extraction in this directory)."""
    from ..probing import ProbeConfig
    from ..probing import probe as run_probe
    from ..state import given_or_last

    features, using_last = given_or_last(features, "features")
    if using_last:  # say which file before the (long) run starts
        echo(using_last)
    if sweep:
        from ..probing import sweep_from_probe_options
        from ..report import format_sweep, save_sweep_figures

        swept = sweep_from_probe_options(features, options.pop("control"), options)
        save_sweep_figures(swept)  # the data files are the sweep's, the figures the report's
        echo(format_sweep(swept))
        return
    if options.get("structural") is not None:
        _structural(ProbeConfig(features=features, **options))
        return
    result = run_probe(ProbeConfig(features=features, **options))
    for line in result.notes:
        note(line)
    from ..report import format_curve_table, format_probe

    echo(format_probe(result))
    if result.curve is not None and not result.curve.empty:
        echo("\n" + format_curve_table(result.curve))
    extra = [path.name for path in (result.predictions_path, result.curve_path) if path is not None]
    echo(f"\nwrote {result.csv_path} and {', '.join([result.json_path.name, *extra])} ({result.meta['seconds']:.1f} s)")


def _structural(config) -> None:
    """``featx probe --structural distance|depth``: the structural probes' table and files."""
    from ..probing import structural_probe
    from ..report import format_structural

    result = structural_probe(config)
    for line in result.notes:
        note(line)
    echo(format_structural(result))
    if result.csv_path is not None and result.json_path is not None:
        echo(f"\nwrote {result.csv_path} and {result.json_path.name} ({result.meta['seconds']:.1f} s)")


class _LabelsGroup(click.Group):
    """``featx labels FEATURES`` is ``featx labels list FEATURES``: one path where a command is expected (a
    mistyped command with its arguments, ``featx labels ad f.h5 x.csv``, stays "no such command")."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        first = args[0] if args else "-"
        if first not in self.commands and not first.startswith("-") and (len(args) == 1 or Path(first).exists()):
            args = ["list", *args]
        return super().resolve_command(ctx, args)


@main.group(cls=_LabelsGroup, invoke_without_command=True)
@click.pass_context
def labels(ctx: click.Context):
    """Label columns of a features file: featx labels FEATURES lists them (default: the last extraction here),
    featx labels add stores more."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(labels_list)


@labels.command("list")
@click.argument("features", required=False, type=PATH_ARGUMENT)
def labels_list(features):
    """List the label columns of FEATURES (default: the last extraction here): classes and their counts, or
    numbers and their range, missing rows, the split, and a word input's word labels."""
    from ..probing import describe_labels

    for line in describe_labels(features):
        echo(line)


@labels.command("add", cls=ConfigCommand, config="featx.probing:LabelsAddConfig")
@click.argument("features", type=PATH_ARGUMENT)
@click.argument("label_file", type=PATH_ARGUMENT)
def labels_add(features, label_file, **options):
    """Store the label columns of LABEL_FILE in FEATURES for good, joined to its rows (no re-extraction).

    Atomic and locked like featx extract: a second writer at the same time is refused; a FEATURES symbolic link
    is written through to its target."""
    from ..probing import LabelsAddConfig, add_labels

    echo(add_labels(LabelsAddConfig(features=features, label_file=label_file, **options)))


@main.command(cls=ConfigCommand, config="featx.probing:ExplainConfig")
@click.argument("results", required=False, type=PATH_ARGUMENT)
def explain(results, **options):
    """Per-example diagnostics of a probing run (default: the last one in this directory).

    Lists the rows that become right from some layer on and the rows wrong at every layer, per-class F1
    by layer, and accuracy by text length and by truncation, from the out-of-fold predictions. Writes the
    best layer's confusion matrix (class labels) beside the predictions as STEM.confusion.csv.
    """
    from ..probing import ExplainConfig
    from ..probing import explain as run_explain

    config = ExplainConfig(results=results, **options)
    echo(run_explain(config).format(limit=config.limit))
