"""`radmetrics score`: score a file of report pairs with one metric on a judge."""
from __future__ import annotations

import json
from typing import Any

import click

from radmetrics.cli.judge_flags import JudgeFlags, judge_flags


def result_row(row: dict[str, Any], judgment, score_key: str, fingerprint: dict[str, Any]) -> dict[str, Any]:
    data = judgment.to_dict()
    out = dict(row)
    out[score_key] = data.pop("score")
    out["parsed"] = data.pop("parsed")
    out["reason"] = data.pop("reason")
    raw = data.pop("raw")
    details = data.pop("details")
    out.update(data)  # GREEN: significant, insignificant, matched_findings, explanation
    out["details"] = details
    out["judge_output"] = raw
    out["fingerprint"] = fingerprint
    return out


@click.command("score")
@click.option("--metric", "-m", required=True, help="Scoring system, e.g. green (see `radmetrics list`).")
@click.option("--input", "-i", "input_path", required=True, type=click.Path(dir_okay=False),
              help="JSONL or CSV with reference and candidate columns (aliases accepted).")
@click.option("--output", "-o", "output_path", required=True, type=click.Path(dir_okay=False),
              help="Results file (.jsonl, or .csv).")
@judge_flags()
@click.option("--summary/--no-summary", default=False, show_default=True,
              help="Add the GREEN summary (clustered error explanations; loads an embedding model).")
@click.option("--summary-model", default=None, help="sentence-transformers model for --summary.")
@click.option("--reference-column", default=None, help="Column holding the reference report.")
@click.option("--candidate-column", default=None, help="Column holding the candidate report.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: shard the judging across Ray Data actors (one judge per actor / GPU), cache shared.")
@click.option("--actors", default=2, show_default=True, type=int, help="Ray actors (with --engine ray).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar while judging.")
def score_command(metric, input_path, output_path, judge_flags: JudgeFlags, summary, summary_model,
                  reference_column, candidate_column, engine, actors, progress) -> None:
    """Score every (reference, candidate) pair of INPUT with METRIC; rows that cannot be judged are kept,
    unscored, with their reason."""
    import radmetrics
    from radmetrics.errors import optional_import
    from radmetrics.io import check_output_path, read_pairs, write_rows
    from radmetrics.runner import aggregate, build_judge
    from radmetrics.types import Judgment

    system = radmetrics.get_scoring_system(metric, **judge_flags.system_options)
    check_output_path(output_path)  # before any judging: a wrong extension must not cost a run
    if summary:  # checked before any judging, not after it
        for module in ("sklearn", "sentence_transformers", "scipy"):
            optional_import(module, "summary", "by --summary")
    if engine == "ray":
        optional_import("ray", "ray", "by --engine ray")
    the_judge = build_judge(judge_flags.backend, judge_flags.model, judge_flags.options, judge_flags.cache, system,
                            engine=engine, actors=actors)
    # read
    pairs = read_pairs(input_path, reference_column, candidate_column)
    click.echo(f"Read {len(pairs.rows)} rows from {input_path}: reference = '{pairs.reference_column}', "
               f"candidate = '{pairs.candidate_column}'", err=True)
    if pairs.decoding_errors:
        click.echo(f"Warning: {pairs.decoding_errors} bytes were not UTF-8 and were replaced.", err=True)
    good = [i for i in range(len(pairs.rows)) if i not in pairs.bad_rows]
    # score (rows that could not be read stay, unscored, with the reader's reason)
    result = radmetrics.score(system, [pairs.rows[i].get(pairs.reference_column) for i in good],
                              [pairs.rows[i].get(pairs.candidate_column) for i in good], judge=the_judge,
                              config=judge_flags.config(), progress=progress, row_ids=good)
    by_row = {i: Judgment.unscored(f"row {i}: {reason}") for i, reason in pairs.bad_rows.items()}
    by_row.update(zip(good, result.judgments))
    ordered = [by_row[i] for i in range(len(pairs.rows))]
    corpus = aggregate(system, ordered, summary=summary, summary_model=summary_model)
    # write
    fp = result.fingerprint
    write_rows(output_path, [result_row(r, j, system.score_key, fp) for r, j in zip(pairs.rows, ordered)])
    summary_path = output_path + ".summary.json"
    with open(summary_path, "w", encoding="utf-8") as fh:
        json.dump({"summary": corpus, "fingerprint": fp, "input": str(input_path)}, fh, indent=2, default=str)
    print_summary(system, corpus, output_path, summary_path, fp.get("judge"))


def print_summary(system, corpus: dict[str, Any], output_path: str, summary_path: str,
                  judge: dict[str, Any] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    key = system.score_key
    table = Table(title=f"{system.name} — {output_path}")
    table.add_column("measure")
    table.add_column("value", justify="right")

    def fmt(value: Any) -> str:
        return "n/a" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)

    if judge:
        who = judge.get("model") or judge.get("path") or "?"
        revision = f"@{judge['revision']}" if judge.get("revision") else ""
        table.add_row("judge", f"{judge.get('backend', '?')}: {who}{revision}")
    table.add_row(key, fmt(corpus.get(key)))
    table.add_row(f"{key}_std", fmt(corpus.get(f"{key}_std")))
    table.add_row("scored", fmt(corpus.get("num_scored")))
    table.add_row("unscored", fmt(corpus.get("num_unscored")))
    for name, share in (corpus.get("error_free_share") or {}).items():
        table.add_row(f"no significant error: {name}", fmt(share))
    for reason, count in sorted((corpus.get("unscored_reasons") or {}).items(), key=lambda kv: -kv[1])[:5]:
        table.add_row(f"unscored: {reason[:70]}", str(count))
    console = Console(stderr=True)
    console.print(table)
    console.print(f"Per-row results: {output_path}\nCorpus summary: {summary_path}")
