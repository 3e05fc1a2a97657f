"""The `radmetrics rexamine` run: data steps through the shared judge, scoring, statistics (rexamine.py), files."""
from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError, JudgeError
from radmetrics.meta import rexamine
from radmetrics.meta.html_report import p_value_text, shorten
from radmetrics.meta.runs import MetricRun, check_metrics_loadable, run_metric


def _expert_values(rows: list[dict[str, Any]], column: str, path: Any) -> list[float | None]:
    """The expert error counts; a blank cell is no annotation, a value that is not a number is an input error
    (dropping it silently would change a site's correlation without a word)."""
    import math

    values: list[float | None] = []
    for row in rows:
        value = row.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            values.append(None)
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number < 0:
            raise InputError(f"{path}: row {row['id']}: {column} must be a number of errors (0 or more), not {value!r}")
        values.append(number)
    return values


def _absent(value: Any) -> bool:
    """No text given at all (no cell, null, NaN, blank): rexamine writes it with the judge. A value given that is not
    text (a number, a list) is not absent: its row is scored, unscored with the reason (`runner.row_problem`)."""
    return value is None or (isinstance(value, float) and value != value) or (isinstance(value, str) and not value.strip())


def _write_missing(rows: list[dict[str, Any]], judge_kwargs: dict[str, Any], max_new_tokens: int,
                   echo: Callable[[str], None]) -> dict[str, Any]:
    """Standardized references and candidates the input lacks, written with App. A's prompts; provenance."""
    from radmetrics.data import steps
    from radmetrics.judge import _USE_DEFAULT, get_judge
    from radmetrics.types import GenerationConfig

    from radmetrics.runner import row_problem

    need_std = [i for i, r in enumerate(rows) if _absent(r.get("reference_standardized"))]
    need_cand = [i for i, r in enumerate(rows) if _absent(r.get("candidate"))]
    for i in [i for i in need_std if row_problem(rows[i].get("reference"), "reference")]:
        # a reference that is not a report (a number, NA) is not sent to be rewritten: the judge would "standardize" it
        rows[i]["reference_standardized"] = None
        rows[i]["standardize_failure"] = row_problem(rows[i].get("reference"), "reference")
        need_std.remove(i)
    provenance: dict[str, Any] = {"steps_version": steps.STEPS_VERSION}
    if not need_std and not need_cand:
        return provenance
    cache = _USE_DEFAULT if judge_kwargs["cache"] is None else judge_kwargs["cache"]
    the_judge = get_judge(judge_kwargs["backend"], model=judge_kwargs["judge"], cache=cache,
                          **judge_kwargs["judge_options"])
    config = GenerationConfig(max_new_tokens=max_new_tokens)
    provenance["judge"] = the_judge.identity()
    if need_std:
        echo(f"Standardizing {len(need_std)} reference(s) with ReXamine-Global's App. A prompt ...")
        for i, result in zip(need_std, steps.standardize(the_judge, [rows[i]["reference"] for i in need_std], config)):
            rows[i]["reference_standardized"] = result.output
            rows[i]["standardize_failure"] = result.reason
        provenance["standardized_rows"] = len(need_std)
    if need_cand:
        # a row whose standardization failed has nothing to write a candidate from: not sent to the judge
        blocked = [i for i in need_cand if row_problem(rows[i].get("reference_standardized"), "")]
        for i in blocked:
            rows[i]["candidate"] = None
            rows[i]["perturb_failure"] = ("no standardized reference to write a candidate from"
                                          if _absent(rows[i].get("reference_standardized")) else
                                          row_problem(rows[i]["reference_standardized"], "reference_standardized"))
        need_cand = [i for i in need_cand if i not in set(blocked)]
        if need_cand:
            echo(f"Writing {len(need_cand)} error-containing candidate(s) from the standardized references ...")
            sources = [rows[i]["reference_standardized"] for i in need_cand]
            for i, result in zip(need_cand, steps.perturb(the_judge, sources, config)):
                rows[i]["candidate"] = result.output
                rows[i]["perturb_failure"] = result.reason
        provenance["perturbed_rows"] = len(need_cand)
    return provenance


