"""``featx plot``, ``featx compare``, ``featx similarity`` and ``featx report``: the figures, tables and pages
of ``featx.report``. Each command builds its config, calls the library (which names and writes the files)
and echoes what was written."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main, use_agg


def _wrote(paths) -> str:
    return ", ".join(str(path) for path in paths)


@main.command()
@click.argument("results", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Figure path (its suffix is replaced by .png and .svg), or a directory. "
    "Default: beside each results file, same name.",
)
@click.option(
    "--metric",
    default=None,
    help="accuracy, macro_f1, balanced_accuracy, selectivity, r2, spearman, ... "
    "(default: the metric the run chose its best layer by; accuracy, or R² for regression).",
)
@click.option("--classifier", default=None, help="Which probe's rows to draw (default: the best row's).")
@click.option(
    "--baseline",
    type=click.Path(path_type=Path),
    default=None,
    help="Results of a second features file (e.g. --random-init) drawn as a reference line.",
)
@click.option(
    "--compare",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write one figure comparing all RESULTS (one label column each) to this path.",
)
@click.option(
    "--heatmap-scale",
    type=click.Choice(["full", "robust", "row"]),
    default="full",
    show_default=True,
    help="Heatmap colours: the cells' full min-max range (perceptually uniform), a robust range of the "
    "informative cells (lower cells share one colour), or per-row min-max.",
)
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG.")
def plot(results, output, metric, classifier, baseline, compare, dpi, heatmap_scale):
    """Draw layer-wise curves and a layer x pooling heatmap from probe RESULTS (.probe.csv or .json).

    With no RESULTS, uses the last results written by featx probe in this directory.
    """
    use_agg()
    from ..report import PlotConfig, plot_files
    from ..state import given_or_last

    options = {"metric": metric, "classifier": classifier, "baseline": baseline, "compare": compare}
    config = PlotConfig(results, output, dpi=dpi, heatmap_scale=heatmap_scale, **options)
    if not results:
        remembered, using_last = given_or_last(None, "results")
        config = config.replace(results=(remembered,))
        echo(using_last)
    for drawn in plot_files(config):
        if not drawn.comparison:
            echo(f"plotting {drawn.source}")
        if drawn.table is not None:
            echo(drawn.table)
        echo("wrote " + _wrote(drawn.written))


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("compare.png"),
    show_default=True,
    help="Figure path (.png and .svg); the table goes to the same stem + .csv, the tests to .tests.csv.",
)
@click.option("--names", default=None, help="Comma-separated line names, one per RESULTS (default: what differs).")
@click.option("--relative-depth", is_flag=True, help="x = layer / number of layers, so models of any depth line up.")
@click.option(
    "--metric", default=None, help="accuracy, macro_f1, balanced_accuracy, r2, ... (default: the first file's own)."
)
@click.option("--classifier", default=None, help="Which probe's rows (default: each file's best).")
@click.option("--pooling", default=None, help="Which pooling's curve (default: each file's best).")
@click.option("--no-tests", is_flag=True, help="Skip the per-layer paired tests.")
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG.")
def compare(results, output, names, relative_depth, metric, classifier, pooling, no_tests, dpi):
    """Compare probe RESULTS across models, corpora, labels, sites or classifiers: one line per file.

    Files of the same rows (e.g. a model and its --random-init baseline) are tested layer by layer.
    """
    use_agg()
    from ..report import CompareConfig
    from ..report import compare_results as run_compare

    options = {"metric": metric, "classifier": classifier, "pooling": pooling, "names": names}
    config = CompareConfig(
        results, relative_depth=relative_depth, output=output, dpi=dpi, tests=not no_tests, **options
    )
    result = run_compare(config)
    result.close()
    echo(result.format())
    echo("\nwrote " + _wrote(result.written))


@main.command()
@click.argument("features", type=click.Path(path_type=Path))
@click.argument("other", required=False, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Figure path (.png and .svg; the matrix goes to .csv). Default: FEATURES stem + .cka.png.",
)
@click.option("--pooling", default="mean", show_default=True, help="Which stored pooling to compare.")
@click.option("--site", default="hidden", show_default=True, help="Which stored site.")
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG.")
def similarity(features, other, output, pooling, site, dpi):
    """Linear CKA between every pair of layers of FEATURES, or of FEATURES and OTHER (the same rows)."""
    use_agg()
    from ..report import SimilarityConfig
    from ..report import layer_similarity as run_similarity

    config = SimilarityConfig(features, other, pooling=pooling, site=site, output=output, write=True, dpi=dpi)
    result = run_similarity(config)
    echo(result.format())
    echo("\nwrote " + _wrote(result.written))


@main.command()
@click.argument("results", required=False, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="HTML file (default: beside RESULTS, x.probe.csv -> x.report.html).",
)
@click.option("--classifier", default=None, help="Which probe's rows (default: the best row's).")
@click.option(
    "--metric",
    default=None,
    help="accuracy, macro_f1, balanced_accuracy, r2, spearman, ... (default: the metric the run chose its best "
    "layer by; accuracy, or R² for regression).",
)
def report(results, output, classifier, metric):
    """One self-contained HTML page of a results file (default: the last probing results in this directory).

    Reads the results of featx probe (classification, regression, pairs, words), erase, neurons or probe --sweep.
    """
    use_agg()
    from ..report import ReportConfig, write_report
    from ..state import given_or_last

    results, using_last = given_or_last(results, "results")
    if using_last:
        echo(using_last)
    echo(f"wrote {write_report(ReportConfig(results, output, classifier, metric))}")
