"""`radmetrics score`: score a file of report pairs with one metric on a judge."""
from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any

import click

from radmetrics.cli.exit_status import interrupt_scope, note_interrupt
from radmetrics.cli.input_paths import INPUT_FILE
from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.cli.output_paths import OUTPUT_FILE
from radmetrics.cli.stat_options import FiniteRange

if TYPE_CHECKING:
    from radmetrics.io import Record


#: keys a result row sets itself besides the score and the judgment's fields
_RESULT_KEYS = frozenset({"judge_output", "fingerprint", "run_id", "details"})


@functools.lru_cache(maxsize=8)
def result_keys(score_key: str) -> frozenset[str]:
    """Every key a result row may set itself: the score, the fields of every kind of judgment (GREEN's counts,
    FineRadScore's corrections, a plugin's), the output and the fingerprint; the same for every row of a run."""
    import dataclasses

    from radmetrics.types import Judgment

    kinds, fields = [Judgment], set()
    while kinds:
        kind = kinds.pop()
        fields |= {f.name for f in dataclasses.fields(kind)}
        kinds += kind.__subclasses__()
    return frozenset(fields | _RESULT_KEYS | {score_key})


def _taken_in(row: dict[str, Any], taken: frozenset[str]) -> frozenset[str]:
    """The names a result row takes from this input row: a user's own `_line` / `_raw` too, unless they are the
    reader's marks on a record it could not read (io._stand_in)."""
    return taken if "_line" in row and "_raw" in row else taken | {"_line", "_raw"}


def input_columns(row: dict[str, Any], taken: frozenset[str]) -> dict[str, Any]:
    """The input row as read, a column whose name a result field takes kept as input_<name> (review 12: a `green`,
    `reason` or `details` column, e.g. when scoring an earlier results file again, was overwritten without a
    word). A user's own `_line` / `_raw` columns likewise: those names mark a record that could not be read."""
    taken = _taken_in(row, taken)
    out = {}
    for key, value in row.items():
        name = key
        while name in taken or (name != key and name in row):
            name = f"input_{name}"
        out[name] = value
    return out


def result_row(row: dict[str, Any], judgment, score_key: str, fingerprint: dict[str, Any]) -> dict[str, Any]:
    data = judgment.to_dict()
    out = input_columns(row, result_keys(score_key))
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
@click.option("--input", "-i", "input_path", required=True, type=INPUT_FILE,
              help="JSONL or CSV with reference and candidate columns (aliases accepted).")
@click.option("--output", "-o", "output_path", required=True, type=OUTPUT_FILE,
              help="Results file: .jsonl (one JSON object per row), .csv or .parquet.")
@judge_flags()
@click.option("--summary/--no-summary", default=False, show_default=True,
              help="Add the GREEN summary (clustered error explanations; loads an embedding model).")
@click.option("--summary-model", default=None, help="sentence-transformers model for --summary (default "
              "sentence-transformers/paraphrase-mpnet-base-v2).")
@click.option("--reference-column", default=None, help="Column holding the reference report.")
@click.option("--candidate-column", default=None, help="Column holding the candidate report.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: shard the judging across Ray actors (one judge per actor / GPU), cache shared.")
@click.option("--actors", default=2, show_default=True, type=click.IntRange(min=1), help="Ray actors (with --engine ray).")
@click.option("--chunk-rows", default=4096, show_default=True, type=click.IntRange(min=1),
              help="Rows read, judged and written at a time (memory stays flat whatever the input's length).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar while judging.")
@click.option("--retry-unscored", is_flag=True,
              help="Ask again for rows whose (cached) judge answer could not be scored, replacing it in the cache.")
@click.option("--max-failures", type=FiniteRange(0, 1), default=None, metavar="FRACTION",
              help="Exit 1 when more than this fraction of the judged rows failed because of the judge "
                   "(a run where every row failed always exits 1). Input problems are not counted.")
