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

    import datasets

    out = convert(name, source, output)
    data = datasets.load_from_disk(str(out))
    click.echo(f"Wrote {len(data)} {name} pairs to {out} (datasets.load_from_disk; card: {out / 'README.md'})")
    if "annotation_problem" in data.column_names:
        problems = [p for p in data["annotation_problem"] if p]
        if problems:
            click.echo(f"{len(problems)} expert annotations could not be read (kept, with no expert score):", err=True)
            for problem in problems[:20]:
                click.echo(f"  {problem}", err=True)


@click.command("meta-eval")
@click.option("--metric", "-m", "metrics", multiple=True, required=True,
              help="radmetrics metric, or any evaluate module (rouge, a local path) as a baseline; repeatable.")
@click.option("--dataset", "-d", required=True, help="Converted dataset folder, original files, or Hub id.")
@click.option("--dataset-name", default="rexval", show_default=True, help="Which converter reads original files.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Report folder.")
@click.option("--backend", "-b", default="transformers", show_default=True)
@click.option("--judge", "-j", default=None)
@click.option("--replay", default=None, type=click.Path(dir_okay=False))
@click.option("--base-url", default=None)
@click.option("--judge-option", "judge_option", multiple=True, metavar="KEY=VALUE")
@click.option("--max-new-tokens", default=1024, show_default=True, type=int)
@click.option("--cache", "cache_path", default=None)
@click.option("--resamples", default=1000, show_default=True, type=int, help="Bootstrap resamples for CIs.")
@click.option("--seed", default=0, show_default=True, type=int)
def meta_eval_command(metrics, dataset, dataset_name, output, backend, judge, replay, base_url, judge_option,
                      max_new_tokens, cache_path, resamples, seed) -> None:
    """How well do METRICs agree with the experts of DATASET? Writes results.json, per_sample.csv, plots
    and summary.md to OUTPUT."""
    from pathlib import Path

    import radmetrics
    from radmetrics.cli.score import parse_options
    from radmetrics.meta.report import run_evaluate_metric, run_radmetrics_metric, write_report
    from radmetrics.types import GenerationConfig

    source = Path(dataset)
    if source.exists():
        from radmetrics.data import load_expert_dataset

        data = load_expert_dataset(dataset_name, source)
    else:
        import datasets

        data = datasets.load_dataset(dataset, split="test")
    options = parse_options(judge_option)
    if replay:
        backend, options["path"] = "replay", replay
    if base_url:
        options["base_url"] = base_url
    judge_kwargs = {"backend": backend, "judge": judge, "judge_options": options,
                    "cache": cache_path, "config": GenerationConfig(max_new_tokens=max_new_tokens)}
    known = set(radmetrics.list_scoring_systems())
    runs = [run_radmetrics_metric(m, data, judge_kwargs) if m in known else run_evaluate_metric(m, data)
            for m in metrics]
    folder = write_report(runs, data, output, dataset_name, resamples=resamples, seed=seed)
    click.echo((folder / "summary.md").read_text())
    click.echo(f"Report: {folder}")
