"""`radmetrics data ...`: expert datasets to HF datasets with cards."""
from __future__ import annotations

from pathlib import Path

import click

from radmetrics.cli.input_paths import EXISTING_INPUT, INPUT_FILE
from radmetrics.cli.output_paths import OUTPUT_FOLDER, OVERWRITE_REPORT, check_report_folder
from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.cli.stat_options import RESAMPLES, SEED
from radmetrics.data import CONVERTERS


@click.group("data")
def data_group() -> None:
    """Convert expert datasets (ReXVal, ...) to HF datasets with a card."""


@data_group.command("convert")
@click.argument("name", type=click.Choice(sorted(CONVERTERS)))
@click.argument("source", type=EXISTING_INPUT)
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER, help="Folder to write (new or empty).")
@click.option("--overwrite", is_flag=True, help="Write into a folder that is not empty, replacing its dataset and card.")
def convert_command(name: str, source: str, output: str, overwrite: bool) -> None:
    """Convert the files you downloaded for dataset NAME (e.g. rexval) from SOURCE into OUTPUT."""
    from radmetrics.data import check_dataset_output, convert

    import datasets

    check_dataset_output(output, overwrite, source)
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
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER, help="Report folder.")
@OVERWRITE_REPORT
@click.option("--target", type=click.Choice(["score", "significant", "total", "per-category"]), default="score",
              show_default=True, help="Expert judgment to grade against: the dataset's expert_score, significant "
              "errors, significant + insignificant errors (GREEN Table 6, ER²Score Table 2), or per error category.")
@click.option("--split", default=None, help="Grade on a seeded held-out subset: a row count (40) or share (0.2); "
              "linear ensembles are fitted on the other rows.")
@click.option("--split-seed", default=0, show_default=True, type=SEED, help="Seed that draws the --split subset.")
@click.option("--ensemble", "ensembles", multiple=True, metavar="mean|average|linear:M1,M2[,...]",
              help="Add an ensemble of metrics run here (VERT Table 5); repeatable. mean: the plain mean (VERT's "
                   "average, members on one scale); average: the mean of z-scores (mixed scales); linear: fitted.")
@judge_flags(several_judges=True, shared_answers=True)
@click.option("--resamples", default=1000, show_default=True, type=RESAMPLES, help="Bootstrap resamples for CIs.")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the bootstrap and randomization tests.")
@click.option("--resample-by", default=None, metavar="COLUMN",
              help="Resample whole groups of rows sharing COLUMN's value for the CIs (study_id: a study's candidate "
                   "reports together); default: rows, as the papers.")
