"""``featx extract`` and ``featx merge``: the extraction stage."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main, options

_INPUT_AND_LAYOUT = options(
    click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path),
        help="Features file (default: CORPUS.features.h5 beside the corpus).",
    ),
    click.option(
        "--model",
        default="default",
        show_default=True,
        help="Hugging Face model folder or id; 'default' is the embedded all-MiniLM-L6-v2.",
    ),
    click.option("--text-col", default="text", show_default=True, help="Column holding the texts."),
    click.option("--id-col", default=None, help="Column of unique row ids (default: row numbers)."),
    click.option("--text-pair-col", default=None, help="Sentence pairs: the column of each row's second text."),
    click.option(
        "--pair-mode",
        default=None,
        help="With --text-pair-col: cross (one sequence in the model's pair format, the default) or separate.",
    ),
    click.option(
        "--layer",
        "--layers",
        "layers",
        default="all",
        show_default=True,
        help="Layers to store: all, 0,3,6, -4: ... (below the top layer, only the blocks up to the highest one run)",
    ),
    click.option(
        "--pooling",
        "poolings",
        default="all",
        show_default=True,
        help="all or a list of cls,mean,max,last,pooler (sentence pairs, cross mode: also mean_a,mean_b).",
    ),
    click.option("--tokens", is_flag=True, help="Also store token-level states (large)."),
)

_SITES_LENGTH_AND_DEVICE = options(
    click.option(
        "--site",
        "sites",
        default="hidden",
        show_default=True,
        help="Activations to store: hidden,attn_out,ffn,pre_ln,attn_heads or module:NAME (hidden always).",
    ),
    click.option(
        "--max-length",
        type=int,
        default=None,
        help="Truncate texts to this many tokens (default: the model's maximum).",
    ),
    click.option(
        "--long",
        "long",
        default="truncate",
        show_default=True,
        help="Texts longer than --max-length: truncate, or window (overlapping windows over the whole text).",
    ),
    click.option(
        "--stride",
        type=int,
        default=None,
        help="--long window: tokens shared by consecutive windows (default: a quarter of a window).",
    ),
    click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:N or mps."),
    click.option(
        "--device-map",
        default=None,
        help="auto: spread a model too large for one GPU over the GPUs (then the CPU) with accelerate.",
    ),
    click.option("--dtype", default="auto", show_default=True, help="Compute dtype: auto, float32, float16, bfloat16."),
    click.option("--store-dtype", default="float16", show_default=True, help="Stored features: float16 or float32."),
    click.option(
        "--max-tokens", type=int, default=None, help="Padded tokens per batch (default: 1024 on CPU, 65536 on GPU)."
    ),
)

_READING_AND_MODEL = options(
    click.option(
        "--batch-size", type=int, default=None, help="Most rows per batch (default: 256 on CPU, 16384 on GPU)."
    ),
    click.option("--skip-empty", is_flag=True, help="Leave out empty or whitespace-only texts instead of refusing."),
    click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the corpus file."),
    click.option(
        "--sep",
        default=None,
        help="Corpus delimiter: comma, tab, semicolon or pipe (default: sniffed from the first lines).",
    ),
    click.option(
        "--missing-labels",
        default="empty",
        show_default=True,
        help="Label values read as missing: empty (empty cells only), pandas (also NA, null, None, nan...) "
        "or a comma list such as 'NA,-'.",
    ),
    click.option(
        "--max-corpus-bytes",
        type=int,
        default=None,
        help="A .gz corpus may inflate to this many bytes (default 2 GiB, and at most 100 times its "
        "compressed size); setting it lifts the ratio check.",
    ),
    click.option("--overwrite", is_flag=True, help="Replace an existing or unfinished output."),
    click.option("--trust-remote-code", is_flag=True, help="Allow the model folder's own Python code to run."),
    click.option("--random-init", is_flag=True, help="Same architecture and tokenizer, random weights (a control)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed for --random-init."),
)

_COMMITS_SHARDS_AND_WORDS = options(
    click.option("--commit-rows", type=int, default=None, help="Rows per commit (resume granularity)."),
    click.option(
        "--commit-seconds",
        type=float,
        default=10.0,
        show_default=True,
        help="Most seconds of work between commits (what a kill can lose at most, roughly).",
    ),
    click.option(
        "--shards",
        type=int,
        default=None,
        help="Split the corpus into this many shards and extract only --shard-index (under torchrun: automatic).",
    ),
    click.option("--shard-index", type=int, default=None, help="Which shard to extract, 0 to --shards minus 1."),
    click.option(
        "--word-format",
        default=None,
        help="Word inputs: conllu, columns or jsonl (default: .conllu files, --columns, JSON Lines of tokens).",
    ),
    click.option(
        "--columns", default=None, help="Column files: the fields of a line, e.g. form,upos,ner (_ skips one)."
    ),
    click.option(
        "--word-pooling",
        default="first,last,mean",
        show_default=True,
        help="Word inputs: the subword(s) that make a word's vector, any of first,last,mean.",
    ),
    click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    click.option(
        "--dry-run",
        is_flag=True,
        help="Only estimate: rows, tokens, output size, peak memory and time (a short calibration); a large "
        "model (or a folder with only its config.json) from its config alone, with whether it fits; write nothing.",
    ),
)


_PROMPTS = options(
    click.option(
        "--template",
        default=None,
        help="Wrap each row in a prompt: 'Review: {text}\\nSentiment:' ({text} is --text-col, {NAME} another "
        "column, {{ }} literal braces; \\n \\t \\\\ are read as newline, tab, backslash), or @FILE to read it "
        "from FILE as it is (one trailing newline dropped).",
    ),
    click.option(
        "--chat-template",
        is_flag=True,
        help="Wrap the user turn (the --template prompt, or the text) in the tokenizer's own chat template, "
        "with the generation prompt.",
    ),
    click.option("--system", default=None, help="With --chat-template: a system message before the user turn."),
    click.option(
        "--pool-at",
        default=None,
        help="Also store the state at one token per row as pooling 'at': last, marker:TEXT (the last token "
        "of TEXT's last occurrence, e.g. marker:'Sentiment:') or index:N (-1 the last token, 0 the first). "
        "With a template, span_mean, span_max and span_last pool the text's own tokens.",
    ),
    click.option("--skip-missing-marker", is_flag=True, help="Leave out rows whose prompt lacks the --pool-at marker."),
    click.option(
        "--contrast",
        default=None,
        help="Contrast pairs: answers such as 'True,False'; each prompt runs once per answer (in {answer}, else "
        "after the prompt) and every answer's states are stored (answer k>0 as site answer_k); featx probe "
        "reads the difference of the first two.",
    ),
)


@main.command()
@click.argument("corpus", type=click.Path(path_type=Path), nargs=-1, required=True)
@_INPUT_AND_LAYOUT
@_SITES_LENGTH_AND_DEVICE
@_READING_AND_MODEL
@_COMMITS_SHARDS_AND_WORDS
@_PROMPTS
def extract(corpus, output, quiet, layers, poolings, dry_run, template, system, pool_at, **options):
    """Run the encoder once over CORPUS (CSV/TSV/JSONL/Parquet) and store every layer's pooled states.

    Word inputs (CoNLL-U treebanks, --columns files, JSON Lines of tokens) also store one vector per word;
    several such files make one file, each sentence's split named by its file (train, dev, test).
    Under torchrun each process extracts its own shard and rank 0 merges them at the end.
    """
    from .. import extract as run_extract
    from ..extraction import ExtractConfig, unescape_cli_text

    if template is not None and not template.startswith("@"):
        template = unescape_cli_text(template)  # escapes typed on the command line; a file is read as it is

    config = ExtractConfig(
        corpus=corpus[0],
        more_corpora=tuple(corpus[1:]),
        output=output,
        layers=layers,
        poolings=poolings,
        progress=not quiet,
        template=template,
        system=unescape_cli_text(system),
        pool_at=unescape_cli_text(pool_at),
        **options,
    )
    if dry_run:
        from ..extraction import estimate

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
    """Check the shards of OUTPUT (OUTPUT.shard-I-of-N.h5) and merge them into OUTPUT in corpus order."""
    from ..extraction import merge as run_merge

    summary = run_merge(output, keep_shards=keep_shards, overwrite=overwrite, progress=not quiet)
    echo(summary.line())
