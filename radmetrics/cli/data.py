"""`radmetrics data ...`: expert datasets to HF datasets with cards."""
from __future__ import annotations

import click

from radmetrics.cli.judge_flags import JudgeFlags, judge_flags


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
@judge_flags()
@click.option("--resamples", default=1000, show_default=True, type=int, help="Bootstrap resamples for CIs.")
@click.option("--seed", default=0, show_default=True, type=int)
def meta_eval_command(metrics, dataset, dataset_name, output, judge_flags: JudgeFlags, resamples, seed) -> None:
    """How well do METRICs agree with the experts of DATASET? Writes results.json, per_sample.csv, plots
    and summary.md to OUTPUT."""
    from pathlib import Path

    import radmetrics
    from radmetrics.errors import optional_import

    for module in ("scipy", "matplotlib", "datasets"):  # before any judging, not after it
        optional_import(module, "meta", "by meta-eval")
    from radmetrics.meta.report import run_evaluate_metric, run_radmetrics_metric, write_report

    source = Path(dataset)
    if source.exists():
        from radmetrics.data import load_expert_dataset

        data = load_expert_dataset(dataset_name, source)
    else:
        import datasets

        data = datasets.load_dataset(dataset, split="test")
    # --system-option applies to every radmetrics metric of the run (one that lacks the option says so)
    judge_kwargs = {**judge_flags.score_kwargs(), "system_options": judge_flags.system_options}
    known = set(radmetrics.list_scoring_systems())
    runs = [run_radmetrics_metric(m, data, judge_kwargs) if m in known else run_evaluate_metric(m, data)
            for m in metrics]
    folder = write_report(runs, data, output, dataset_name, resamples=resamples, seed=seed)
    click.echo((folder / "summary.md").read_text())
    click.echo(f"Report: {folder}")


@data_group.command("transform")
@click.argument("step", type=click.Choice(["standardize", "inject", "green-modify"]))
@click.option("--input", "-i", "input_path", required=True, type=click.Path(exists=True),
              help="JSONL/CSV of reports, or a converted dataset folder.")
@click.option("--column", default="reference", show_default=True, help="The report column to transform.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Dataset folder to write.")
@click.option("--error-type", type=click.Choice(["a", "b"]), default="a", help="inject: (a) false finding, (b) omission.")
@click.option("--k", default=1, type=int, help="inject: exactly this many errors per report.")
@click.option("--modality", default="unknown", help="inject: for the validation prompt.")
@click.option("--region", default="unknown", help="inject: body region for the validation prompt.")
@click.option("--seed", default=0, type=int, help="green-modify: error categories are drawn with this seed.")
@judge_flags()
def transform_command(step, input_path, column, output, error_type, k, modality, region, seed,
                      judge_flags: JudgeFlags) -> None:
    """Run an LLM data STEP over a column through the shared judge; writes a dataset with provenance columns.
    --system-option sets the step's own settings (inject: max_attempts, validate)."""
    from pathlib import Path

    import datasets

    from radmetrics.data import steps
    from radmetrics.errors import InputError

    step_options = {"standardize": (), "inject": ("max_attempts", "validate"), "green-modify": ()}[step]
    unknown = sorted(set(judge_flags.system_options) - set(step_options))
    if unknown:
        raise InputError(f"data transform {step} has no option '{unknown[0]}'; its options: "
                         f"{', '.join(step_options) or 'none'}")

    source = Path(input_path)
    if source.is_dir():
        data = datasets.load_from_disk(str(source))
    else:
        from radmetrics.io import read_pairs

        rows = read_pairs(source, reference_column=column if column != "reference" else None).rows
        data = datasets.Dataset.from_list(rows)
    if column not in data.column_names:
        raise click.ClickException(f"no column '{column}' in {input_path}; columns: {data.column_names}")
    the_judge = judge_flags.build_judge()
    config = judge_flags.config()
    reports = list(data[column])
    if step == "standardize":
        results = steps.standardize(the_judge, reports, config)
    elif step == "inject":
        results = steps.inject_errors(the_judge, reports, error_type, k, modality, region, config=config,
                                      **judge_flags.system_options)
    else:
        results = steps.green_modify(the_judge, reports, seed=seed, config=config)
    out = data.add_column(f"{column}_{step.replace('-', '_')}", [r.output for r in results])
    provenance = {"step": step, "steps_version": steps.STEPS_VERSION, "judge": the_judge.identity(),
                  "error_type": error_type if step == "inject" else None, "k": k if step == "inject" else None,
                  "seed": seed if step == "green-modify" else None}
    import json

    out = out.add_column("provenance", [json.dumps(provenance)] * len(out))
    out = out.add_column("step_attempts", [r.attempts for r in results])
    out = out.add_column("step_failure", [r.reason for r in results])
    out = out.add_column("step_details", [json.dumps(r.details) if r.details else None for r in results])
    out.save_to_disk(output)
    failed = sum(r.output is None for r in results)
    click.echo(f"{step}: {len(results) - failed}/{len(results)} rows done, {failed} failed (see step_failure); "
               f"wrote {output}")


@data_group.command("push")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("repo_id")
@click.option("--public", is_flag=True, help="Make the dataset public (private by default).")
@click.option("--gated", type=click.Choice(["auto", "manual"]), default=None, help="Require access requests.")
@click.option("--overwrite-card", is_flag=True, help="Replace a README.md on the Hub that was written by hand.")
def push_command(folder: str, repo_id: str, public: bool, gated: str | None, overwrite_card: bool) -> None:
    """Push a converted dataset FOLDER (with its card) to the Hub as REPO_ID, private unless --public.
    Data derived from PhysioNet (ReXVal, RadEval's MIMIC reports, RaTE-Eval, ReFISco) is never pushed publicly,
    and nothing is added to an existing public repository without --public."""
    from radmetrics.hub import describe_push, push_folder

    result = push_folder(folder, repo_id, repo_type="dataset", public=public, gated=gated,
                         overwrite_card=overwrite_card)
    for line in describe_push(folder, result):
        click.echo(line)