def meta_eval_command(metrics, dataset, dataset_name, output, overwrite, target, split, split_seed, ensembles,
                      judge_flags: JudgeFlags, resamples, seed, resample_by) -> None:
    """How well do METRICs agree with the experts of DATASET? Writes results.json, per_sample.csv, plots,
    summary.md and a self-contained report.html to OUTPUT.

    A metric that fails part-way (judge unreachable, ...) is reported with its reason and the finished
    metrics are kept; the command then exits with code 2. So it does when the judge gave some rows no answer (a
    failed call) or an answer cut at the token limit: they are left out of the correlations, and a rerun with a
    cache asks only them."""
    check_report_folder(output, "meta-eval", overwrite, judge_flags.cache_files())
    from radmetrics.errors import RadmetricsError, optional_import

    for module in ("scipy", "matplotlib", "datasets"):  # before any judging, not after it
        optional_import(module, "meta", "by meta-eval")
    from radmetrics.meta import targets
    from radmetrics.meta.report import Ensemble, resampling_groups, write_report
    from radmetrics.meta.runs import check_metrics_loadable, run_metric

    ensemble_specs = [Ensemble.parse(e) for e in ensembles]
    split_size = _split_size(split)

    # Everything that can fail in seconds fails before the long judge work: names, data, output, baselines, judge.
    if Path(output).exists() and not Path(output).is_dir():
        raise RadmetricsError(f"--output {output} is a file; meta-eval writes a report folder.")
    data = load_meta_eval_data(dataset, dataset_name)
    targets.expert_target(data, target)  # a target the dataset cannot give stops here, before judging
    resampling_groups(data, resample_by)  # a --resample-by column the dataset lacks: now, not after judging
    train_rows, _ = targets.held_out(len(data), split_size, split_seed)
    for ens in ensemble_specs:  # a linear fit needs members + 2 rows: said now, not as n/a after the judging
        needed = targets.rows_to_fit(len(ens.members))
        if ens.method == "linear" and split_size is not None and len(train_rows) < needed:
            raise RadmetricsError(f"--ensemble {ens.name}: --split {split} leaves {len(train_rows)} training rows "
                                  f"and the fit needs at least {needed}; hold out fewer rows, or leave "
                                  "--split out for 5-fold cross-validation")
    judge_metrics = check_metrics_loadable(metrics)
    labels = _judge_labels(judge_flags.judges)
    check_ensemble_members(ensemble_specs, metrics, judge_metrics, labels)
    if judge_metrics:
        for judge in labels:
            check_judges(judge_metrics, judge_flags.backend, judge, judge_flags.options, judge_flags.system_options,
                         judge_flags.cache)

    runs = []
    for name in metrics:
        # one run per judge for judge metrics when several --judge are given (named metric@judge)
        for judge, label in (labels.items() if name in judge_metrics else [(judge_flags.model, None)]):
            # --system-option applies to every radmetrics metric of the run (one that lacks the option says so)
            judge_kwargs = {**judge_flags.score_kwargs(), "judge": judge, "system_options": judge_flags.system_options}
            # run_metric never raises for one metric's sake: a failure comes back as a run with `error` set
            run = run_metric(name, data["reference"], data["candidate"], judge_kwargs)
            if label:
                run.name, run.judge_label = f"{name}@{label}", label
            runs.append(run)
    failed = [run.name for run in runs if run.error]
    for run in runs:
        if run.error:
            click.echo(f"meta-eval: {run.name} failed: {run.error}", err=True)
    from radmetrics.io import owner_only

    with owner_only(output):  # per-report scores and reasons: readable by you only, as score's results
        folder = write_report(runs, data, output, dataset_name, resamples=resamples, seed=seed, target=target,
                              split=split_size, split_seed=split_seed, ensembles=ensemble_specs,
                              overwrite=overwrite, resample_by=resample_by)  # the folder is checked again
    click.echo((folder / "summary.md").read_text())
    click.echo(f"Report: {folder} (open {folder / 'report.html'} in a browser)")
    import json

    reported = json.loads((folder / "results.json").read_text()).get("metrics", {})
    failed += [name for name, entry in reported.items() if entry.get("failed") and name not in failed]
    if failed:
        total = max(len(runs), len(reported))  # the report's rows: metrics, runs per judge, ensembles
        raise RadmetricsError(f"{len(failed)} of {total} metrics failed ({', '.join(failed)}); the report "
                              f"in {folder} has the others and says why.")
    without_verdict = [line for name, m in reported.items()
                       for line in _without_verdict(name, m, judge_flags.cache is not False, "row(s)",
                                                    "left out of its correlations")]
    if without_verdict:  # review 29a: the correlations were over fewer rows than asked, with exit 0
        raise RadmetricsError("; ".join(without_verdict) + f". {folder}/per_sample.csv names the rows.")


def _split_size(split: str | None) -> float | int | None:
    from radmetrics.errors import InputError

    if split is None:
        return None
    try:
        value = float(split)
    except ValueError:
        raise InputError(f"--split takes a row count (40) or a share (0.2), not {split!r}") from None
    if 0 < value < 1:
        return value
    if value >= 1 and value.is_integer():  # 1.5 rows is neither a count nor a share: refused, never truncated to 1
        return int(value)
    raise InputError(f"--split takes a row count (40) or a share between 0 and 1 (0.2), not {split!r}")


