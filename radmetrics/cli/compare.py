"""`radmetrics compare`: several systems' candidates against the same references, with significance."""
from __future__ import annotations

import os

import click

from radmetrics.cli.input_paths import INPUT_FILE, STDIN_REFUSED
from radmetrics.cli.output_paths import OUTPUT_FOLDER, OVERWRITE_REPORT, check_report_folder
from radmetrics.cli.judge_flags import JudgeFlags, judge_flags
from radmetrics.cli.stat_options import ALPHA, CONFIDENCE, RESAMPLES, SEED
from radmetrics.errors import InputError


def _systems(values: tuple[str, ...]) -> dict[str, str]:
    systems: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or (os.path.isfile(value) and not os.path.isfile(path)):  # runs/lr=0.1.jsonl is a file
            name, path = os.path.basename(value).rsplit(".", 1)[0], value
        if path == "-":
            raise InputError(f"--system {value}: {STDIN_REFUSED}")
        if not name.strip():  # review 29a: "=a.jsonl" made a system with no name, a blank cell in every table
            raise InputError(f"--system {value}: the name before '=' is empty; give NAME=FILE")
        if name in systems:
            raise InputError(f"two systems are named '{name}'; name them with --system NAME=FILE")
        systems[name] = path
    return systems


@click.command("compare")
@click.option("--system", "-s", "system_files", multiple=True, required=True, metavar="NAME=FILE",
              help="A system's candidates (JSONL/CSV with id and candidate columns); repeat for each system. "
                   "Without NAME= the system is named after the file (sysA.jsonl: sysA).")
@click.option("--references", "-r", default=None, type=INPUT_FILE,
              help="File with id and reference columns (default: the first system's file).")
@click.option("--metric", "-m", "metrics", multiple=True, required=True,
              help="radmetrics metric, named baseline (bleu-4, rouge-l, ...) or evaluate module (name:key:opt=v).")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER,
              help="Folder for results.json, per_row.csv, forest.png, report.html.")
@OVERWRITE_REPORT
@click.option("--id-column", default="id", show_default=True, help="Column that matches rows across files.")
@click.option("--reference-column", default=None)
@click.option("--candidate-column", default=None)
@click.option("--on-mismatch", type=click.Choice(["error", "intersect"]), default="error", show_default=True,
              help="When the files hold different ids: stop, or compare on the ids they share.")
@judge_flags(shared_answers=True)
@click.option("--resamples", default=1000, show_default=True, type=RESAMPLES,
              help="Bootstrap resamples and randomization trials.")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA,
              help="Significance level of the randomization test, after Holm's correction across the pairs.")
@click.option("--confidence", default=0.95, show_default=True, type=CONFIDENCE,
              help="Level of the bootstrap intervals. Each interval stands alone (not corrected across pairs): "
                   "whether a pair differs is the test's call at --alpha.")
def compare_command(system_files, references, metrics, output, overwrite, id_column, reference_column,
                    candidate_column, on_mismatch, judge_flags: JudgeFlags, resamples, seed, alpha,
                    confidence) -> None:
    """Is system B better than system A, and significantly? Scores every system with every METRIC on the same
    references; prints the tables and writes results.json, per_row.csv, forest.png and report.html to
    OUTPUT.

    A metric that gives a system no result (it failed, or scored none of its rows) is reported with its reason and
    the other results are kept; the command then exits with code 2, as meta-eval does. So it does when the judge
    gave no answer for some rows (a failed call, not an unreadable answer): a rerun asks only those; and when answers
    ran into the token limit (raise --max-new-tokens)."""
    check_report_folder(output, "compare", overwrite, judge_flags.cache_files())
    from radmetrics.errors import RadmetricsError, optional_import

    for module in ("scipy", "matplotlib"):  # before any judging, not after it
        optional_import(module, "meta", "by compare")
    from radmetrics.meta.compare import (compare, cut_answers, failed_calls, load_systems, missing_results,
                                         past_context, write_outputs)
    from radmetrics.meta.html_report import shorten

    systems = _systems(system_files)
    from radmetrics.io import check_cache_is_no_input

    check_cache_is_no_input(judge_flags.cache_files(), [*systems.values(), references])
    aligned = load_systems(systems, references, id_column, reference_column, candidate_column, on_mismatch)
    for note in aligned.notes:
        click.echo(f"Note: {note}", err=True)
    from radmetrics.cli.data import check_judges
    from radmetrics.meta.runs import check_metrics_loadable

    # what fails in seconds fails before the judging, as in meta-eval: a metric name no evaluate module answers to
    # (a typo), a baseline whose model or corpus is not here, a judge that cannot be reached (or no server named).
    # A metric that loads and then fails on the rows is an n/a with its reason, the other metrics kept.
    # Checked here before the judge is, so compare() is told not to check them again (each check loads every
    # evaluate module, seconds each).
    judge_metrics = check_metrics_loadable(metrics)
    check_judges(judge_metrics, judge_flags.backend, judge_flags.model, judge_flags.options,
                 judge_flags.system_options, judge_flags.cache)
    click.echo(f"Comparing {len(aligned.candidates)} systems on {len(aligned.ids)} reports with "
               f"{len(metrics)} metric(s).", err=True)

    def progress(metric, partial):
        entry = partial.metrics[metric]
        missing = missing_results(partial).get(metric, {})
        if entry["error"]:
            state = f"n/a ({shorten(entry['error'], 300)})"
        elif missing:
            state = "done; no result for " + "; ".join(f"{s}: {shorten(why, 200)}" for s, why in missing.items())
        else:
            state = "done"
        click.echo(f"  {metric}: {state}", err=True)

    result = compare(aligned.candidates, aligned.references, list(metrics), aligned.ids,
                     **judge_flags.score_kwargs(), system_options=judge_flags.system_options,
                     resamples=resamples, seed=seed, confidence=confidence,
                     alpha=alpha, notes=aligned.notes, on_metric=progress, metrics_checked=True)
    from radmetrics.io import owner_only

    with owner_only(output):  # every report text's score and reason: readable by you only, as score's results
        paths = write_outputs(result, output, overwrite)  # checked again: the folder may have changed since
    print_tables(result)
    for note in result.notes[len(aligned.notes):]:  # what the statistics found (the input's notes were said above)
        click.echo(f"Note: {note}", err=True)
    click.echo("Wrote " + ", ".join(str(p) for p in paths.values()), err=True)
    missing = missing_results(result)
    if missing:
        named = "; ".join(f"{metric}: {', '.join(systems)}" for metric, systems in missing.items())
        raise RadmetricsError(f"{len(missing)} of {len(result.metrics)} metrics gave no result for some system "
                              f"({named}); {output} has the others and per_row.csv says why.")
    problems = []
    failed = failed_calls(result)
    if failed:  # rows without an answer left their pairs: the comparison is not over the same rows as asked
        rerun = ("Rerun the same command to ask them again (answers already given are cached)" if judge_flags.cache
                 is not False else "Rerun to ask every row again (--no-cache keeps no answer; with a cache a rerun "
                                   "asks only these)")
        problems.append(f"the judge gave no answer for some rows (judge call failed: {_named(failed)}); their pairs "
                        f"left them out. {rerun}")
    cut = cut_answers(result)
    if cut:  # as failed calls: their pairs left them out, and they follow the system with the longer reports
        problems.append(f"the judge's answer reached the token limit for some rows ({_named(cut)}); their pairs left "
                        "them out. Rerun with a higher --max-new-tokens")
    too_short = past_context(result)
    if too_short:  # not sent, or stopped at the end of the context: a rerun gives the same
        problems.append(f"the judge's context was too short for some rows ({_named(too_short)}); their pairs left "
                        "them out. Shorten the reports, or use a judge with a longer context")
    if problems:
        raise RadmetricsError("; ".join(problems) + "; per_row.csv names the rows.")


