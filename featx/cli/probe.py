"""``featx probe``, ``featx labels add`` and ``featx explain``: the probing stage."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main, options

_LABEL_AND_PROBES = options(
    click.option("--label", default=None, help="Label column to probe (default: 'label', else the first one)."),
    click.option(
        "--labels",
        type=click.Path(path_type=Path),
        default=None,
        help="A file of label columns (CSV/TSV/JSONL) joined to the stored rows, instead of the stored labels.",
    ),
    click.option(
        "--join",
        default="id",
        show_default=True,
        help="How --labels rows match the stored rows: id (its id column) or row (its data row numbers).",
    ),
    click.option("--bins", type=int, default=None, help="Probe a numeric label as N quantile bins."),
    click.option("--min-class-rows", type=int, default=None, help="Drop classes with fewer labelled rows (reported)."),
    click.option(
        "--layer",
        "layers",
        default="all",
        show_default=True,
        help="all, 0,3,6, -4:, cat(-4:) (concatenated), stack (one probe per layer + meta classifier).",
    ),
    click.option(
        "--pooling", "poolings", default="all", show_default=True, help="all or a list of the stored poolings."
    ),
    click.option(
        "--classifier", "classifiers", default="logreg", show_default=True, help="Any of logreg,svm,mlp,attn."
    ),
    click.option(
        "--site",
        "sites",
        default="hidden",
        show_default=True,
        help="Stored sites to probe side by side, e.g. hidden,ffn,attn_out (see featx extract --site).",
    ),
)

_EVALUATION_AND_COMPUTE = options(
    click.option(
        "--folds",
        type=int,
        default=5,
        show_default=True,
        help="Cross-validation folds (when there is no train/test split).",
    ),
    click.option(
        "--seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed for folds, the control permutation and torch heads.",
    ),
    click.option("--balanced", is_flag=True, help="Balanced class weights."),
    click.option("--no-control", is_flag=True, help="Skip the control task (permuted labels)."),
    click.option(
        "--no-lexical",
        is_flag=True,
        help="Skip the lexical baseline of sentence labels (TF-IDF word and character n-grams).",
    ),
    click.option(
        "--baseline",
        type=click.Path(path_type=Path),
        default=None,
        help="A second features file of the same rows (e.g. from --random-init) probed side by side.",
    ),
    click.option(
        "--jobs", type=int, default=None, help="Parallel (layer spec x pooling) jobs (default: one per core)."
    ),
    click.option(
        "--device",
        default="auto",
        show_default=True,
        help="Where logreg probes are solved: auto (a CUDA GPU when torch sees one, else the CPU), cpu, "
        "cuda or cuda:N. Only the logistic solver moves; on a GPU, jobs take turns unless --jobs is given.",
    ),
    click.option("--allow-partial", is_flag=True, help="Probe the rows written so far of an unfinished extraction."),
    click.option("-o", "--output", default=None, help="Results prefix: writes PREFIX.csv and PREFIX.json."),
)

_OUTPUT_AND_ANALYSES = options(
    click.option(
        "--metric",
        default=None,
        help="What the best layer, pooling and classifier are chosen in (on the training part, never the test "
        "rows), tested in and compared with the control and baselines in: accuracy (default), macro_f1 or "
        "balanced_accuracy for classes; r2 (default), pearson or spearman for a number.",
    ),
    click.option(
        "--mdl", is_flag=True, help="Also the MDL online codelength (bits) and compression per layer and pooling."
    ),
    click.option(
        "--train-sizes",
        default=None,
        help="Learning curves: fractions of each training part (0.1,0.25,0.5,1.0) or row counts; "
        "written to PREFIX.curve.csv.",
    ),
    click.option("--curve-layers", default=None, help="Layers of the learning curves (default: every layer probed)."),
    click.option(
        "--predictions",
        default=None,
        help="POOLING[/CLASSIFIER] of the per-row predictions file (default: those of the best layer).",
    ),
    click.option(
        "--task",
        type=click.Choice(["auto", "classification", "regression"]),
        default="auto",
        show_default=True,
        help="auto: a numeric label with many distinct values is regression (ridge, R²), else classes.",
    ),
    click.option(
        "--arcs",
        is_flag=True,
        help="Word-level arc probes: --label deprel (relation of each head-dependent pair) or --label head "
        "(is a word pair an arc).",
    ),
    click.option(
        "--sweep",
        is_flag=True,
        help="Instead: per layer, probes of increasing complexity (logreg C grid, rank-r, MLP widths) "
        "and their accuracy/complexity Pareto fronts, beside the control task's.",
    ),
)


@main.command()
@click.argument("features", required=False, type=click.Path(path_type=Path))
@_LABEL_AND_PROBES
@_EVALUATION_AND_COMPUTE
@_OUTPUT_AND_ANALYSES
def probe(features, no_control, no_lexical, sweep, **options):
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

        swept = sweep_from_probe_options(features, not no_control, options)
        save_sweep_figures(swept)  # the data files are the sweep's, the figures the report's
        echo(format_sweep(swept))
        return
    config = ProbeConfig(features=features, control=not no_control, lexical=not no_lexical, **options)
    result = run_probe(config)
    for note in result.notes:
        echo(note, err=note.startswith("warning"))
    from ..report import format_curve_table, format_probe

    echo(format_probe(result))
    if result.curve is not None and not result.curve.empty:
        echo("\n" + format_curve_table(result.curve))
    extra = [path.name for path in (result.predictions_path, result.curve_path) if path is not None]
    echo(f"\nwrote {result.csv_path} and {', '.join([result.json_path.name, *extra])} ({result.meta['seconds']:.1f} s)")


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
@click.argument("features", required=False, type=click.Path(path_type=Path))
def labels_list(features):
    """List the label columns of FEATURES (default: the last extraction here): classes and their counts, or
    numbers and their range, missing rows, the split, and a word input's word labels."""
    from ..probing import describe_labels

    for line in describe_labels(features):
        echo(line)


@labels.command("add")
@click.argument("features", type=click.Path(path_type=Path))
@click.argument("label_file", type=click.Path(path_type=Path))
@click.option(
    "--join",
    default="id",
    show_default=True,
    help="How LABEL_FILE rows match the stored rows: id (its id column) or row (its data row numbers).",
)
@click.option(
    "--missing-labels",
    default="empty",
    show_default=True,
    help="Label values read as missing: empty, pandas, or a comma list such as 'NA,-'.",
)
@click.option("--sep", default=None, help="LABEL_FILE's delimiter (default: sniffed).")
def labels_add(features, label_file, join, missing_labels, sep):
    """Store the label columns of LABEL_FILE in FEATURES for good, joined to its rows (no re-extraction).

    Atomic and locked like featx extract: a second writer at the same time is refused; a FEATURES symbolic link
    is written through to its target."""
    from ..probing import add_labels

    echo(add_labels(features, label_file, join, missing_labels, sep))


@main.command()
@click.argument("results", required=False, type=click.Path(path_type=Path))
@click.option("--limit", type=int, default=10, show_default=True, help="Rows listed per group.")
@click.option("--buckets", type=int, default=4, show_default=True, help="Text-length buckets (quantiles of tokens).")
def explain(results, limit, buckets):
    """Per-example diagnostics of a probing run (default: the last one in this directory).

    Lists the rows that become right from some layer on and the rows wrong at every layer, per-class F1
    by layer, and accuracy by text length and by truncation, from the out-of-fold predictions.
    """
    from ..probing import ExplainConfig
    from ..probing import explain as run_explain

    config = ExplainConfig(results=results, buckets=buckets, limit=limit)
    echo(run_explain(config).format(limit=config.limit))