@interrupt_scope
def score_command(metric, input_path, output_path, judge_flags: JudgeFlags, summary, summary_model,
                  reference_column, candidate_column, engine, actors, chunk_rows, progress, retry_unscored,
                  max_failures) -> None:
    """Score every (reference, candidate) pair of INPUT with METRIC; rows that cannot be judged are kept,
    unscored, with their reason. Read, judged and written in chunks: memory stays flat (radmetrics.streaming).
    Exit codes: 0 done; 1 the judge failed every row (or over --max-failures); 2 bad input or usage;
    130 / 143 interrupted (every answer received is cached: rerun to resume)."""
    import hashlib

    import radmetrics
    from radmetrics.cli.exit_status import JUDGE_FAILED, FailureTally
    from radmetrics.errors import optional_import
    from radmetrics.io import (AtomicFile, check_output_path, check_output_safe, check_pair_columns, check_text_file,
                               clean_stale_tmp, columns_read_line, summary_path)
    from radmetrics.runner import build_judge, fingerprint
    from radmetrics.streaming import OrderedPartWriter, RunningSummary, open_pairs

    check_pair_columns(reference_column, candidate_column)  # a report judged against itself: before any work
    # before anything is loaded or asked: never overwrite the input, never write through a link
    check_output_safe(output_path, input_path, judge_flags.options.get("path"), cache=judge_flags.cache_files())
    system = radmetrics.get_scoring_system(metric, **judge_flags.system_options)
    check_text_file(input_path)
    clean_stale_tmp(output_path)
    check_output_path(output_path)  # before any judging: a wrong extension must not cost a run
    if summary:  # checked before any judging, not after it
        from radmetrics.errors import require_installed
        from radmetrics.green.summary import DEFAULT_SUMMARY_MODEL
        from radmetrics.judge.preflight import check_hub_model

        summary_modules = ("sklearn", "sentence_transformers", "scipy")
        for module in summary_modules:
            require_installed(module, "summary", "by --summary")
        # the embedding model too (for systems that summarize): offline and uncached, say so now, not after
        # every row was judged, and before importing sentence-transformers (about 10 s with torch; review 24, L8)
        if "summary" in getattr(system, "aggregate_options", ()):
            check_hub_model(summary_model or DEFAULT_SUMMARY_MODEL, what="summary model", flag="--summary-model")
        for module in summary_modules:  # installed but broken (a torch that does not load): said now too
            optional_import(module, "summary", "by --summary")
    if engine == "ray":
        optional_import("ray", "ray", "by --engine ray")
    the_judge = build_judge(judge_flags.backend, judge_flags.model, judge_flags.options, judge_flags.cache, system,
                            engine=engine, actors=actors)
    if engine == "ray":
        # the actors answer and cache in their own processes: this one's counts would read "0 answered" (review 19).
        # "cached" only when the actors have a cache: not with --no-cache, RADMETRICS_CACHE=off or replay (review 20)
        note_interrupt("interrupted: the Ray actors keep each answer in the response cache as it comes; rerun to "
                       "resume" if the_judge.cache else
                       "interrupted: the Ray actors have no response cache (--no-cache, RADMETRICS_CACHE=off, or a "
                       "backend not cached by default such as replay), so the answers given so far are not kept, "
                       "only the rows already written to the output's part file; rerun to resume (the other rows "
                       "are asked again)")
    config = judge_flags.config()
    pairs = open_pairs(input_path, reference_column, candidate_column)
    click.echo(columns_read_line(input_path, pairs.reference_column, pairs.candidate_column, pairs.also_found),
               err=True)
    fp = fingerprint(system, the_judge, config)
    stat = os.stat(input_path)
    identity = {"input": os.path.abspath(input_path), "size": stat.st_size, "mtime": stat.st_mtime_ns,
                "fingerprint": fp, "columns": [pairs.reference_column, pairs.candidate_column]}
    writer = OrderedPartWriter(output_path, identity)
    # The run id names this input + settings: in every result row and in the summary, so a summary is matched to
    # its results; a resumed run continues under the same id (its rows equal an uninterrupted run's).
    run_id = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]
    if os.path.exists(output_path) and not writer.done_rows:  # review 12: replaced without a word before
        click.echo(f"Note: {output_path} holds an earlier run's results; this run replaces them when it finishes.",
                   err=True)
    running = RunningSummary(system, keep_all=summary)
    tally = FailureTally(replay=judge_flags.backend == "replay", cached=the_judge.cache is not None)
    try:
        total = score_stream(system, the_judge, pairs, writer, running, config, fp, chunk_rows, progress,
                             run_id=run_id, retry_unscored=retry_unscored, tally=tally)
    except BaseException:
        writer.close()  # the part file keeps every finished chunk; the next run continues after them
        raise
    summary_path(output_path).unlink(missing_ok=True)  # never new results beside the previous run's summary
    writer.finish()
    if pairs.not_utf8_rows:  # their text would be altered: unscored, and the fix said once for the whole file
        name = os.path.basename(input_path)
        stem, suffix = os.path.splitext(name)
        rows = "1 row was" if pairs.not_utf8_rows == 1 else f"{pairs.not_utf8_rows} rows were"
        click.echo(f"Warning: {rows} not UTF-8 and left unscored (first: line {pairs.first_not_utf8_line}); "
                   f"re-encode the file, e.g. iconv -f latin1 -t utf-8 {name} > {stem}.utf8{suffix}", err=True)
    corpus = running.result(summary=summary, summary_model=summary_model)
    # rows written, and of them how many have a score: "Scored 400 rows" once preceded "no row was scored"
    scored = corpus.get("num_scored", total)
    click.echo(f"Wrote {total} row{'s' if total != 1 else ''} from {input_path}: {scored} scored, "
               f"{total - scored} unscored", err=True)
    try:
        with AtomicFile(summary_path(output_path)) as fh:
            json.dump({"run_id": run_id, "summary": corpus, "fingerprint": fp, "input": str(input_path)}, fh,
                      indent=2, default=str)
    except OSError as e:  # the results are written; a rerun answers every row from the cache and writes both
        from radmetrics.errors import RadmetricsError

        raise RadmetricsError(f"cannot write {summary_path(output_path)} ({e.strerror or e}); the results are in "
                              f"{output_path}: free space and rerun the same command for the summary") from None
    print_summary(system, corpus, output_path, str(summary_path(output_path)), fp.get("judge"))
    failed = tally.message(max_failures)
    if tally.input_warning():
        click.echo(f"Warning: {tally.input_warning()}.", err=True)
    if not failed and tally.warning():
        click.echo(f"Warning: {tally.warning()}.", err=True)
    if failed:
        click.echo(f"Error: {failed}. Results were written; {tally.advice()}.", err=True)
        raise SystemExit(JUDGE_FAILED)