def _named(counts: dict[str, dict[str, int]]) -> str:
    """"green: A 2, B 1; vert: B 3"."""
    return "; ".join(f"{metric}: " + ", ".join(f"{s} {n}" for s, n in systems.items())
                     for metric, systems in counts.items())


def _fmt(value, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_tables(result) -> None:
    from radmetrics.cli.tables import table_console
    from rich.table import Table

    from radmetrics.meta.compare import across_metrics_text, level_text, missing_results
    from radmetrics.meta.html_report import p_value_text, shorten

    missing = missing_results(result)
    console = table_console()
    conf = level_text(result.settings["confidence"])
    systems = Table(title=f"Systems ({len(result.ids)} reports; mean [{conf} bootstrap CI])")
    for col in ("metric", "system", "mean", f"{conf} CI", "scored", "unscored", "note"):
        systems.add_column(col, justify="right" if col in {"mean", "scored", "unscored"} else "left")
    for metric, entry in result.to_dict()["metrics"].items():
        arrow = "↑" if entry["higher_is_better"] else "↓"
        for name, s in entry["systems"].items():
            ci = "n/a" if s["ci_low"] is None else f"[{s['ci_low']:.4f}, {s['ci_high']:.4f}]"
            note = entry["error"] or missing.get(metric, {}).get(name) or s["reason"] or ""
            systems.add_row(f"{metric} {arrow}", name, _fmt(s["value"]), ci, str(s["num_scored"]),
                            str(s["num_unscored"]), shorten(note, 60))
    console.print(systems)
    pairs = Table(title=f"Pairs (A − B on rows both scored; paired bootstrap CI; paired randomization, exact where "
                        f"every swap is enumerated; Holm across pairs, α = {result.settings['alpha']})"
                        + (f"\n{across_metrics_text(len(result.metrics))}" if len(result.metrics) > 1 else ""),
                  # as report.html says it: for a lower-is-better metric a positive difference is A's loss
                  caption="win/tie/loss: rows where the pair's first system scored better / the same / worse, in "
                          "the metric's direction (↑ higher is better, ↓ lower is better)")
    for col in ("metric", "pair (A − B)", "n", "difference", f"{conf} CI", "p", "p (Holm)", "win/tie/loss", "better"):
        pairs.add_column(col)
    for metric, entry in result.to_dict()["metrics"].items():
        arrow = "↑" if entry["higher_is_better"] else "↓"
        for p in entry["pairs"]:
            ci = "n/a" if p["ci_low"] is None else f"[{p['ci_low']:+.4f}, {p['ci_high']:+.4f}]"
            if p["better"]:
                better = p["better"] + (f" ({p['note']})" if p["note"] else "")
            elif p["p_holm"] is not None:  # a reason here: too few rows for any difference to be significant
                why = "; ".join(filter(None, [p["reason"], p["note"]]))  # the note: why the interval is n/a, if it is
                better = "not significant" + (f" ({why})" if why else "")
            else:
                better = f"n/a: {p['reason']}"
            pairs.add_row(f"{metric} {arrow}", f"{p['a']} − {p['b']}", str(p["n_paired"]), _fmt(p["difference"]), ci,
                          p_value_text(p["p_value"]),
                          p_value_text(p["p_holm"]), f"{p['win']}/{p['tie']}/{p['loss']}", better)
    console.print(pairs)
