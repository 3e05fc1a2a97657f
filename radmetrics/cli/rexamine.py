"""`radmetrics rexamine`: the ReXamine-Global robustness run (per-site style sensitivity and expert agreement)."""
from __future__ import annotations

import click

from radmetrics.cli.input_paths import INPUT_FILE
from radmetrics.cli.output_paths import OUTPUT_FOLDER, OVERWRITE_REPORT
from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.cli.stat_options import ALPHA, RESAMPLES, SEED


@click.command("rexamine")
@click.option("--input", "-i", "input_path", required=True, type=INPUT_FILE,
              help="JSONL/CSV: id, site, reference[, reference_standardized][, candidate][, expert_errors].")
@click.option("--metric", "-m", "metrics", multiple=True, required=True,
              help="radmetrics metric, named baseline or evaluate module; repeatable.")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER, help="Report folder.")
@OVERWRITE_REPORT
@click.option("--expert-column", default="expert_errors", show_default=True,
              help="Expert error count per candidate (higher = worse), for Table 3/4 and Fig. 3.")
@judge_flags(shared_answers=True)
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="Family-wise α (Bonferroni).")
@click.option("--resamples", default=1000, show_default=True, type=RESAMPLES, help="Bootstrap resamples for CIs.")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the bootstrap.")
def rexamine_command(input_path, metrics, output, overwrite, expert_column, judge_flags: JudgeFlags, alpha, resamples,
                     seed) -> None:
    """Score every candidate against its original and its standardized reference with each METRIC, per site:
    paired t-tests (Bonferroni), means ± std, Spearman with experts, largest disagreements. Missing standardized
    references and candidates are written through the judge with ReXamine-Global's App. A prompts."""
    from radmetrics.meta.rexamine_run import run_rexamine

    # run_rexamine checks the report folder (with --overwrite) and the extras first, before any work
    folder = run_rexamine(input_path, list(metrics), output, overwrite=overwrite, expert_column=expert_column,
                          backend=judge_flags.backend, judge=judge_flags.model, judge_options=judge_flags.options,
                          cache=judge_flags.cache, max_new_tokens=judge_flags.max_new_tokens,
                          system_options=judge_flags.system_options, alpha=alpha, resamples=resamples, seed=seed,
                          echo=lambda m: click.echo(m, err=True))
    click.echo((folder / "summary.md").read_text())
    click.echo(f"Report: {folder}")
    import json

    from radmetrics.errors import RadmetricsError

    results = json.loads((folder / "results.json").read_text())
    problems = [f"{len(results['failed_metrics'])} metric(s) failed ({', '.join(results['failed_metrics'])})"] \
        if results["failed_metrics"] else []
    if results["warnings"]:
        problems.append("rows the judge could not write are left out (the warnings above)")
    if problems:  # exit 2 as meta-eval and compare do when something could not be computed
        raise RadmetricsError(f"{'; '.join(problems)}. {folder} has the rest; summary.md says why.")