def check_ensemble_members(ensembles, metrics, judge_metrics, labels) -> None:
    """Every --ensemble member is a run of this meta-eval, before any judging. With several --judge a judge
    metric runs once per judge, as metric@label, and a member names one of those runs."""
    from radmetrics.errors import InputError

    several = [label for label in labels.values() if label]
    runs = {f"{m}@{label}" for m in judge_metrics for label in several} if several else set()
    runs |= {m for m in metrics if not (several and m in judge_metrics)}
    for ensemble in ensembles:
        for member in ensemble.members:
            if member in runs:
                continue
            if several and member in judge_metrics:
                raise InputError(f"--ensemble {ensemble.name}: with several --judge, {member} runs once per judge; "
                                 f"name one: {', '.join(f'{member}@{label}' for label in several)}")
            raise InputError(f"--ensemble {ensemble.name}: {member} is not among the metrics of this run "
                             f"({', '.join(sorted(runs))}); name it with -m")


def _judge_labels(judges: tuple[str, ...]) -> dict[str | None, str | None]:
    """judge -> the label its runs carry (None with one judge: metric names stay plain)."""
    if len(judges) <= 1:
        return {judges[0] if judges else None: None}
    short = {j: j.rstrip("/").rsplit("/", 1)[-1] for j in judges}
    if len(set(short.values())) < len(short):
        short = {j: j for j in judges}
    return short


def load_meta_eval_data(dataset: str, dataset_name: str | None):
    """The expert dataset: a converted folder, original files (converted on the fly) or a Hub id."""
    from radmetrics.cli.input_paths import STDIN_REFUSED
    from radmetrics.data import open_expert_dataset
    from radmetrics.errors import InputError

    if dataset == "-":
        raise InputError(f"--dataset: {STDIN_REFUSED}")
    return open_expert_dataset(dataset_name or "rexval", dataset, f"--dataset {dataset}")


def check_judges(names, backend: str, judge: str | None, options, system_options=None, cache=False) -> None:
    """Each judge metric's judge is reachable, or it says plainly that it needs one, its --system-option values
    work (a shots file is read), and the response cache file given with --cache (`cache`) can be opened:
    before any judging."""
    from radmetrics.judge import check_response_cache
    from radmetrics.runner import preflight_judge, system_to_check

    for name in names:
        preflight_judge(backend, judge, options, system_to_check(name, system_options))
    if names:
        check_response_cache(cache)


@data_group.command("transform")
@click.argument("step", type=click.Choice(["standardize", "inject", "green-modify"]))
@click.option("--input", "-i", "input_path", required=True, type=EXISTING_INPUT,
              help="JSONL/CSV of reports, or a converted dataset folder.")
@click.option("--column", default=None, help="The report column to transform [default: the reference column, by "
              "any name `score` reads for it: reference, ground_truth, gt_report, ...].")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER,
              help="Dataset folder to write (new or empty).")
@click.option("--overwrite", is_flag=True, help="Write into a folder that is not empty, replacing its dataset.")
@click.option("--error-type", type=click.Choice(["a", "b"]), default="a", show_default=True,
              help="inject: (a) false finding, (b) omission.")
@click.option("--k", default=1, show_default=True, type=click.IntRange(min=1),
              help="inject: exactly this many errors per report.")
