"""``featx directions``: a fitted bundle's per-layer directions as a safetensors file, for steering tools."""

from __future__ import annotations

import click

from .app import echo, main
from .generate import PATH_ARGUMENT, ConfigCommand


@main.command(cls=ConfigCommand, config="featx.deploy:DirectionsConfig")
@click.argument("bundle", type=PATH_ARGUMENT)
def directions(bundle, **options):
    """Export the per-layer directions of the linear probe in BUNDLE (a featx fit folder) as safetensors.

    Arrays layer.L.class.C (class C's raw-space direction), layer.L.toward.C (the unit direction toward C) and
    layer.L.mean (the training mean); metadata: model, label, classes, layers, pooling (docs/interventions.md)."""
    from ..deploy import DirectionsConfig, export_directions

    output = export_directions(DirectionsConfig(bundle=bundle, **options))
    echo(f"wrote {output}")