def score_stream(system, judge, pairs, writer, running, config, fp: dict[str, Any], chunk_rows: int,
                 progress: bool, run_id: str | None = None, retry_unscored: bool = False, tally=None) -> int:
    """Judge the input chunk by chunk, appending each chunk's result rows in input order; rows a previous run
    already wrote (same input and settings) are read back into the summary, not judged again. Returns the
    number of rows."""
    from radmetrics.runner import judge_pairs, read_answer
    from radmetrics.types import Judgment, answer_was_cut

    chunk: list[Record] = []
    renamed: set[str] = set()

    def flush() -> None:
        taken = result_keys(system.score_key)
        clashes = {k for r in chunk for k in r.row if k in _taken_in(r.row, taken)} - renamed
        if clashes:
            renamed.update(clashes)
            click.echo(f"Note: input column(s) {', '.join(sorted(clashes))} kept as "
                       f"{', '.join('input_' + c for c in sorted(clashes))}: radmetrics writes its own.", err=True)
        # reasons name a row by its line in the input file (what an editor shows), never by a 0-based index;
        # "input" tells it from a line of a report (FineRadScore's "line 0: ...")
        good = [r for r in chunk if r.problem is None]
        refs = [r.row.get(pairs.reference_column) for r in good]
        cands = [r.row.get(pairs.candidate_column) for r in good]
        labels = [f"input line {r.line}" for r in good]
        judged = judge_pairs(system, judge, refs, cands, config, progress=progress, row_labels=labels) if good else []
        # the name for what the chunks ask again, the same when a run killed before writing one is continued (the part
        # file's token, which a new run does not share); one for every chunk, not the chunk's first line: a rerun in
        # other chunks (--chunk-rows) found no record past the first and asked their rows a third time
        name = writer.name("chunks") if retry_unscored and judged else None
        if name is not None:
            judged = _retry_unscored(system, judge, refs, cands, judged, config, progress, labels, name)
        by_line = dict(zip((r.line for r in good), judged))
        out = []
        for record in chunk:
            judgment = by_line.get(record.line) or Judgment.unscored(f"input line {record.line}: {record.problem}")
            running.add(judgment)
            if tally is not None:
                tally.add(judgment)
            out.append({**result_row(record.row, judgment, system.score_key, fp),
                        **({"run_id": run_id} if run_id else {})})
        writer.write(out)
        chunk.clear()

    if writer.discarded:
        click.echo(f"{writer.part.name} was left by an interrupted run with another input or settings: starting "
                   "over.", err=True)
    changed, failed, unreadable = (_check_resumed(system, pairs, writer, retry_unscored) if writer.done_rows
                                   else (None, [], []))
    if changed is not None:  # same size and time stamp, other rows (an edit with its time kept): not resumable
        click.echo(f"{changed}: starting over.", err=True)
        writer.restart()
        failed, unreadable = [], []
    resumed = writer.done_rows
    # --retry-unscored: the written rows too, not only this run's; asked anew under a name of this part file's run, so
    # that a run killed before it rewrote them and continued reads what it had asked again (it dropped their answers
    # with `forget` and asked the rows it had asked a third time)
    written_again = writer.name("written") if unreadable and hasattr(judge, "batch_done") else None
    if unreadable:
        prompts = [system.build_prompt(r.row.get(pairs.reference_column), r.row.get(pairs.candidate_column))
                   for _, r in unreadable]
        if written_again is not None:
            judge.ask_anew(prompts, config, batch=written_again)
        elif hasattr(judge, "forget"):
            judge.forget(prompts, config)
    if failed or unreadable:
        _reask_failed_calls(system, judge, pairs, writer, sorted(failed + unreadable, key=lambda kr: kr[0]), config,
                            fp, chunk_rows, progress, run_id, retried={k for k, _ in unreadable})
    if written_again is not None:
        judge.batch_done(written_again)  # the rows are rewritten
    for record, done in _with_resumed(pairs.rows(), writer):
        if done is not None:  # written by an earlier run: its judgment read back from the row
            raw = done.get("judge_output") or ""
            ref, cand = record.row.get(pairs.reference_column), record.row.get(pairs.candidate_column)
            if raw and not answer_was_cut(done.get("reason")):
                judgment = read_answer(system, raw, ref, cand)
            else:  # no answer, or one cut at the token limit: unscored as written, never read as complete
                judgment = Judgment.unscored(done.get("reason") or "", raw=raw)
            if (done.get("details") or {}).get("empty_candidate"):  # set by judge_pairs, counted in the summary
                judgment.details["empty_candidate"] = True
            running.add(judgment)
            if tally is not None:  # the warning and --max-failures count the whole input, not only this run's part
                tally.add(judgment)
            continue
        chunk.append(record)
        if len(chunk) >= chunk_rows:
            flush()
    if chunk:
        flush()
    if retry_unscored and hasattr(judge, "batch_done"):
        # every row written: what the chunks recorded as asked again goes. Not chunk by chunk: a pair given again in a
        # later chunk reads there that its answer is the second one, as in one chunk (dropped with the first chunk's
        # rows, it was asked a third time, so the rows depended on --chunk-rows, and a rerun in smaller chunks asked
        # it a third time after a kill); and those of a run killed after writing its last chunk go with its rerun
        judge.batch_done(writer.name("chunks"))
    if resumed:
        again = f"; the judge calls of {len(failed)} of them had failed and were made again" if failed else ""
        again += (f"; {len(unreadable)} of them had unreadable answers and were asked again (--retry-unscored)"
                  if unreadable else "")
        click.echo(f"Continued an interrupted run: {resumed} rows were already written{again}.", err=True)
    return writer.done_rows


