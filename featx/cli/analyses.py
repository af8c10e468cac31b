"""``featx erase`` and ``featx neurons``: the analyses beyond accuracy (concept erasure, neuron ranking)."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main


@main.command()
@click.argument("features", type=click.Path(path_type=Path))
@click.option("--label", default=None, help="Label column to erase (default: 'label', else the first one).")
@click.option("--layer", "layers", default="all", show_default=True, help="Layers: all, 0,3,6, -4: ...")
@click.option("--pooling", "poolings", default="mean", show_default=True, help="Poolings: mean, or a list, or all.")
@click.option(
    "--method",
    default="leace",
    show_default=True,
    type=click.Choice(["leace", "inlp"]),
    help="LEACE (closed form, least-squares optimal) or INLP (iterative nullspace projection).",
)
@click.option("--iterations", type=int, default=50, show_default=True, help="INLP: the most rounds.")
@click.option(
    "--amnesic",
    default="all",
    show_default=True,
    help="Other label columns probed before/after the erasure: all, a list, or none.",
)
@click.option(
    "--folds", type=int, default=5, show_default=True, help="Cross-validation folds (when there is no split)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for folds and INLP's holdout.")
@click.option("--jobs", type=int, default=None, help="Parallel (layer x pooling) jobs (default: one per core).")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Erased features file (default: FEATURES stem + .erased-LABEL-METHOD.h5).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
def erase(features, **options):
    """Erase a label linearly from FEATURES per layer and pooling; write the erased features file.

    Reports the probe's accuracy before and after per layer (the eraser fitted inside each training
    part), how much the features moved, and what other label columns lost (amnesic probing).
    """
    from ..probing import erase as run_erase
    from ..report import format_erase

    echo(format_erase(run_erase(features, **options)))


@main.command()
@click.argument("features", type=click.Path(path_type=Path))
@click.option("--label", default=None, help="Label column (default: 'label', else the first one).")
@click.option(
    "--layer",
    "layers",
    default="all",
    show_default=True,
    help="A layer (N), a list, or all (the selection curve per layer).",
)
@click.option("--pooling", default="mean", show_default=True, help="Pooling whose vectors are ranked.")
@click.option("--top", type=int, default=None, help="Neurons listed per ranking (default 10).")
@click.option(
    "--fraction",
    type=float,
    default=None,
    help="Or list this share of the layer's neurons, in (0, 1]; also added to the selection curve.",
)
@click.option(
    "--folds", type=int, default=5, show_default=True, help="Cross-validation folds (when there is no split)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for folds, the random selections, saga.")
@click.option("--jobs", type=int, default=None, help="Parallel layer jobs (default: one per core).")
@click.option("-o", "--output", default=None, help="Results prefix (default: FEATURES stem + .LABEL.neurons).")
def neurons(features, **options):
    """Rank a layer's neurons for a label (elastic-net probe and ANOVA F) and validate the rankings.

    A logreg probe is retrained on only the top, bottom or random 1%, 5%, 10%, 20% of the neurons.
    """
    from ..probing import neurons as run_neurons
    from ..report import format_neurons, save_neurons_figure

    result = run_neurons(features, **options)
    save_neurons_figure(result)  # the data files are the probe side's, the figure the report's
    echo(format_neurons(result))
