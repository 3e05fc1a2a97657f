"""`radmetrics score`: score a file of report pairs with one metric on a judge."""
from __future__ import annotations

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
@click.option("--retry-unscored", is_flag=True,
              help="Ask again for rows whose (cached) judge answer could not be scored, replacing it in the cache.")
@click.option("--max-failures", type=click.FloatRange(0, 1), default=None, metavar="FRACTION",
              help="Exit 1 when more than this fraction of the judged rows failed because of the judge "
                   "(a run where every row failed always exits 1). Input problems are not counted.")
def score_command(metric, input_path, output_path, judge_flags: JudgeFlags, summary, summary_model,
                  reference_column, candidate_column, engine, actors, progress, retry_unscored,
                  max_failures) -> None:
    """Score every (reference, candidate) pair of INPUT with METRIC; rows that cannot be judged are kept,
    unscored, with their reason. Exit codes: 0 done; 1 the judge failed every row (or over --max-failures);
    2 bad input or usage; 130 / 143 interrupted (every answer received is cached: rerun to resume)."""
    import uuid

    import radmetrics
    from radmetrics.cli.exit_status import JUDGE_FAILED, failure_message
    from radmetrics.errors import optional_import
    from radmetrics.io import check_output_path, check_output_safe, read_pairs, write_results
    from radmetrics.runner import aggregate, build_judge
    from radmetrics.types import Judgment

    # before anything is loaded or asked: never overwrite the input, never write through a link
    check_output_safe(output_path, input_path, judge_flags.options.get("path"))
    run_id = uuid.uuid4().hex  # in every result row and in the summary: a pair is recognisable
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
    judged = result.judgments
    if retry_unscored:
        judged = _retry_unscored(system, the_judge, [pairs.rows[i].get(pairs.reference_column) for i in good],
                                 [pairs.rows[i].get(pairs.candidate_column) for i in good], judged,
                                 judge_flags.config(), progress, good)
    by_row = {i: Judgment.unscored(f"row {i}: {reason}") for i, reason in pairs.bad_rows.items()}
    by_row.update(zip(good, judged))
    ordered = [by_row[i] for i in range(len(pairs.rows))]
    corpus = aggregate(system, ordered, summary=summary, summary_model=summary_model)
    # write: results and summary as one atomic pair with the same run_id
    fp = result.fingerprint
    rows = [{**result_row(r, j, system.score_key, fp), "run_id": run_id} for r, j in zip(pairs.rows, ordered)]
    summary_path = write_results(output_path, rows, {"run_id": run_id, "summary": corpus, "fingerprint": fp,
                                                     "input": str(input_path)})
    print_summary(system, corpus, output_path, str(summary_path), fp.get("judge"))
    failed = failure_message(ordered, max_failures)
    if failed:
        click.echo(f"Error: {failed}. Results were written; rerun to ask the failed rows again.", err=True)
        raise SystemExit(JUDGE_FAILED)


def _retry_unscored(system, judge, refs, cands, judged, config, progress, row_ids):
    """Rows the judge answered but whose answer could not be scored are asked once more, the cached answer
    forgotten first (a cached unreadable answer would otherwise come back on every rerun)."""
    from radmetrics.runner import judge_pairs

    redo = [k for k, j in enumerate(judged)
            if not j.parsed and j.raw and not (j.reason or "").startswith(("row ", "judge call failed"))]
    if not redo or not hasattr(judge, "forget"):
        return judged
    judge.forget([system.build_prompt(refs[k], cands[k]) for k in redo], config)
    again = judge_pairs(system, judge, [refs[k] for k in redo], [cands[k] for k in redo], config,
                        progress=progress, row_ids=[row_ids[k] for k in redo])
    judged = list(judged)
    for k, judgment in zip(redo, again):
        judged[k] = judgment
    return judged


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