def _check_resumed(system, pairs, writer, retry_unscored: bool = False
                   ) -> tuple[str | None, list[tuple[int, Record]], list[tuple[int, Record]]]:
    """One pass over the input and the part file a continued run found: why the part file is not this input's
    (a written row whose input columns differ from its input line's, or an input with fewer rows than were
    written; None when it is), and the rows whose judge call failed (no answer at all: the server was down, a
    timeout), by their position in the part file, and with ``retry_unscored`` those whose answer could not be read
    (as `_retry_unscored` picks them). A run resumes when the input's size and time stamp are unchanged; an edit
    that kept both (`cp -p`, `touch -r`) would otherwise pair old results with new text."""

    from radmetrics.io import strict_json_ready
    from radmetrics.runner import judge_call_failed

    # every key of a result row that the row does not set itself is its input row's, copied as read
    taken = result_keys(system.score_key)
    failed: list[tuple[int, Record]] = []
    unreadable: list[tuple[int, Record]] = []
    matched = 0
    for record, done in _with_resumed(pairs.rows(), writer):
        if done is None:
            break
        if any(json.dumps(done.get(k), sort_keys=True) != json.dumps(strict_json_ready(v), sort_keys=True)
               for k, v in input_columns(record.row, taken).items()):  # as written: NaN as null (`result_line`)
            return f"Input line {record.line} differs from the row an interrupted run wrote for it", [], []
        if not done.get("judge_output") and judge_call_failed(done.get("reason")):
            failed.append((matched, record))
        elif (retry_unscored and not (done.get("details") or {}).get(ASKED_AGAIN)
              and _worth_asking_again(done.get("parsed"), done.get("judge_output"), done.get("reason"))):
            # (a row the interrupted run already asked again, marked so, is not asked a third time)
            unreadable.append((matched, record))
        matched += 1
    if matched < writer.done_rows:
        return f"The input has {matched} rows, fewer than the {writer.done_rows} an interrupted run wrote", [], []
    return None, failed, unreadable


