"""``featx lens``: the logit lens beside the probe."""

from __future__ import annotations

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand


@main.command(cls=ConfigCommand, config="featx.logit_lens:LensConfig")
@click.argument("corpus", type=PATH_ARGUMENT)
def lens(corpus, template, system, **options):
    """Read every layer at the answering position through the model's own head (the logit lens) and score the
    --answers tokens against the label, beside a probe on the same test rows: a table, a CSV and a figure.

    Decoders read the prompt's last token; encoders with an MLM head read the template's mask token.
    """
    from .. import lens as run_lens
    from ..extraction import unescape_cli_text

    if template is not None and not template.startswith("@"):
        template = unescape_cli_text(template)
    result = run_lens(corpus, template=template, system=unescape_cli_text(system), **options)
    echo(result.format())
    files = list(result.files)
    if options["figure"]:  # checked with the other outputs before the first forward pass
        from ..report import save_lens_figure

        files += save_lens_figure(result.table, files[0].with_suffix(".png"), f"Logit lens: {result.model}")
    for path in files:
        echo(f"wrote {path}")
