"""``featx fit`` and ``featx predict``: a probe saved as a bundle, and its predictions for a corpus."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main, options


@main.command()
@click.argument("features", type=click.Path(path_type=Path), required=False)
@options(
    click.option("--label", default=None, help="Label column to learn (default: 'label', else the first one)."),
    click.option(
        "--layer",
        default="auto",
        show_default=True,
        help="auto (chosen by cross-validation on the training rows), 3, -1, cat(-4:) or a list to choose from.",
    ),
    click.option("--pooling", default="auto", show_default=True, help="auto, or one or several stored poolings."),
    click.option(
        "--classifier", default="logreg", show_default=True, help="logreg, svm, mlp (classes) or ridge (numbers)."
    ),
    click.option("--metric", default=None, help="Chosen on: accuracy, macro_f1, balanced_accuracy; r2, spearman."),
    click.option("-o", "--output", type=click.Path(path_type=Path), default=None, help="Bundle folder to write."),
    click.option("--task", default="auto", show_default=True, help="classification, regression or auto."),
    click.option("--folds", type=int, default=5, show_default=True, help="Cross-validation folds of the choice."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the folds and heads."),
    click.option("--balanced", is_flag=True, help="Balanced class weights."),
    click.option("--overwrite", is_flag=True, help="Replace an existing bundle."),
    click.option("--quiet", "-q", is_flag=True, help="Do not print a line per candidate scored."),
    click.option("--jobs", type=int, default=None, help="Candidates scored side by side (default: one per core)."),
)
def fit(
    features, label, layer, pooling, classifier, metric, output, task, folds, seed, balanced, overwrite, quiet, jobs
):
    """Fit a probe on FEATURES and save it as a bundle folder (model.featx).

    A word label (upos, deprel... of a CoNLL-U extraction) gives a word probe: one layer and word pooling
    (first, last, mean), chosen with a sentence's words always in one fold."""
    from ..deploy import FitConfig
    from ..deploy import fit as run_fit

    config = FitConfig(
        features=features, label=label, layer=layer, pooling=pooling, classifier=classifier, metric=metric,
        output=output, task=task, folds=folds, seed=seed, balanced=balanced, overwrite=overwrite, jobs=jobs,
    )  # fmt: skip
    result = run_fit(config, report=None if quiet else (lambda line: echo(line, err=True)))
    for line in result.summary():
        echo(line)


@main.command()
@click.argument("bundle", type=click.Path(path_type=Path))
@click.argument("corpus", type=click.Path(path_type=Path))
@options(
    click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path),
        default=None,
        help="Predictions file (.csv/.tsv/.jsonl); - writes CSV to standard output.",
    ),
    click.option("--text-col", default=None, help="Column of the texts (default: the one the bundle was fitted on)."),
    click.option("--text-pair-col", default=None, help="Sentence pairs: the column of each row's second text."),
    click.option("--id-col", default=None, help="Column of unique row ids (default: row numbers)."),
    click.option("--sep", default=None, help="Delimiter of a delimited corpus (default: sniffed)."),
    click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the corpus."),
    click.option("--label", default=None, help="A label column of the corpus: also print the accuracy against it."),
    click.option("--top-k", type=int, default=None, help="Write the K most likely classes instead of every class."),
    click.option("--threshold", type=float, default=None, help="Binary probes: predict the second class at p >= T."),
    click.option("--batch-rows", type=int, default=1024, show_default=True, help="Rows per chunk (resume unit)."),
    click.option(
        "--batch-size", type=int, default=None, help="Most texts per forward pass (default: 256 on CPU, 16384 on GPU)."
    ),
    click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:N or mps."),
    click.option("--overwrite", is_flag=True, help="Replace an existing predictions file."),
    click.option("--quiet", "-q", "--no-progress", is_flag=True, help="No progress bar (as extract -q)."),
    click.option(
        "--word-format",
        default=None,
        help="Word probes: conllu, columns or jsonl (default: from the file, as extract; a table of texts is split "
        "on whitespace).",
    ),
    click.option("--columns", default=None, help="Word probes, column files: the fields of a line, e.g. form,upos."),
    click.option(
        "--trust-remote-code", is_flag=True, help="Allow the model folder's own Python code to run (never implied)."
    ),
)
def predict(bundle, corpus, output, text_col, text_pair_col, id_col, sep, encoding, label, top_k, threshold,
            batch_rows, batch_size, device, overwrite, quiet, word_format, columns, trust_remote_code):  # fmt: skip
    """Predict every row of CORPUS (a file, or - for stdin) with the probe in BUNDLE.

    A word probe (fitted on a word label such as upos) predicts every word: of a CoNLL-U, column or JSON Lines
    file of tokens, or of each text split on whitespace; one output line per word (id, word, form)."""
    from ..deploy import PredictConfig
    from ..deploy import predict as run_predict

    config = PredictConfig(
        bundle=bundle, corpus=corpus, output=output, text_col=text_col, text_pair_col=text_pair_col, id_col=id_col,
        sep=sep, encoding=encoding, label=label, top_k=top_k, threshold=threshold, batch_rows=batch_rows,
        batch_size=batch_size, device=device, overwrite=overwrite, progress=not quiet, word_format=word_format,
        columns=columns, trust_remote_code=trust_remote_code,
    )  # fmt: skip
    result = run_predict(config)
    for line in result.summary():
        echo(line, err=result.to_stdout)  # the predictions hold standard output
