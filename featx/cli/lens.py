"""``featx lens``: the logit lens beside the probe."""

from __future__ import annotations

from pathlib import Path

import click

from .app import echo, main
from .generate import ConfigCommand


@main.command(cls=ConfigCommand, config="featx.logit_lens:LensConfig")
@click.argument("corpus", type=click.Path(path_type=Path))
def lens(corpus, template, **options):
    """Read every layer at the answering position through the model's own head (the logit lens) and score the
    --answers tokens against the label, beside a probe on the same test rows: a table, a CSV and a figure.

    Decoders read the prompt's last token; encoders with an MLM head read the template's mask token.
    """
    from .. import lens as run_lens
    from ..extraction import unescape_cli_text

    if template is not None and not template.startswith("@"):
        template = unescape_cli_text(template)
    result = run_lens(corpus, template=template, **options)
    echo(result.format())
    for path in result.files:
        echo(f"wrote {path}")