@click.option("--modality", default="unknown", help="inject: for the validation prompt.")
@click.option("--region", default="unknown", help="inject: body region for the validation prompt.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="green-modify: error categories are drawn with this seed.")
@judge_flags(judge_default="required by the transformers, openai and vllm backends",
             system_option_help="The step's option, repeatable: inject takes max_attempts=N and validate=false; "
                                "standardize and green-modify take none.")
def transform_command(step, input_path, column, output, overwrite, error_type, k, modality, region, seed,
                      judge_flags: JudgeFlags) -> None:
    """Run an LLM data STEP over a column through the shared judge; writes a dataset with provenance columns.
    --system-option sets the step's own settings (inject: max_attempts, validate)."""
    from pathlib import Path

    import datasets

    from radmetrics.data import steps
    from radmetrics.errors import InputError, JudgeError
    from radmetrics.io import ICONV_HINT, NOT_UTF8, columns_read_line

    if judge_flags.model is None and judge_flags.backend in ("transformers", "vllm", "openai"):
        # a data step has no metric, so no published judge to fall back on: say so in the command's own flags
        raise JudgeError(f"data transform {step} rewrites each report with a judge: name one (--judge MODEL: a Hub "
                         "id or a local folder; or --backend openai --base-url URL --judge NAME), or give --replay FILE.")
    step_options = {"standardize": (), "inject": ("max_attempts", "validate"), "green-modify": ()}[step]
    unknown = sorted(set(judge_flags.system_options) - set(step_options))
    if unknown:
        raise InputError(f"data transform {step} has no option '{unknown[0]}'; its options: "
                         f"{', '.join(step_options) or 'none'}")

    from radmetrics.data import check_dataset_output

    check_dataset_output(output, overwrite, input_path)  # before the judge work, not after it
    data, column, skipped, unused = _transform_input(Path(input_path), column)
    if unused:  # two exports merged into one file: the wrong column must not be transformed without a word
        click.echo(columns_read_line(input_path, column, None, unused, choose="pass --column to choose"), err=True)
    sent = [i for i in range(len(data)) if i not in skipped]
    the_judge = judge_flags.build_judge()
    config = judge_flags.config()
    texts = data[column]
    reports = [texts[i] for i in sent]
    if step == "standardize":
        done = steps.standardize(the_judge, reports, config)
    elif step == "inject":
        done = steps.inject_errors(the_judge, reports, error_type, k, modality, region, config=config,
                                   **judge_flags.system_options)
    else:
        done = steps.green_modify(the_judge, reports, seed=seed, config=config)
    # rows the input could not give a report for are kept with the reason and never sent to the judge
    results = [steps.StepResult(None, 0, reason) for reason in (skipped.get(i) for i in range(len(data)))]
    for i, result in zip(sent, done):
        results[i] = result
    result_column = f"{column}_{step.replace('-', '_')}"
    data = _keep_earlier_step_columns(data, [result_column, *STEP_COLUMNS])
    out = data.add_column(result_column, [r.output for r in results])
    provenance = {"step": step, "steps_version": steps.STEPS_VERSION, "judge": the_judge.identity(),
                  "error_type": error_type if step == "inject" else None, "k": k if step == "inject" else None,
                  "seed": seed if step == "green-modify" else None}
    import json

    out = out.add_column("provenance", [json.dumps(provenance)] * len(out))
    out = out.add_column("step_attempts", [r.attempts for r in results], feature=datasets.Value("int64"))
    out = out.add_column("step_failure", [r.reason for r in results])
    out = out.add_column("step_details", [json.dumps(r.details) if r.details else None for r in results])
    from radmetrics.io import owner_only, staged_folder

    # every report and the judge's rewrite: readable by you only, as score's results; staged: a kill while writing
    # leaves no half dataset
    with owner_only(output), staged_folder(output) as staging:
        out.save_to_disk(str(staging))
    failed = sum(r.output is None for r in results)
    click.echo(f"{step}: {len(results) - failed}/{len(results)} rows done, {failed} failed (see step_failure); "
               f"wrote {output}")
    not_utf8 = [why.split(":", 1)[0] for why in skipped.values() if NOT_UTF8 in why]
    if not_utf8:  # their text columns hold U+FFFD where the bytes were, which reads like data
        click.echo(f"Warning: {len(not_utf8)} row(s) are not UTF-8 ({', '.join(not_utf8[:5])}"
                   f"{' ...' if len(not_utf8) > 5 else ''}): not sent; their text columns hold U+FFFD where the bytes "
                   f"were, _raw the line as written; {ICONV_HINT}, and run again.", err=True)
    if results and failed == len(results):  # as `score` exits 1 when the judge failed every row (review 12)
        from collections import Counter

        top = Counter(r.reason for r in results).most_common(1)[0][0]
        click.echo(f"Error: no row was transformed ({failed} × {str(top)[:200]}); {output} holds the "
                   "rows with their step_failure.", err=True)
        raise SystemExit(1)


#: the provenance columns every transform adds beside its result column
STEP_COLUMNS = ("provenance", "step_attempts", "step_failure", "step_details")


def _keep_earlier_step_columns(data, names: list[str]):
    """A transform of a transform's output (standardize, then inject): the earlier run's columns of the same names
    are kept, renamed NAME_1 (NAME_2, ... as the chain grows), and said; the new run's take the plain names."""
    earlier = [n for n in names if n in data.column_names]
    if not earlier:
        return data
    suffix = next(k for k in range(1, len(data.column_names) + 2)
                  if not any(f"{n}_{k}" in data.column_names for n in earlier))
    click.echo(f"Note: the input already has {', '.join(earlier)} (an earlier transform's): kept as "
               f"{', '.join(f'{n}_{suffix}' for n in earlier)}.", err=True)
    return data.rename_columns({n: f"{n}_{suffix}" for n in earlier})


def _transform_input(source, column: str | None):
    """(the rows as a datasets.Dataset, the column read, {row: why it has no report to send}, the other reference
    columns not read). No column given: the reference column, picked as `score` picks it. A file is read
    as `score` reads it: an unreadable line, bytes that are not UTF-8 and an empty or non-text report are kept as
    rows with the reason and never sent (else the judge is asked about the text "None" or a replaced byte, and
    the row passes for done)."""
    import json

    import datasets

    from radmetrics.errors import InputError
    from radmetrics.io import (REFERENCE_ALIASES, Records, alias_column, check_regular_file, check_text_file,
                               other_alias_columns)

    problems: dict[int, str] = {}
    if source.is_dir():
        from radmetrics.data import is_saved_dataset

        if not is_saved_dataset(source):
            raise InputError(f"-i {source}: a folder that is not a saved dataset (one written by `radmetrics data "
                             "convert` or datasets' save_to_disk); give that, or a JSONL/CSV file")
        data = datasets.load_from_disk(str(source))
        if isinstance(data, datasets.DatasetDict):
            raise InputError(f"-i {source}: a dataset with splits ({', '.join(data)}); give one split's folder")
        columns, where = data.column_names, [f"row {i}" for i in range(len(data))]
        texts = None
    else:
        check_regular_file(source)
        check_text_file(source, sniff=None)
        records = Records(source)
        rows, where = [], []
        for record in records:
            if record.problem:
                problems[len(rows)] = f"input line {record.line}: {record.problem}"
            rows.append(record.row)
            where.append(f"input line {record.line}")
        if not rows:
            raise InputError(f"{source} has no rows")
        columns = list(records.columns)
        if not columns:
            raise InputError(f"{source}: no readable row ({problems[0]})")
    unused: tuple[str, ...] = ()
    if column is None:  # any reference spelling, picked as score picks it; the other such columns are named
        column = alias_column(columns, REFERENCE_ALIASES) or "reference"
        unused = other_alias_columns(columns, (column,), REFERENCE_ALIASES)
    if column not in columns:
        raise InputError(f"{source}: no column '{column}' to transform; columns are: {', '.join(columns)} "
                         "(--column NAME)")
    if source.is_dir():
        texts = data[column]
    else:
        texts = [row.get(column) for row in rows]
        # a report that is not text (a number, a list) is kept in the reason and not in the dataset's text column
        for row in rows:
            if column in row and not isinstance(row[column], str):
                row[column + "_as_given"], row[column] = json.dumps(row[column]), None
        keys = list(dict.fromkeys(k for row in rows for k in row))  # from_list reads the first row's keys only
        try:
            data = datasets.Dataset.from_list([{k: row.get(k) for k in keys} for row in rows])
        except Exception as e:  # pyarrow refuses a column whose rows hold different types
            raise InputError(f"{source}: its rows cannot form one table ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:200]}); give every row the same kinds of values") from e
    from radmetrics.runner import row_problem

    for i, text in enumerate(texts):
        # `score`'s rule: None, NaN, a number, blank or a missing-value marker ("NA") is no report to send
        if i not in problems and (why := row_problem(text, column)):
            problems[i] = f"{where[i]}: {why}"
    return data, column, problems, unused


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
    from radmetrics.errors import InputError, optional_import
    from radmetrics.hub import describe_push, push_folder

    optional_import("huggingface_hub", "hub", "by data push")  # the missing extra is named first
    from radmetrics.data import is_saved_dataset

    if not is_saved_dataset(folder):
        raise InputError(f"{folder} is not a converted dataset (no dataset_info.json or state.json): write one with "
                         "`radmetrics data convert` (or datasets' save_to_disk) first")
    result = push_folder(folder, repo_id, repo_type="dataset", public=public, gated=gated,
                         overwrite_card=overwrite_card)
    for line in describe_push(folder, result):
        click.echo(line)


@click.command("preference-eval")
@click.option("--input", "-i", "input_path", required=True, type=INPUT_FILE,
              help="JSONL/CSV rows: reference, candidate_a, candidate_b, preferred (a|b)[, confidence].")
@click.option("--metric", "-m", "metrics", multiple=True, required=True,
              help="radmetrics metric, named baseline or evaluate module; repeatable.")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER,
              help="Folder for results.json, per_pair.csv and summary.md.")
