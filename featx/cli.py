"""The ``featx`` command line: thin wrappers over the library API."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ._version import __version__
from .errors import FeatxError, signal_of

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (``\\x1b``...): model names, label
    names and texts come from files other people made, and raw escape sequences could rewrite the terminal."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))


def echo(text="", err: bool = False) -> None:
    click.echo(printable(text), err=err)


def _fail(error: FeatxError) -> None:
    echo(f"featx: error: {error.message}", err=True)
    if error.hint:
        echo(f"  hint: {error.hint}", err=True)
    sys.exit(error.exit_code)


class FeatxGroup(click.Group):
    """Turns featx's own errors and Ctrl-C into one clear message and an exit code, never a traceback."""

    def invoke(self, ctx):
        from .signals import interrupts_on_termination

        try:
            with interrupts_on_termination():  # SIGTERM/SIGHUP end a run like Ctrl-C (exit 143/129)
                return super().invoke(ctx)
        except FeatxError as error:
            _fail(error)
        except KeyboardInterrupt as interrupt:
            signum, name = signal_of(interrupt)
            echo(f"featx: interrupted ({name}); committed work is kept: run the same command again to resume", err=True)
            sys.exit(128 + signum)


@click.group(cls=FeatxGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="featx")
def main():
    """Extract every layer of an encoder once, then probe where your labels live."""


@main.command()
@click.argument("corpus", type=click.Path(path_type=Path), nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Features file (default: CORPUS.features.h5 beside the corpus).",
)
@click.option(
    "--model",
    default="default",
    show_default=True,
    help="Hugging Face model folder or id; 'default' is the embedded all-MiniLM-L6-v2.",
)
@click.option("--text-col", default="text", show_default=True, help="Column holding the texts.")
@click.option("--id-col", default=None, help="Column of unique row ids (default: row numbers).")
@click.option("--text-pair-col", default=None, help="Sentence pairs: the column of each row's second text.")
@click.option(
    "--pair-mode",
    default=None,
    help="With --text-pair-col: cross (one sequence in the model's pair format, the default) or separate.",
)
@click.option("--layer", "layers", default="all", show_default=True, help="Layers to store: all, 0,3,6, -4: ...")
@click.option(
    "--pooling",
    "poolings",
    default="all",
    show_default=True,
    help="all or a list of cls,mean,max,last,pooler (sentence pairs, cross mode: also mean_a,mean_b).",
)
@click.option("--tokens", is_flag=True, help="Also store token-level states (large).")
@click.option(
    "--site",
    "sites",
    default="hidden",
    show_default=True,
    help="Activations to store: hidden,attn_out,ffn,pre_ln,attn_heads or module:NAME (hidden always).",
)
@click.option(
    "--max-length", type=int, default=None, help="Truncate texts to this many tokens (default: the model's maximum)."
)
@click.option(
    "--long",
    "long",
    default="truncate",
    show_default=True,
    help="Texts longer than --max-length: truncate, or window (overlapping windows over the whole text).",
)
@click.option(
    "--stride",
    type=int,
    default=None,
    help="--long window: tokens shared by consecutive windows (default: a quarter of a window).",
)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:N or mps.")
@click.option(
    "--device-map",
    default=None,
    help="auto: spread a model too large for one GPU over the GPUs (then the CPU) with accelerate.",
)
@click.option("--dtype", default="auto", show_default=True, help="Compute dtype: auto, float32, float16, bfloat16.")
@click.option("--store-dtype", default="float16", show_default=True, help="Stored features: float16 or float32.")
@click.option(
    "--max-tokens", type=int, default=None, help="Padded tokens per batch (default: 8192 on CPU, 65536 on GPU)."
)
@click.option("--batch-size", type=int, default=256, show_default=True, help="Most rows per batch.")
@click.option("--skip-empty", is_flag=True, help="Leave out empty or whitespace-only texts instead of refusing.")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the corpus file.")
@click.option(
    "--sep",
    default=None,
    help="Corpus delimiter: comma, tab, semicolon or pipe (default: sniffed from the first lines).",
)
@click.option(
    "--missing-labels",
    default="empty",
    show_default=True,
    help="Label values read as missing: empty (empty cells only), pandas (also NA, null, None, nan...) "
    "or a comma list such as 'NA,-'.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing or unfinished output.")