def _step_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per data step that left rows without a text, with the commonest reason: those rows are left
    out of every test and table, which the report must say."""
    from collections import Counter

    lines = []
    for key, what in (("standardize_failure", "no standardized reference"), ("perturb_failure", "no candidate")):
        reasons = Counter(r[key] for r in rows if r.get(key))
        if reasons:
            n = sum(reasons.values())
            reason, _ = reasons.most_common(1)[0]
            lines.append(f"{n} row{'s' if n != 1 else ''} ha{'ve' if n != 1 else 's'} {what} ({shorten(reason, 160)}): "
                         "left out of every test and table; rexamine_data.jsonl says which")
    return lines


def _unscored_note(metric: str, rows: list[dict[str, Any]], scores: list, reasons: list) -> str | None:
    """One line on the rows a metric left unscored (a candidate that is a number, a judge answer it cannot read):
    they are left out of that metric's tests, which the report must say, with the commonest reason."""
    from collections import Counter

    n = len(rows)
    missing = [(rows[i % n]["id"], "original" if i < n else "standardized",
                reasons[i] if i < len(reasons) and reasons[i] else "no score") for i, s in enumerate(scores) if s is None]
    if not missing:
        return None
    reason, _ = Counter(why for _, _, why in missing).most_common(1)[0]
    where = ", ".join(f"{row_id} ({ref})" for row_id, ref, _ in missing[:5]) + (" ..." if len(missing) > 5 else "")
    return (f"{metric} left {len(missing)} score(s) unscored ({shorten(str(reason), 160)}): {where}; left out of "
            f"its tests")


def _check_judges(rows: list[dict[str, Any]], metrics: list[str], judge_kwargs: dict[str, Any]) -> None:
    """The judge the data steps and the judge metrics need is reachable, in seconds, before any work."""
    import radmetrics
    from radmetrics.runner import preflight_judge, system_to_check

    backend, model, options = judge_kwargs["backend"], judge_kwargs["judge"], judge_kwargs["judge_options"]
    to_write = {c: sum(_absent(r.get(c)) for r in rows) for c in ("reference_standardized", "candidate")}
    if any(to_write.values()):
        what = " and ".join(f"{n} row{'s have' if n != 1 else ' has'} no {c}" for c, n in to_write.items() if n)
        if model is None and backend != "replay":
            # the user may have asked for baselines only: say why a judge is needed at all, and how to give one
            raise JudgeError(f"{what}: rexamine writes them with a judge (ReXamine-Global App. A prompts). Name one "
                             "(--judge MODEL: a Hub id or a local folder; or --backend openai --base-url URL --judge "
                             "NAME), or add the column to every row.")
        preflight_judge(backend, model, options)
    for metric in metrics:
        if metric in radmetrics.list_scoring_systems():
            preflight_judge(backend, model, options, system_to_check(metric, judge_kwargs.get("system_options")))