def _reask_failed_calls(system, judge, pairs, writer, failed: list[tuple[int, Record]], config, fp: dict[str, Any],
                        chunk_rows: int, progress: bool, run_id: str | None, retried: set[int] = frozenset()) -> None:
    """Before a run continues, the part file's rows whose judge call failed (`_check_resumed`) are asked again
    and their rows replaced: nothing is cached for them, so this is what an uninterrupted run against a working
    judge would have scored. Answered rows stay as written. The new rows are held until the part file is
    rewritten once. ``retried``: the positions of rows asked again for --retry-unscored (marked as such)."""
    from radmetrics.runner import judge_pairs

    replaced: dict[int, dict[str, Any]] = {}
    for start in range(0, len(failed), chunk_rows):
        part = failed[start:start + chunk_rows]
        judged = judge_pairs(system, judge, [r.row.get(pairs.reference_column) for _, r in part],
                             [r.row.get(pairs.candidate_column) for _, r in part], config, progress=progress,
                             row_labels=[f"input line {r.line}" for _, r in part])
        for (k, record), judgment in zip(part, judged):
            if k in retried:
                judgment.details[ASKED_AGAIN] = True
            replaced[k] = {**result_row(record.row, judgment, system.score_key, fp),
                           **({"run_id": run_id} if run_id else {})}
    writer.replace_rows(replaced)