@click.option("--trust-remote-code", is_flag=True, help="Allow the model folder's own Python code to run.")
@click.option("--random-init", is_flag=True, help="Same architecture and tokenizer, random weights (a control).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for --random-init.")
@click.option("--commit-rows", type=int, default=None, help="Rows per commit (resume granularity).")
@click.option(
    "--commit-seconds",
    type=float,
    default=10.0,
    show_default=True,
    help="Most seconds of work between commits (what a kill can lose at most, roughly).",
)
@click.option(
    "--shards",
    type=int,
    default=None,
    help="Split the corpus into this many shards and extract only --shard-index (under torchrun: automatic).",
)
@click.option("--shard-index", type=int, default=None, help="Which shard to extract, 0 to --shards minus 1.")
@click.option(
    "--word-format",
    default=None,
    help="Word inputs: conllu, columns or jsonl (default: .conllu files, --columns, JSON Lines of tokens).",
)
@click.option("--columns", default=None, help="Column files: the fields of a line, e.g. form,upos,ner (_ skips one).")
@click.option(
    "--word-pooling",
    default="first,last,mean",
    show_default=True,
    help="Word inputs: the subword(s) that make a word's vector, any of first,last,mean.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only estimate: rows, tokens, output size, peak memory and time (a short calibration); write nothing.",
)
def extract(corpus, output, quiet, layers, poolings, dry_run, **options):
    """Run the encoder once over CORPUS (CSV/TSV/JSONL/Parquet) and store every layer's pooled states.

    Word inputs (CoNLL-U treebanks, --columns files, JSON Lines of tokens) also store one vector per word;
    several such files make one file, each sentence's split named by its file (train, dev, test).
    Under torchrun each process extracts its own shard and rank 0 merges them at the end.
    """
    from . import extract as run_extract
    from .extraction import ExtractConfig

    config = ExtractConfig(
        corpus=corpus[0],
        more_corpora=tuple(corpus[1:]),
        output=output,
        layers=layers,
        poolings=poolings,
        progress=not quiet,
        **options,
    )
    if dry_run:
        from .extraction.estimation import estimate

        echo(estimate(config).format())
        return
    summary = run_extract(config)  # featx.extract: the quick up-to-date check first, torch only if needed
    echo(summary.line())
    for note in summary.notes:
        echo(note)