def run_rexamine(input_path: str | Path, metrics: list[str], output: str | Path, *, overwrite: bool = False,
                 expert_column: str = "expert_errors",
                 backend: str = "transformers", judge: str | None = None, judge_options: dict[str, Any] | None = None,
                 cache: Any = None, max_new_tokens: int = 1024, system_options: dict[str, Any] | None = None,
                 alpha: float = 0.05, resamples: int = 1000,
                 seed: int = 0, echo: Callable[[str], None] = print) -> Path:
    """The ReXamine-Global run of `radmetrics rexamine`, writing its report folder `output`; returns the folder.
    What fails in seconds fails first, as in the CLI: a folder holding files no rexamine report wrote (refused
    unless `overwrite`), a missing extra, bad rows, a metric that cannot load, an unreachable judge."""
    from radmetrics.errors import optional_import
    from radmetrics.meta.compare import _read_rows
    from radmetrics.meta.html_report import strict_json_ready
    from radmetrics.meta.report_folder import check_report_folder
    from radmetrics.types import GenerationConfig

    note = check_report_folder(output, "rexamine", overwrite)
    if note:
        echo(f"Note: {note}")
    for module in ("scipy", "matplotlib"):
        optional_import(module, "meta", "by rexamine")
    rows = _read_rows(Path(input_path))
    missing = [c for c in ("site", "reference") if not any(c in r for r in rows)]
    if missing:
        raise InputError(f"{input_path}: rows need {', '.join(missing)} (columns: id, site, reference"
                         "[, reference_standardized][, candidate][, expert_errors])")
    seen: set[str] = set()
    for n, row in enumerate(rows):
        row.setdefault("id", f"row-{n}")
    no_site = [str(r["id"]) for r in rows if r.get("site") is None or not str(r.get("site")).strip()]
    if no_site:  # a made-up site "unknown" would be tested as a hospital of its own (review 12)
        raise InputError(f"{input_path}: {len(no_site)} row(s) have no site: {', '.join(no_site[:5])}"
                         f"{' ...' if len(no_site) > 5 else ''}; every report needs the site it comes from")
    for row in rows:
        row["site"] = str(row["site"]).strip()
        if str(row["id"]) in seen:  # counted twice it would weigh twice in its site's t-test
            raise InputError(f"{input_path}: id {row['id']!r} appears more than once; each report once")
        seen.add(str(row["id"]))
    expert = _expert_values(rows, expert_column, input_path)
    judge_kwargs = {"backend": backend, "judge": judge, "judge_options": dict(judge_options or {}), "cache": cache,
                    "config": GenerationConfig(max_new_tokens=max_new_tokens)}
    if system_options:
        judge_kwargs["system_options"] = dict(system_options)
    check_metrics_loadable(metrics)  # a model or corpus to download, a typo: before the judge writes rows
    _check_judges(rows, metrics, judge_kwargs)
    provenance = _write_missing(rows, judge_kwargs, max_new_tokens, echo)
    warnings = _step_warnings(rows)
    for line in warnings:
        echo(f"Warning: {line}")
    sites = [r["site"] for r in rows]
    for site in sorted(set(sites)):
        if sites.count(site) < 2:
            echo(f"Note: site {site} has {sites.count(site)} row: its t-test and correlation are n/a.")
    originals = [r.get("reference") for r in rows]
    standardized_refs = [r.get("reference_standardized") for r in rows]
    candidates = [r.get("candidate") for r in rows]
    original: dict[str, MetricRun] = {}
    standardized: dict[str, MetricRun] = {}
    unscored: dict[str, str] = {}
    n = len(rows)
    for metric in metrics:
        metric_kwargs = judge_kwargs
        if metric == "finerad_score" and "report_score" not in (system_options or {}):
            # ReXamine-Global Sec. 2.2: "the total number of problematic lines as the final score"
            metric_kwargs = {**judge_kwargs, "system_options": {**(system_options or {}), "report_score": "lines"}}
            echo("Note: finerad_score is the number of lines the judge corrects, as ReXamine-Global scores it "
                 "(Sec. 2.2); --system-option report_score=sum for the severity sum.")
        run = run_metric(metric, originals + standardized_refs, candidates + candidates, metric_kwargs)
        if run.error:
            echo(f"Note: {metric} failed ({run.error}); n/a, the other metrics are kept.")
        original[metric] = MetricRun(metric, run.scores[:n], run.higher_is_better, [], run.fingerprint,
                                     run.reasons[:n], run.error)
        standardized[metric] = MetricRun(metric, run.scores[n:], run.higher_is_better, [], run.fingerprint,
                                         run.reasons[n:], run.error)
        if not run.error and (note := _unscored_note(metric, rows, run.scores, run.reasons)):
            unscored[metric] = note
            echo(f"Note: {note}")
    tests = rexamine.site_t_tests(original, standardized, sites, alpha)
    spearman_original = rexamine.site_spearman(original, expert, sites, resamples, seed)
    spearman_standardized = rexamine.site_spearman(standardized, expert, sites, resamples, seed)
    results = {
        "n_rows": n, "sites": sorted(set(sites)), "alpha": alpha, "provenance": provenance,
        "sign_convention": "scores oriented so higher = worse; t = standardized − original (negative: the candidate "
                           "looks better against the stylistically similar reference)",
        "failed_metrics": {m: r.error for m, r in original.items() if r.error}, "warnings": warnings,
        "unscored": unscored,
        "t_tests": tests, "table2": rexamine.table2(tests),
        "table3": rexamine.table3(original, standardized, expert, sites),
        "spearman": {"original": spearman_original, "standardized": spearman_standardized},
    }
    disagreements = {m: rexamine.largest_disagreements(r, expert, rows) for m, r in original.items() if not r.error}
    results["largest_disagreements"] = {m: items for m, (items, _) in disagreements.items()}
    results["largest_disagreements_notes"] = {m: note for m, (_, note) in disagreements.items() if note}
    from radmetrics.io import owner_only
    from radmetrics.meta.report_folder import ReportWriter

    # every reference, standardized reference, candidate and judge text: readable by you only, as score's results
    with owner_only(Path(output)):
        # replaces an earlier rexamine report there whole; staged: a kill while writing leaves no half report
        with ReportWriter(output, "rexamine") as report:
            with report.path("rexamine_data.jsonl").open("w", encoding="utf-8") as fh:
                for row in rows:  # the data steps' outputs with their provenance, to re-run or read
                    fh.write(json.dumps({**row, "provenance": provenance}, default=str) + "\n")
            with report.path("per_row.csv").open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["id", "site", expert_column] + [f"{m}:{ref}" for m in metrics for ref in ("original", "standardized")])
                for i, row in enumerate(rows):
                    writer.writerow([row["id"], row["site"], "" if expert[i] is None else expert[i]]
                                    + [("" if run.scores[i] is None else run.scores[i])
                                       for m in metrics for run in (original[m], standardized[m])])
            rexamine.fig3(spearman_original, spearman_standardized, report.path("fig3_spearman.png"))
            report.path("summary.md").write_text(_summary(results))
            report.finish(strict_json_ready(results))
    return report.folder


