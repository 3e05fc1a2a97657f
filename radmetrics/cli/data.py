"""`radmetrics data ...`: expert datasets to HF datasets with cards."""
from __future__ import annotations

import click


@click.group("data")
def data_group() -> None:
    """Convert expert datasets (ReXVal, ...) to HF datasets with a card."""


@data_group.command("convert")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Folder to write.")
def convert_command(name: str, source: str, output: str) -> None:
    """Convert the files you downloaded for dataset NAME (e.g. rexval) from SOURCE into OUTPUT."""
    from radmetrics.data import convert

    out = convert(name, source, output)
    click.echo(f"Wrote {name} to {out} (load with datasets.load_from_disk; card: {out / 'README.md'})")
