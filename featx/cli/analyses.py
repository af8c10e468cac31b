"""``featx erase`` and ``featx neurons``: the analyses beyond accuracy (concept erasure, neuron ranking)."""

from __future__ import annotations

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand


@main.command(cls=ConfigCommand, config="featx.probing:EraseConfig")
@click.argument("features", type=PATH_ARGUMENT)
def erase(features, **options):
    """Erase a label linearly from FEATURES per layer and pooling; write the erased features file.

    Reports the probe's accuracy before and after per layer (the eraser fitted inside each training
    part), how much the features moved, and what other label columns lost (amnesic probing).
    """
    from ..probing import erase as run_erase
    from ..report import format_erase

    echo(format_erase(run_erase(features, **options)))


@main.command(cls=ConfigCommand, config="featx.probing:NeuronConfig")
@click.argument("features", type=PATH_ARGUMENT)
def neurons(features, **options):
    """Rank a layer's neurons for a label (elastic-net probe and ANOVA F) and validate the rankings.

    A logreg probe is retrained on only the top, bottom or random 1%, 5%, 10%, 20% of the neurons, the
    rankings refitted on each training part; the random baseline is the mean of --draws random draws per part
    (10 by default), and each top k is tested against the random k on the same test rows. The p is how often a
    difference this large would arise were the top k no better than random: on a split the exact sign-flip
    test (every sign pattern counted, so no resolution floor), over folds the corrected resampled t-test;
    Holm over the layer's top-k tests, ! marks p < 0.05. --n-bootstrap sets the intervals' resamples only.
    Writes PREFIX.csv, .ranking.csv, .json, .png and .svg; one that exists is replaced only with --overwrite.
    """
    from ..probing import neurons as run_neurons
    from ..report import format_neurons, save_neurons_figure

    result = run_neurons(features, **options)
    save_neurons_figure(result)  # the data files are the probe side's, the figure the report's
    echo(format_neurons(result))
