"""`radmetrics data ...`: expert datasets to HF datasets with cards."""
from __future__ import annotations

from pathlib import Path

import click

from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.data import CONVERTERS


@click.group("data")
def data_group() -> None:
    """Convert expert datasets (ReXVal, ...) to HF datasets with a card."""


@data_group.command("convert")
@click.argument("name", type=click.Choice(sorted(CONVERTERS)))
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
@click.option("--dataset", "-d", required=True,
              help="Converted dataset folder (radmetrics data convert), the original files, or a Hub dataset id.")
@click.option("--dataset-name", default=None,
              help="Which converter reads original files (rexval, radeval, rate_eval, refisco; default rexval). "
                   "Converted folders and Hub datasets name themselves.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Report folder.")
@judge_flags()
@click.option("--resamples", default=1000, show_default=True, type=int, help="Bootstrap resamples for CIs.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap and randomization tests.")
def meta_eval_command(metrics, dataset, dataset_name, output, judge_flags: JudgeFlags, resamples, seed) -> None:
    """How well do METRICs agree with the experts of DATASET? Writes results.json, per_sample.csv, plots,
    summary.md and a self-contained report.html to OUTPUT.

    A metric that fails part-way (judge unreachable, ...) is reported with its reason and the finished
    metrics are kept; the command then exits with code 2."""
    from radmetrics.errors import RadmetricsError, optional_import

    for module in ("scipy", "matplotlib", "datasets"):  # before any judging, not after it
        optional_import(module, "meta", "by meta-eval")
    from radmetrics.meta.report import write_report
    from radmetrics.meta.runs import run_metric

    # Everything that can fail in seconds fails before the long judge work: names, data, output, baselines, judge.
    judge_metrics, modules = split_metric_names(metrics)
    if Path(output).exists() and not Path(output).is_dir():
        raise RadmetricsError(f"--output {output} is a file; meta-eval writes a report folder.")
    data = load_meta_eval_data(dataset, dataset_name)
    for module in modules:
        load_baseline(module)
    if judge_metrics:
        check_judges(judge_metrics, judge_flags.backend, judge_flags.model, judge_flags.options)

    # --system-option applies to every radmetrics metric of the run (one that lacks the option says so)
    judge_kwargs = {**judge_flags.score_kwargs(), "system_options": judge_flags.system_options}
    # run_metric never raises for one metric's sake: a failure comes back as a run with `error` set
    runs = [run_metric(name, data["reference"], data["candidate"], judge_kwargs) for name in metrics]
    failed = [run.name for run in runs if run.error]
    for run in runs:
        if run.error:
            click.echo(f"meta-eval: {run.name} failed: {run.error}", err=True)
    folder = write_report(runs, data, output, dataset_name, resamples=resamples, seed=seed)
    click.echo((folder / "summary.md").read_text())
    click.echo(f"Report: {folder} (open {folder / 'report.html'} in a browser)")
    if failed:
        raise RadmetricsError(f"{len(failed)} of {len(metrics)} metrics failed ({', '.join(failed)}); the report "
                              f"in {folder} has the others and says why.")


def split_metric_names(metrics) -> tuple[list[str], list[str]]:
    """(radmetrics scoring systems, evaluate modules to load); radmetrics' own baselines need neither."""
    import radmetrics
    from radmetrics import baselines
    from radmetrics.meta.runs import EvaluateSpec

    known = set(radmetrics.list_scoring_systems())
    judge_metrics = [m for m in metrics if m in known]
    modules = [EvaluateSpec.parse(m).module for m in metrics if m not in known and not baselines.is_baseline(m)]
    return judge_metrics, modules


def load_meta_eval_data(dataset: str, dataset_name: str | None):
    """The expert dataset: a converted folder, original files (converted on the fly) or a Hub id."""
    from radmetrics.errors import InputError

    source = Path(dataset)
    if source.exists():
        from radmetrics.data import load_expert_dataset

        return load_expert_dataset(dataset_name or "rexval", source)
    if dataset.startswith((".", "/", "~")) or dataset.count("/") > 1:
        raise InputError(f"--dataset {dataset}: no such folder")
    import datasets

    try:
        return datasets.load_dataset(dataset, split="test")
    except Exception as e:  # datasets raises many types for "not reachable / not found"
        raise InputError(f"--dataset {dataset} is not a local folder and could not be loaded from the Hub "
                         f"({type(e).__name__}); pass a folder written by `radmetrics data convert`, or check the "
                         "id and your network (HF_DATASETS_OFFLINE=1 allows only cached datasets).") from e


def load_baseline(module: str) -> None:
    """Load an evaluate module now, in seconds, rather than fail after the judge metrics ran; a name that is
    not loadable but close to a radmetrics metric is most likely a typo of it."""
    import difflib

    import radmetrics
    from radmetrics import baselines
    from radmetrics.errors import RadmetricsError
    from radmetrics.meta.report import load_evaluate_module

    try:
        load_evaluate_module(module)
    except RadmetricsError as e:
        ours = set(radmetrics.list_scoring_systems()) | set(baselines.list_baselines())
        close = difflib.get_close_matches(module, ours, n=1, cutoff=0.6)
        hint = f" Did you mean radmetrics' '{close[0]}'?" if close else ""
        raise RadmetricsError(f"{e}{hint}") from e


def check_judges(names, backend: str, judge: str | None, options) -> None:
    """Each judge metric's judge is reachable, or it says plainly that it needs one: before any judging."""
    import radmetrics
    from radmetrics.runner import preflight_judge

    for name in names:
        preflight_judge(backend, judge, options, radmetrics.get_scoring_system(name))


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
