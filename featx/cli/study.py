"""``featx study run``, ``featx study status`` and ``featx study report``: many models x corpora x labels from
one study file."""

from __future__ import annotations

import sys

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand, grouped_option


@main.group()
def study():
    """Studies: one TOML file names models, corpora and labels; every (model, corpus) is extracted once, every
    label probed, resumably, into one results table (featx.study.load) and a summary."""


@study.command("run", cls=ConfigCommand, config="featx.study:RunConfig")
@click.argument("study_file", metavar="STUDY", type=PATH_ARGUMENT)
@grouped_option(
    "Run",
    "--dry-run",
    is_flag=True,
    help="Only list the cells and probes, what is done, and each pending extraction's estimated time and disk.",
)
def study_run(study_file, dry_run, **options):
    """Run every cell of STUDY (a TOML file) not done yet: kill it at any moment and run it again to go on.
    Exits 1 when a cell failed (the others are done; the summary names it)."""
    from ..study import RunConfig, format_dry_run, format_summary, run
    from ..study import dry_run as plan_only

    config = RunConfig(study=study_file, **options)
    if dry_run:
        echo(format_dry_run(plan_only(config)))
        return
    result = run(config, echo=echo)
    echo(format_summary(result))
    if result.exit_code:
        sys.exit(result.exit_code)


@study.command("status")
@click.argument("study_file", metavar="STUDY", type=PATH_ARGUMENT)
def study_status(study_file):
    """Each cell of STUDY: done, pending or failed, with when it started and finished, and its error; no corpus
    file is read (a missing one is named, with the extractions not done that study run would need it for)."""
    from ..study import format_status, status

    echo(format_status(status(study_file)))


@study.command("report")
@click.argument("study_file", metavar="STUDY", type=PATH_ARGUMENT)
@grouped_option("Report", "--no-cells", is_flag=True, help="Do not write (and link) each cell's own report page.")
def study_report(study_file, no_cells):
    """One offline, interactive page over STUDY's results (OUTPUT/report.html): task x model heatmaps, layer
    curves on a relative-depth axis with 95% bands, expected layers, each cell's own report linked."""
    from ..study import write_report

    echo(f"study report: {write_report(study_file, cells=not no_cells, echo=echo)}")