@OVERWRITE_REPORT
@judge_flags(shared_answers=True)
@click.option("--resamples", default=1000, show_default=True, type=RESAMPLES, help="Bootstrap resamples for the CI.")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the bootstrap.")
def preference_eval_command(input_path, metrics, output, overwrite, judge_flags: JudgeFlags, resamples, seed) -> None:
    """Preference accuracy (GREEN Table 7): how often each METRIC prefers the candidate the experts preferred.
    Writes results.json, per_pair.csv (each pair's scores, outcome and why a side is unscored) and summary.md.

    A metric that fails (judge unreachable, ...) is reported with its reason and the others are kept; the
    command then exits with code 2, as meta-eval and compare do."""
    check_report_folder(output, "preference-eval", overwrite, judge_flags.cache_files())
    import csv

    from radmetrics.errors import RadmetricsError, optional_import

    optional_import("scipy", "meta", "by preference-eval")
    from radmetrics.meta.html_report import shorten, strict_json_ready
    from radmetrics.meta.preference import preference_accuracy, read_preferences

    rows = read_preferences(input_path)
    # what can fail in seconds fails before the judging: unknown metrics, an unreachable judge
    from radmetrics.meta.runs import check_metrics_loadable

    judge_metrics = check_metrics_loadable(metrics)
    check_judges(judge_metrics, judge_flags.backend, judge_flags.model, judge_flags.options,
                 judge_flags.system_options, judge_flags.cache)
    judge_kwargs = {**judge_flags.score_kwargs(), "system_options": judge_flags.system_options}
    results = strict_json_ready(preference_accuracy(rows, list(metrics), judge_kwargs, resamples=resamples, seed=seed,
                                                    metrics_checked=True))  # checked above, before the judges
    per_pair = results.pop("per_pair")
    lines = [f"# Preference accuracy ({results['n_pairs']} pairs; {results['rule']})", "",
             "| metric | accuracy [95% CI] | ties | unscored pairs |", "| --- | --- | ---: | ---: |"]
    for name, m in results["metrics"].items():
        if m["error"]:
            lines.append(f"| {name} | n/a: {shorten(m['error'], 300)} | | |")
        else:
            ci = "" if m["ci_low"] is None else f" [{m['ci_low']:.2f}, {m['ci_high']:.2f}]"
            lines.append(f"| {name} | {m['accuracy']:.2f}{ci} | {m['ties']} | {m['unscored_pairs']} |")
    by_level = {name: m["by_confidence"] for name, m in results["metrics"].items() if m.get("by_confidence")}
    if by_level:  # GREEN Fig. 5
        levels = list(dict.fromkeys(level for per in by_level.values() for level in per))  # in the results' order
        lines += ["", "Accuracy by the experts' confidence (pairs):", "",
                  "| metric | " + " | ".join(levels) + " |", "| --- |" + " ---: |" * len(levels)]
        for name, per in by_level.items():
            cells = [f"{per[lv]['accuracy']:.2f} ({per[lv]['n']})" if lv in per else "" for lv in levels]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        if results.get("pairs_without_confidence"):
            lines += ["", f"{results['pairs_without_confidence']} pairs have no confidence (blank, null, NaN or NA): "
                          "they count in the accuracy above, in no confidence column."]
    unscored = sum(row["outcome"] == "unscored" for row in per_pair)
    if unscored:
        lines += ["", f"{unscored} pair-metric results had an unscored side (counted as wrong): per_pair.csv says why."]
    # review 29a: a dropped connection lowered an accuracy (its pairs counted as wrong) with exit 0, and a metric
    # that scored no pair read 0.00 [0.00, 0.00], exit 0; compare exits 2 on both
    problems = _preference_problems(results["metrics"], results["n_pairs"], judge_flags.cache is not False)
    if problems:
        lines += ["", "Not the metric's own verdict: " + "; ".join(problems) + "."]
    from radmetrics.io import owner_only
    from radmetrics.meta.report_folder import ReportWriter

    with owner_only(Path(output)):  # per-pair scores and reasons: readable by you only, as score's results
        # replaces an earlier preference-eval report there whole; staged: a kill while writing leaves no half report
        with ReportWriter(output, "preference-eval") as report:
            columns = ["id", "metric", "score_a", "score_b", "experts_prefer", "confidence", "outcome", "reason"]
            with report.path("per_pair.csv").open("w", newline="", encoding="utf-8") as fh:
                writer = csv.DictWriter(fh, columns)
                writer.writeheader()
                writer.writerows({k: "" if row[k] is None else row[k] for k in columns} for row in per_pair)
            report.path("summary.md").write_text("\n".join(lines) + "\n")
            report.finish(results)
    folder = report.folder
    click.echo("\n".join(lines))
    click.echo(f"Report: {folder}")
    failed = [name for name, m in results["metrics"].items() if m["error"]]
    if failed:
        raise RadmetricsError(f"{len(failed)} of {len(results['metrics'])} metrics failed ({', '.join(failed)}); "
                              f"{folder} has the others and summary.md says why.")
    if problems:
        raise RadmetricsError("; ".join(problems) + f"; {folder}/per_pair.csv names the pairs.")


