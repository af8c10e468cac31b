"""``featx plot``, ``featx compare``, ``featx similarity`` and ``featx report``: the figures, tables and pages
of ``featx.report``. Each command builds its config, calls the library (which names and writes the files)
and echoes what was written."""

from __future__ import annotations

import click

from .app import echo, main, use_agg
from .generate import PATH_ARGUMENT, ConfigCommand


def _wrote(paths) -> str:
    return ", ".join(str(path) for path in paths)


@main.command(cls=ConfigCommand, config="featx.report:PlotConfig")
@click.argument("results", nargs=-1, type=PATH_ARGUMENT)
def plot(results, **options):
    """Draw layer-wise curves and a layer x pooling heatmap from probe RESULTS (.probe.csv or .json).

    Structural probe results (.structural.json or .csv) get each measure by layer beside their baseline.

    With no RESULTS, uses the last results written by featx probe in this directory.
    """
    use_agg()
    from ..report import PlotConfig, plot_files
    from ..state import given_or_last

    config = PlotConfig(results, **options)
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


@main.command(cls=ConfigCommand, config="featx.report:CompareConfig")
@click.argument("results", nargs=-1, required=True, type=PATH_ARGUMENT)
def compare(results, **options):
    """Compare probe RESULTS across models, corpora, labels, sites or classifiers: one line per file.

    Files of the same rows (e.g. a model and its --random-init baseline) are tested layer by layer.
    """
    use_agg()
    from ..report import CompareConfig
    from ..report import compare_results as run_compare

    result = run_compare(CompareConfig(results, **options))
    result.close()
    echo(result.format())
    echo("\nwrote " + _wrote(result.written))


@main.command(cls=ConfigCommand, config="featx.report:SimilarityConfig")
@click.argument("features", type=PATH_ARGUMENT)
@click.argument("other", required=False, type=PATH_ARGUMENT)
def similarity(features, other, **options):
    """Linear CKA between every pair of layers of FEATURES, or of FEATURES and OTHER (the same rows), beside its
    chance level: the CKA of the same layers with the rows shuffled."""
    use_agg()
    from ..report import SimilarityConfig
    from ..report import layer_similarity as run_similarity

    result = run_similarity(SimilarityConfig(features, other, write=True, **options))
    echo(result.format())
    echo("\nwrote " + _wrote(result.written))


@main.command(cls=ConfigCommand, config="featx.report:ReportConfig")
@click.argument("results", required=False, type=PATH_ARGUMENT)
def report(results, **options):
    """One self-contained HTML page of a results file (default: the last probing results in this directory).

    Reads the results of featx probe (classification, regression, pairs, words, --structural), erase, neurons or
    probe --sweep.
    """
    use_agg()
    from ..report import ReportConfig, write_report
    from ..state import given_or_last

    results, using_last = given_or_last(results, "results")
    if using_last:
        echo(using_last)
    echo(f"wrote {write_report(ReportConfig(results, **options))}")
