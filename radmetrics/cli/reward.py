"""`radmetrics reward-check`: can this reward teach this policy anything? (see radmetrics/rewards/check.py)"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import click

from radmetrics.cli.input_paths import INPUT_FILE
from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.cli.output_paths import OUTPUT_FILE
from radmetrics.cli.stat_options import FiniteRange
from radmetrics.errors import InputError


def read_rows(path: str) -> list[dict[str, Any]]:
    """JSONL or CSV rows; a line that is not a JSON object is an error naming it (this is a check, not a run)."""
    from radmetrics.io import read_rows_strict

    return read_rows_strict(path)


def _column(rows: list[dict[str, Any]], name: str, path: str, flag: str) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if name not in columns:
        raise InputError(f"{path}: no column '{name}' (set {flag}); columns are: {', '.join(columns) or '(none)'}")


@click.command("reward-check")
@click.option("--metric", "-m", required=True,
              help="Scoring system used as the reward (see `radmetrics list`), or er2score (then --judge is the "
                   "trained ER2Score folder or Hub id).")
@click.option("--input", "-i", "input_path", required=True, type=INPUT_FILE,
              help="JSONL/CSV: a prompt and a reference column (with --policy), or prompt, completion and "
                   "reference columns (with --completions).")
@click.option("--policy", default=None, help="Base policy (model id or folder) to sample completions from.")
@click.option("--completions", "given", is_flag=True,
              help="INPUT already holds sampled completions (one row per completion, grouped by prompt).")
@click.option("--prompt-column", default="prompt", show_default=True)
@click.option("--reference-column", default="reference", show_default=True)
@click.option("--completion-column", default="completion", show_default=True)
# counts and sizes below 1 are usage errors: --samples -1 was a traceback, 0 an empty report, a negative
# --batch-size judged nothing and reported every completion as neither scored nor unscored
@click.option("--samples", default=16, show_default=True, type=click.IntRange(min=1),
              help="Prompts to sample (random, seeded).")
@click.option("--num-generations", "-g", default=8, show_default=True, type=click.IntRange(min=1),
              help="Completions per prompt (GRPO's group size).")
@click.option("--completion-tokens", default=256, show_default=True, type=click.IntRange(min=1),
              help="Longest policy completion (new tokens).")
@click.option("--temperature", default=1.0, show_default=True, type=FiniteRange(min=0, min_open=True))
@click.option("--top-p", default=1.0, show_default=True, type=FiniteRange(0, 1, min_open=True))
# torch.manual_seed's range: 10**23 was its "Overflow when unpacking long long" traceback once the judge was checked
@click.option("--seed", default=0, show_default=True, type=click.IntRange(-(2**63), 2**64 - 1))
@click.option("--batch-size", default=None, type=click.IntRange(min=1),
              help="Completions per reward call (default: all in one call, like one GRPO generation batch).")
@judge_flags()
@click.option("--output", "-o", "output_path", default=None, type=OUTPUT_FILE,
              help="Write the full report (per-group spreads) as JSON here.")
def reward_check_command(metric, input_path, policy, given, prompt_column, reference_column, completion_column,
                         samples, num_generations, completion_tokens, temperature, top_p, seed, batch_size,
                         judge_flags: JudgeFlags, output_path) -> None:
    """Score a sample of the base policy's completions with a reward and report what GRPO would learn from it:
    the spread of rewards within each prompt's group (a group whose rewards are all equal teaches nothing),
    the unscored share and the judge's speed."""
    from radmetrics.errors import RadmetricsError
    from radmetrics.rewards import reward_function
    from radmetrics.rewards.check import check_reward, sample_completions

    if bool(policy) == bool(given):
        raise RadmetricsError("give either --policy (sample completions now) or --completions (INPUT has them)")
    rows = read_rows(input_path)
    if not rows:
        raise InputError(f"{input_path}: no rows")
    for name, flag in ((prompt_column, "--prompt-column"), (reference_column, "--reference-column")):
        _column(rows, name, input_path, flag)
    if output_path and Path(output_path).is_dir():
        raise InputError(f"--output {output_path} is a folder; give the JSON file to write")
    if output_path:  # the report is written at the end: never over the input, the policy's file or the cache
        from radmetrics.io import check_output_safe

        check_output_safe(output_path, input_path, judge_flags.options.get("path"), cache=judge_flags.cache_files())
    flags = judge_flags
    # made before sampling: a misspelt metric or an option the reward does not take is refused now, not after the
    # policy has sampled every completion (the reward loads no model until its first call)
    reward = reward_function(metric, backend=flags.backend, judge=flags.model, judge_options=flags.options,
                             system_options=flags.system_options or None, cache=flags.cache, config=flags.config())
    check_reward_judge(metric, judge_flags)  # seconds now, not after sampling completions and a silent server
    if policy:  # a path that is not there in one line, not the Hub client's repo-id error
        from radmetrics.judge.preflight import check_hub_model

        check_hub_model(policy, what="policy", flag="--policy")
    generation_seconds = None
    if given:
        _column(rows, completion_column, input_path, "--completion-column")
        grouped: dict[str, dict[str, Any]] = {}
        # one group per distinct (prompt, reference), in first-seen order: a report generator's text prompt is often
        # the same for every study (the image differs), and each study's completions are judged against its own
        # reference (grouping by the prompt alone judged them all against the first study's; review 14)
        for row in rows:
            key = json.dumps([row.get(prompt_column), row.get(reference_column)], sort_keys=True)
            group = grouped.setdefault(key, {"prompt": row.get(prompt_column), "reference": row.get(reference_column),
                                             "completions": []})
            group["completions"].append(row.get(completion_column))
        chosen = list(grouped.values())
        chosen = random.Random(seed).sample(chosen, min(samples, len(chosen)))
        completions = [g["completions"] for g in chosen]
    else:
        chosen = [{"prompt": r.get(prompt_column), "reference": r.get(reference_column)} for r in rows]
        chosen = random.Random(seed).sample(chosen, min(samples, len(chosen)))
        click.echo(f"Sampling {num_generations} completions for each of {len(chosen)} prompts from {policy}...",
                   err=True)
        completions, generation_seconds = sample_completions(
            policy, [g["prompt"] for g in chosen], num_generations=num_generations, max_new_tokens=completion_tokens,
            temperature=temperature, top_p=top_p, seed=seed)
    settings = {"metric": metric, "input": input_path, "policy": policy, "num_generations": num_generations,
                "completion_tokens": completion_tokens, "temperature": temperature, "top_p": top_p, "seed": seed,
                "backend": flags.backend, "judge": flags.model}
    report = check_reward(reward, [g["prompt"] for g in chosen], [g["reference"] for g in chosen], completions,
                          batch_size=batch_size, generation_seconds=generation_seconds, settings=settings)
    data = report.to_dict()
    if output_path:  # its folder made if missing: the sampling and judging are not thrown away at the last step
        from radmetrics.io import AtomicFile, owner_only

        # all at once (a temp file renamed over it): a kill or a failed write leaves no half check.json
        with owner_only(output_path), AtomicFile(output_path) as fh:  # completions and judgments: yours only
            json.dump(data, fh, indent=2, default=str)
    print_report(data, output_path)