def _preference_problems(metrics: dict[str, dict], n_pairs: int, cached: bool) -> list[str]:
    """Why an accuracy is not the metric's own verdict: it scored no pair, or sides were unscored for want of a
    judge answer (a failed call, an answer cut at the token limit) and counted as wrong."""
    problems = []
    for name, m in metrics.items():
        if m["error"]:
            continue
        if m["unscored_pairs"] == n_pairs:
            problems.append(f"{name} scored no pair (its accuracy {m['accuracy']:.2f} is every pair counted wrong)")
        problems += _without_verdict(name, m, cached, "side(s)", "counted as wrong pairs")
    return problems


def _without_verdict(name: str, m: dict, cached: bool, unit: str, effect: str) -> list[str]:
    """A metric's rows the judge gave no verdict for (`judge_calls_failed`, `answers_cut`, `past_context` in its entry):
    what a rerun (or a higher --max-new-tokens) would add, said as compare says it."""
    problems = []
    if m.get("judge_calls_failed"):
        rerun = "a rerun asks only them (answers given are cached)" if cached else "rerun (--no-cache kept no answer)"
        problems.append(f"{name}: the judge gave no answer for {m['judge_calls_failed']} {unit} (judge call failed), "
                        f"{effect}; {rerun}")
    if m.get("answers_cut"):
        problems.append(f"{name}: {m['answers_cut']} judge answer(s) reached the token limit, {effect}; rerun with a "
                        "higher --max-new-tokens")
    if m.get("past_context"):
        problems.append(f"{name}: the judge's context was too short for {m['past_context']} {unit}, {effect}; shorten "
                        "the reports, or use a judge with a longer context")
    return problems