#: ``details`` key of a row --retry-unscored asked again (its answer is the second one, readable or not)
ASKED_AGAIN = "asked_again"


def _worth_asking_again(parsed: bool, raw: str | None, reason: str | None) -> bool:
    """What --retry-unscored asks again (a row of this run, or one a continued run finds written): the judge answered
    and the answer could not be read. Not a bad input row, not a failed call (asked again anyway), not an answer cut
    at the token limit (not cached, and at the same max_new_tokens cut again)."""
    from radmetrics.runner import judge_call_failed
    from radmetrics.scoring import is_input_problem
    from radmetrics.types import answer_was_cut

    return (not parsed and bool(raw) and not is_input_problem(reason) and not judge_call_failed(reason)
            and not answer_was_cut(reason))


def _retry_unscored(system, judge, refs, cands, judged, config, progress, row_labels, name: str | None = None):
    """Rows the judge answered but whose answer could not be scored are asked once more, the cached answer not read
    (it would otherwise come back on every rerun) but kept until the new one replaces it: a run killed meanwhile
    leaves its rerun the same asks, not those and every row again as uncached (review 40a). ``name``: the run's chunks',
    under which the response cache records which answers they ask again until the run's rows are all written; a run
    killed before then and continued reads the answers given since (the rows marked asked again, readable or not) and
    asks only the rest (it asked them all a third time, and marked only those still unreadable), and so does a later
    chunk that gives a pair again."""
    from radmetrics.runner import judge_pairs

    ask_anew = getattr(judge, "ask_anew", None) or getattr(judge, "forget", None)  # a plugin's judge: forget
    if ask_anew is None:
        return judged
    judged = list(judged)
    named = ({"batch": name} if name is not None and all(hasattr(judge, m) for m in ("answered_anew", "batch_done"))
             else {})
    if named:
        answered = [k for k, j in enumerate(judged) if j.raw]
        for k, again in zip(answered, judge.answered_anew([system.build_prompt(refs[k], cands[k]) for k in answered],
                                                          config, name)):
            if again:  # asked again by the killed run, or by an earlier chunk: its answer is the second one
                judged[k].details[ASKED_AGAIN] = True
    redo = [k for k, j in enumerate(judged)
            if not j.details.get(ASKED_AGAIN) and _worth_asking_again(j.parsed, j.raw, j.reason)]
    if not redo:
        return judged
    ask_anew([system.build_prompt(refs[k], cands[k]) for k in redo], config, **named)
    again = judge_pairs(system, judge, [refs[k] for k in redo], [cands[k] for k in redo], config,
                        progress=progress, row_labels=[row_labels[k] for k in redo])
    for k, judgment in zip(redo, again):
        judgment.details[ASKED_AGAIN] = True  # written with the row: a continued run does not ask it a third time
        judged[k] = judgment
    return judged


def _with_resumed(records, writer):
    """Input records paired with the row an earlier run wrote for them (None past the resumed ones)."""
    written = writer.resumed_rows()
    for record in records:
        yield record, next(written, None)


def print_summary(system, corpus: dict[str, Any], output_path: str, summary_path: str,
                  judge: dict[str, Any] | None = None) -> None:
    from radmetrics.cli.tables import table_console
    from radmetrics.meta.html_report import shorten
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
        table.add_row(f"unscored: {shorten(reason, 70)}", str(count))
    console = table_console(stderr=True)
    console.print(table)
    console.print(f"Per-row results: {output_path}\nCorpus summary: {summary_path}")
