"""``featx fit`` and ``featx predict``: a probe saved as a bundle, and its predictions for a corpus."""

from __future__ import annotations

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand, grouped_option


@main.command(cls=ConfigCommand, config="featx.deploy:FitConfig")
@click.argument("features", type=PATH_ARGUMENT, required=False)
@grouped_option("Bundle", "--quiet", "-q", is_flag=True, help="Do not print a line per candidate scored.")
def fit(features, quiet, **options):
    """Fit a probe on FEATURES and save it as a bundle folder (model.featx).

    A word label (upos, deprel... of a CoNLL-U extraction) gives a word probe: one layer and word pooling
    (first, last, mean), chosen with a sentence's words always in one fold. With --arcs: --label deprel saves a
    relation labeller of (head, dependent) arcs, --label head a head selector (chosen by attachment score; each
    sentence's heads decoded as its best tree: one word on the root, no cycle).

    The chosen probe's test score (without a test split: its cross-validated score) stands beside the majority
    class, the lexical baseline and the control task (featx probe's control labels, learnt by the chosen layer and
    pooling's head), fitted on the same training rows (folds)."""
    from ..deploy import FitConfig
    from ..deploy import fit as run_fit

    config = FitConfig(features=features, **options)
    result = run_fit(config, report=None if quiet else (lambda line: echo(line, err=True)))
    for line in result.summary():
        echo(line)


@main.command(cls=ConfigCommand, config="featx.deploy:PredictConfig")
@click.argument("bundle", type=PATH_ARGUMENT)
@click.argument("corpus", type=PATH_ARGUMENT)
def predict(bundle, corpus, **options):
    """Predict every row of CORPUS (a file, or - for stdin) with the probe in BUNDLE.

    A word probe (fitted on a word label such as upos) predicts every word: of a CoNLL-U, column or JSON Lines
    file of tokens, or of each text split on whitespace; one output line per word (id, word, form). An arc
    relation labeller labels each gold arc of an input with heads (CoNLL-U); a head selector writes each
    word's predicted head (0 the root), its head in its sentence's best tree (one word on the root, no cycle),
    and that head's probability among the word's candidates (p_head). The last line counts the texts cut at the
    bundle's maximum length, as extract counts them (a word probe's sentences run whole). --model: the bundle's
    model where it lives now, checked against the bundle's sha256 before any text is encoded."""
    from ..deploy import PredictConfig
    from ..deploy import predict as run_predict

    result = run_predict(PredictConfig(bundle=bundle, corpus=corpus, **options))
    for line in result.summary():
        echo(line, err=result.to_stdout)  # the predictions hold standard output