@main.command()
@click.argument("output", type=click.Path(path_type=Path))
@click.option("--keep-shards", is_flag=True, help="Keep the shard files and manifest after merging.")
@click.option("--overwrite", is_flag=True, help="Replace an existing OUTPUT made from other shards.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def merge(output, keep_shards, overwrite, quiet):
    """Check the shards of OUTPUT (OUTPUT.shard-*-of-*.h5) and merge them into OUTPUT in corpus order."""
    from .extraction.merge import merge as run_merge

    summary = run_merge(output, keep_shards=keep_shards, overwrite=overwrite, progress=not quiet)
    echo(summary.line())


@main.command()
@click.argument("features", required=False, type=click.Path(path_type=Path))
@click.option("--label", default=None, help="Label column to probe (default: 'label', else the first one).")
@click.option(
    "--labels",
    type=click.Path(path_type=Path),
    default=None,
    help="A file of label columns (CSV/TSV/JSONL) joined to the stored rows, instead of the stored labels.",
)
@click.option(
    "--join",
    default="id",
    show_default=True,
    help="How --labels rows match the stored rows: id (its id column) or row (its data row numbers).",
)
@click.option("--bins", type=int, default=None, help="Probe a numeric label as N quantile bins.")
@click.option("--min-class-rows", type=int, default=None, help="Drop classes with fewer labelled rows (reported).")
@click.option(
    "--layer",
    "layers",
    default="all",
    show_default=True,
    help="all, 0,3,6, -4:, cat(-4:) (concatenated), stack (one probe per layer + meta classifier).",
)
@click.option("--pooling", "poolings", default="all", show_default=True, help="all or a list of the stored poolings.")
@click.option("--classifier", "classifiers", default="logreg", show_default=True, help="Any of logreg,svm,mlp,attn.")
@click.option(
    "--site",
    "sites",
    default="hidden",
    show_default=True,
    help="Stored sites to probe side by side, e.g. hidden,ffn,attn_out (see featx extract --site).",
)
@click.option(
    "--folds",
    type=int,
    default=5,
    show_default=True,
    help="Cross-validation folds (when there is no train/test split).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed for folds, the control permutation and torch heads."
)
@click.option("--balanced", is_flag=True, help="Balanced class weights.")
@click.option("--no-control", is_flag=True, help="Skip the control task (permuted labels).")
@click.option(
    "--baseline",
    type=click.Path(path_type=Path),
    default=None,
    help="A second features file of the same rows (e.g. from --random-init) probed side by side.",
)
@click.option("--jobs", type=int, default=None, help="Parallel (layer spec x pooling) jobs (default: one per core).")
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="Where logreg probes are solved: auto (a CUDA GPU when torch sees one, else the CPU), cpu, "
    "cuda or cuda:N. Only the logistic solver moves; on a GPU, jobs take turns unless --jobs is given.",
)
@click.option("--allow-partial", is_flag=True, help="Probe the rows written so far of an unfinished extraction.")
@click.option("-o", "--output", default=None, help="Results prefix: writes PREFIX.csv and PREFIX.json.")
@click.option(
    "--mdl", is_flag=True, help="Also the MDL online codelength (bits) and compression per layer and pooling."
)
@click.option(
    "--train-sizes",
    default=None,
    help="Learning curves: fractions of each training part (0.1,0.25,0.5,1.0) or row counts; "
    "written to PREFIX.curve.csv.",
)
@click.option("--curve-layers", default=None, help="Layers of the learning curves (default: every layer probed).")
@click.option(
    "--predictions",
    default=None,
    help="POOLING[/CLASSIFIER] of the per-row predictions file (default: those of the best layer).",
)
@click.option(
    "--task",
    type=click.Choice(["auto", "classification", "regression"]),
    default="auto",
    show_default=True,
    help="auto: a numeric label with many distinct values is regression (ridge, R²), else classes.",
)
@click.option(
    "--arcs",
    is_flag=True,
    help="Word-level arc probes: --label deprel (relation of each head-dependent pair) or --label head "
    "(is a word pair an arc).",
)
@click.option(
    "--sweep",
    is_flag=True,
    help="Instead: per layer, probes of increasing complexity (logreg C grid, rank-r, MLP widths) "
    "and their accuracy/complexity Pareto fronts, beside the control task's.",
)
def probe(features, no_control, sweep, **options):
    """Train probes per layer and pooling on FEATURES (default: the last extraction in this directory)."""
    from .probing import ProbeConfig
    from .probing import probe as run_probe
    from .state import given_or_last

    features, using_last = given_or_last(features, "features")
    if using_last:  # say which file before the (long) run starts
        echo(using_last)
    if sweep:
        from .probing.analyses.sweep import from_probe_options

        echo(from_probe_options(features, not no_control, options).format())
        return
    config = ProbeConfig(features=features, control=not no_control, **options)
    result = run_probe(config)
    for note in result.notes:
        echo(note, err=note.startswith("warning"))
    echo(result.format_table())
    if result.curve is not None and not result.curve.empty:
        from .report.figures.learning import format_curve_table

        echo("\n" + format_curve_table(result.curve))
    extra = [path.name for path in (result.predictions_path, result.curve_path) if path is not None]
    echo(f"\nwrote {result.csv_path} and {', '.join([result.json_path.name, *extra])} ({result.meta['seconds']:.1f} s)")


