"""``featx intervene``: the edit-inside-the-model experiment of a features file in one command."""

from __future__ import annotations

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand


@main.command(cls=ConfigCommand, config="featx.interventions:InterveneConfig")
@click.argument("features", type=PATH_ARGUMENT)
def intervene(features, **options):
    """Does the model use a label? Edit FEATURES' model inside its forward pass and probe every layer above.

    From the file's own provenance (model, corpus, options): erase --label at each --at layer (an eraser fitted
    on the training rows, and without a split one per fold, fitted on its training rows, for the probes scored on
    that fold; or a --bundle's span with --edit project|mean), run the model on, and report per layer
    from the edit up the probe before, after and after a random control of the same rank and centring (each
    eraser's own, centred on its fitting rows' mean; 95% intervals, paired tests Holm-adjusted), the other labels,
    the last layer's drift, the bundle's flips and the LM loss where the checkpoint has a head (each row read on an
    eraser not fitted on it: its fold's without a split, the test rows with one). --edit steer --bundle B
    --toward C --alphas 0,1,2,4,8: a steering dose-response (a class-mean direction is measured only on rows it
    was not computed from: the test split's, or without a split each fold's rows along the other folds' direction;
    docs/intervene.md). Writes PREFIX.csv, PREFIX.json
    and PREFIX.png; one that exists is replaced only with --overwrite."""
    from ..extraction import unescape_cli_text
    from ..interventions import InterveneConfig, format_table
    from ..interventions import intervene as run_intervene
    from ..report import save_intervention_figure

    template = options.get("template")
    if template is not None and not template.startswith("@"):  # \n, \t and \\ typed, as extract and lens read them
        options["template"] = unescape_cli_text(template)
    result = run_intervene(InterveneConfig(features=features, **options))
    echo(format_table(result))
    figure = save_intervention_figure(result.table, result.meta, result.figure_path)
    for path in (result.csv_path, result.json_path, figure):
        echo(f"wrote {path}")
