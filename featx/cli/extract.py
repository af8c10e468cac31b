"""``featx extract`` and ``featx merge``: the extraction stage."""

from __future__ import annotations

import click

from .app import echo, main, note
from .generate import PATH_ARGUMENT, ConfigCommand, grouped_option


@main.command(cls=ConfigCommand, config="featx.extraction:ExtractConfig")
@click.argument("corpus", type=PATH_ARGUMENT, nargs=-1, required=True)
@grouped_option(
    "Commits and shards",
    "--dry-run",
    is_flag=True,
    help="Only estimate: rows, tokens, output size, peak memory and time (a short calibration); a large "
    "model (or a folder with only its config.json) from its config alone, with whether it fits; write nothing.",
)
def extract(corpus, dry_run, template, system, pool_at, **options):
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
    for line in summary.notes:
        note(line)


@main.command(cls=ConfigCommand, config="featx.extraction:MergeConfig")
@click.argument("output", type=PATH_ARGUMENT)
def merge(output, **options):
    """Check the shards of OUTPUT (OUTPUT.shard-I-of-N.h5) and merge them into OUTPUT in corpus order."""
    from ..extraction import merge as run_merge

    summary = run_merge(output, **options)
    echo(summary.line())