def _fmt(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _summary(results: dict[str, Any]) -> str:
    sites = results["sites"]
    lines = [f"# ReXamine-Global robustness run ({results['n_rows']} reports, {len(sites)} sites)", "",
             f"Sign convention: {results['sign_convention']}. Bonferroni: α = {results['alpha']} / the t-tests run "
             f"({sum(t['p_value'] is not None for t in results['t_tests'])}; metrics × sites when every site has one).",
             "", *(f"**Warning:** {line}." for line in results["warnings"]), *([""] if results["warnings"] else []),
             *(f"Note: {line}." for line in results["unscored"].values()), *([""] if results["unscored"] else []),
             "Table 2 — paired t-tests, original vs standardized references:", "",
             "| metric | mean t | min t | max t | significant sites |", "| --- | ---: | ---: | ---: | ---: |"]
    for metric, row in results["table2"].items():
        lines.append(f"| {metric} | {_fmt(row['mean_t'])} | {_fmt(row['min_t'])} | {_fmt(row['max_t'])} | "
                     f"{row['significant_sites']} / {row['sites_tested']} |")
    for metric, error in results["failed_metrics"].items():
        lines.append(f"| {metric} | n/a: {shorten(error, 100)} | | | |")
    lines += ["", "Per site (t, p; n/a with the reason):", "", "| metric | site | n | t | p | significant |",
              "| --- | --- | ---: | ---: | ---: | --- |"]
    for t in results["t_tests"]:
        sig = "n/a: " + t["reason"] if t["t"] is None else ("yes" if t["significant"] else "no")
        lines.append(f"| {t['metric']} | {t['site']} | {t['n']} | {_fmt(t['t'])} | {p_value_text(t['p_value'])} | {sig} |")
    lines += ["", "Table 3 — mean ± std per site:", "", "| metric | references | " + " | ".join(sites) + " |",
              "| --- | --- | " + " | ".join("---" for _ in sites) + " |"]

    def cell(s):
        return "n/a" if s["mean"] is None else f"{s['mean']:.2f} ± {_fmt(s['std'])}"

    metrics = [m for m in next(iter(results["table3"].values()), {}) if m != "expert"]
    for metric in metrics:
        for ref in ("original", "standardized"):
            lines.append(f"| {metric} | {ref} | " + " | ".join(cell(results["table3"][s][metric][ref]) for s in sites) + " |")
    lines.append("| expert errors | both | " + " | ".join(cell(results["table3"][s]["expert"]) for s in sites) + " |")
    lines += ["", "Table 4 — Spearman ρ with expert error counts per site (positive = agreement):", "",
              "| metric | references | " + " | ".join(sites) + " |", "| --- | --- | " + " | ".join("---:" for _ in sites) + " |"]
    for metric in results["spearman"]["original"]:
        for ref in ("original", "standardized"):
            per_site = results["spearman"][ref][metric]
            lines.append(f"| {metric} | {ref} | " + " | ".join(_fmt(per_site[s]["value"]) for s in sites) + " |")
    lines += ["", "Largest disagreements with the experts (App. D), per metric:", ""]
    for metric, items in results["largest_disagreements"].items():
        if metric in results["largest_disagreements_notes"]:
            lines.append(f"- {metric}: none listed: {results['largest_disagreements_notes'][metric]}")
        for item in items:
            lines.append(f"- {metric}, {item['id']} ({item['site']}): {item['kind']}; metric {_fmt(item['metric_score'], 3)}, "
                         f"expert errors {_fmt(item['expert_errors'], 1)}")
    lines += ["", "Plot: ![fig3](fig3_spearman.png)", ""]
    return "\n".join(lines)