def check_reward_judge(metric: str, flags: JudgeFlags) -> None:
    """The reward's judge is reachable (or a missing one is named) before any completion is sampled."""
    import radmetrics
    from radmetrics.runner import preflight_judge

    if metric in radmetrics.list_scoring_systems():
        preflight_judge(flags.backend, flags.model, flags.options, radmetrics.get_scoring_system(metric))
    elif metric == "er2score" and flags.model:
        from radmetrics.judge.preflight import check_hub_model

        check_hub_model(flags.model, what="ER²Score model")


def print_report(data: dict[str, Any], output_path: str | None) -> None:
    from radmetrics.cli.tables import table_console
    from rich.table import Table

    def fmt(value: Any) -> str:
        return "n/a" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)

    console = table_console(stderr=True)
    groups = Table(title=f"reward {data['reward']}: spread within each prompt's group")
    for name in ("prompt", "scored", "unscored", "mean", "std", "min", "max", "learns?"):
        groups.add_column(name, justify="left" if name == "prompt" else "right")
    for g in data["per_group"]:
        groups.add_row(g["prompt"][:40], str(g["scored"]), str(g["unscored"]), fmt(g["mean"]), fmt(g["std"]),
                       fmt(g["min"]), fmt(g["max"]), "no: flat" if g["flat"] else "yes")
    console.print(groups)
    summary = Table(title="summary")
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    summary.add_row("completions", str(data["completions"]))
    summary.add_row("groups with no spread (teach GRPO nothing)",
                    f"{data['flat_groups']}/{len(data['per_group'])} ({fmt(data['flat_group_share'])})")
    summary.add_row("mean within-group std", fmt(data["mean_group_std"]))
    summary.add_row("unscored share", fmt(data["unscored_share"]))
    for reason, count in list(data["unscored_reasons"].items())[:5]:
        summary.add_row(f"  unscored: {reason[:70]}", str(count))
    summary.add_row("reward speed (completions/s)", fmt(data["reward_samples_per_s"]))
    if data["generation_seconds"] is not None:
        summary.add_row("policy sampling (s)", fmt(data["generation_seconds"]))
    console.print(summary)
    groups = len(data["per_group"])
    if data["unscored_groups"]:  # the judge's doing, not the policy's sampling: the reasons say what to fix
        console.print(f"{data['unscored_groups']} of {groups} groups have fewer than two scored completions: fix what "
                      "left them unscored (reasons above) before reading their spread.", style="bold")
    equal = data["flat_groups"] - data["unscored_groups"]
    if groups and equal / groups > 0.5:
        console.print("Most groups have no reward spread: GRPO would get little signal. Try a higher "
                      "temperature, larger groups, or a finer-grained metric.", style="bold")
    if output_path:
        console.print(f"Full report: {output_path}")