@main.group()
def labels():
    """Label columns of a features file."""


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
    """Store the label columns of LABEL_FILE in FEATURES for good, joined to its rows (no re-extraction)."""
    from .probing.labels import add_labels

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
    from .errors import require_whole
    from .probing.analyses.explain import explain as run_explain

    require_whole(limit, "--limit")

    echo(run_explain(results, buckets=buckets).format(limit=limit))


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
    default="accuracy",
    show_default=True,
    help="accuracy, macro_f1, balanced_accuracy, selectivity or control_accuracy.",
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
    type=click.Choice(["robust", "row", "full"]),
    default="robust",
    show_default=True,
    help="Heatmap colours: robust range of the informative cells, per-row min-max, or the full range.",
)
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG.")
def plot(results, output, metric, classifier, baseline, compare, dpi, heatmap_scale):
    """Draw layer-wise curves and a layer x pooling heatmap from probe RESULTS (.probe.csv or .json).

    With no RESULTS, uses the last results written by featx probe in this directory.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .errors import InputError, require_whole
    from .report.compare import labels_figure
    from .report.figures.learning import format_curve_table, is_curve_file, learning_figure
    from .report.figures.plot import figure
    from .report.figures.style import default_output
    from .state import given_or_last

    require_whole(dpi, "--dpi")
    if not results:
        remembered, using_last = given_or_last(None, "results")
        results = (remembered,)
        echo(using_last)
    if output is not None and len(results) > 1 and output.suffix:
        raise InputError(
            f"-o {output} names one figure but {len(results)} results files were given",
            "pass a directory to -o, or one results file",
        )
    for path in results:
        target = default_output(path)
        if output is not None:
            target = output / target.name if (output.is_dir() or not output.suffix) else output
            target.parent.mkdir(parents=True, exist_ok=True)
        echo(f"plotting {path}")
        if is_curve_file(path):  # featx probe --train-sizes writes X.curve.csv
            fig, written = learning_figure(path, output=target, dpi=dpi)
            echo(format_curve_table(path))
        else:
            fig, written = figure(
                path,
                metric=metric,
                classifier=classifier,
                output=target,
                dpi=dpi,
                baseline=baseline,
                scale=heatmap_scale,
            )
        plt.close(fig)
        echo("wrote " + ", ".join(str(item) for item in written))
    if compare is not None:
        fig, written = labels_figure(results, metric=metric, classifier=classifier, output=compare, dpi=dpi)
        plt.close(fig)
        echo("wrote " + ", ".join(str(item) for item in written))


# -- comparisons, layer similarity and the HTML report (featx/report/) -----------------------------
def _agg():
    import matplotlib

    matplotlib.use("Agg")


def _split_names(text):
    return None if text is None else [name.strip() for name in text.split(",")]


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
@click.option("--metric", default="accuracy", show_default=True, help="accuracy, macro_f1, balanced_accuracy, ...")
@click.option("--classifier", default=None, help="Which probe's rows (default: each file's best).")
@click.option("--pooling", default=None, help="Which pooling's curve (default: each file's best).")
@click.option("--no-tests", is_flag=True, help="Skip the per-layer paired tests.")
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG.")
def compare(results, output, names, relative_depth, metric, classifier, pooling, no_tests, dpi):
    """Compare probe RESULTS across models, corpora, labels, sites or classifiers: one line per file.

    Files of the same rows (e.g. a model and its --random-init baseline) are tested layer by layer.
    """
    _agg()
    import matplotlib.pyplot as plt

    from .report.compare import compare as run_compare

    output.parent.mkdir(parents=True, exist_ok=True)
    result = run_compare(
        results,
        metric=metric,
        classifier=classifier,
        pooling=pooling,
        names=_split_names(names),
        relative_depth=relative_depth,
        output=output,
        dpi=dpi,
        tests=not no_tests,
    )
    plt.close(result.figure)
    echo(result.format())
    table_path = output.with_suffix(".csv")
    result.table.to_csv(table_path, index=False)
    written = [*result.written, table_path]
    if result.tests is not None and not result.tests.empty:
        written.append(output.with_suffix(".tests.csv"))
        result.tests.to_csv(written[-1], index=False)
    echo("\nwrote " + ", ".join(str(path) for path in written))


# -- beyond accuracy: concept erasure, neuron ranking (featx/probing/erase.py, neurons.py) --------------
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
    from .probing.analyses.erase import erase as run_erase

    echo(run_erase(features, **options).format())


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
    _agg()
    import matplotlib.pyplot as plt

    from .report.similarity import similarity as run_similarity
    from .report.similarity import similarity_figure

    result = run_similarity(features, other, pooling=pooling, site=site)
    if output is None:
        stem = features.name[: -len(features.suffix)] if features.suffix else features.name
        if other is not None:
            stem += ".vs." + (other.name[: -len(other.suffix)] if other.suffix else other.name)
        output = features.with_name(stem + ".cka.png")
    output.parent.mkdir(parents=True, exist_ok=True)
    fig, written = similarity_figure(result, output=output, dpi=dpi)
    plt.close(fig)
    frame = result.frame()
    frame.to_csv(output.with_suffix(".csv"))
    echo(
        f"linear CKA, {pooling} pooling, {result.n_rows:,} rows: rows = layers of {result.name_a}, "
        f"columns = layers of {result.name_b}"
    )
    echo(frame.to_string(float_format=lambda v: f"{v:.3f}", na_rep="-"))
    echo("\nwrote " + ", ".join(str(path) for path in [*written, output.with_suffix(".csv")]))


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
def report(results, output, classifier):
    """One self-contained HTML page of a probing run (default: the last results in this directory)."""
    _agg()
    from .report.html.page import write_report
    from .state import given_or_last

    results, using_last = given_or_last(results, "results")
    if using_last:
        echo(using_last)
    echo(f"wrote {write_report(results, output, classifier=classifier)}")


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
    from .probing.analyses.neurons import neurons as run_neurons

    echo(run_neurons(features, **options).format())


if __name__ == "__main__":  # pragma: no cover
    main()
