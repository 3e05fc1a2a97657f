"""`radmetrics meta-eval`: score an expert dataset with one or more metrics and write a report folder.

results.json (every statistic with its settings and the rows it used; strict JSON), per_sample.csv, PNG plots
(metric vs expert scatter; detected vs annotated significant errors per category, like VERT Fig. 2; per-site
Spearman with CIs, like ReXamine-Global Fig. 3), summary.md and one self-contained report.html with the same
tables. A metric that fails (a baseline that cannot load offline, a judge that cannot be reached) is reported
with its reason; the metrics that finished are kept.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from radmetrics.meta import stats, targets
from radmetrics.meta.compare_stats import holm
from radmetrics.meta.runs import MetricRun
from radmetrics.meta.html_report import (Report, Table, interval_text, p_value_text, short_label, shorten,
                                         strict_json_ready, text_as_written, to_html, to_markdown)

from radmetrics.taxonomy import GREEN_NAMES, LETTERS

#: the six error categories in full (GREEN's wording) for plots and tables
CATEGORY_NAMES = GREEN_NAMES


def run_radmetrics_metric(name: str, data, judge_kwargs: dict[str, Any]) -> MetricRun:
    """A radmetrics scoring system over an expert dataset's pairs (raises; `runs.run_metric` does not)."""
    from radmetrics.meta import runs

    return runs.run_radmetrics_metric(name, data["reference"], data["candidate"], judge_kwargs)


def load_evaluate_module(name: str):
    """evaluate.load, with the failure (offline, no such module) as one RadmetricsError line."""
    import evaluate

    from radmetrics.errors import RadmetricsError

    try:
        return evaluate.load(name)
    except Exception as e:  # evaluate raises FileNotFoundError/ConnectionError/ImportError/... for one cause
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RadmetricsError(
            f"baseline '{name}' could not be loaded through evaluate ({type(e).__name__}: {first[:300]}). "
            "Offline (no network, or HF_HUB_OFFLINE=1), evaluate's Hub modules must already be in its cache: use "
            "radmetrics' own baselines (rouge-l, bleu-2, bleu-4 need no download: `radmetrics list`), a local module "
            "folder, or run once with network.") from e


def _oriented(values, higher_is_better):
    return [None if v is None else (v if higher_is_better else -v) for v in values]


def _subset(values, rows):
    return [values[i] for i in rows]


def _correlations(judge_up, expert_up, rows, resamples, seed, groups: dict[str, Any] | None = None) -> dict[str, Any]:
    """τ-b and ρ on ``rows``; ``groups`` (`resampling_groups`: all rows' labels) resamples whole groups."""
    a, b = _subset(judge_up, rows), _subset(expert_up, rows)
    by = {"groups": _subset(groups["labels"], rows), "groups_name": groups["column"]} if groups else {}
    return {"kendall_tau_b": stats.kendall_tau(a, b, resamples=resamples, seed=seed, **by).to_dict(),
            "spearman": stats.spearman(a, b, resamples=resamples, seed=seed, **by).to_dict()}


#: a dataset column that says which rows come from one study (ReXVal: 4 candidate reports for each of 50 studies)
STUDY_COLUMN = "study_id"


def resampling_groups(data, resample_by: str | None) -> dict[str, Any] | None:
    """The rows' labels of ``resample_by`` for a cluster bootstrap (`stats.correlation`'s ``groups``); None: rows."""
    if resample_by is None:
        return None
    from radmetrics.errors import InputError

    if resample_by not in data.column_names:
        raise InputError(f"--resample-by {resample_by!r}: the dataset has no such column (its columns: "
                         f"{', '.join(data.column_names)})")
    labels = list(data[resample_by])
    if any(label is None for label in labels):
        raise InputError(f"--resample-by {resample_by!r}: {sum(label is None for label in labels)} rows have no value "
                         "there; every row needs its group")
    return {"column": resample_by, "labels": labels}


def _shared_studies_warning(data, resample_by: str | None) -> str | None:
    """Rows resampled one by one though the dataset says several come from one study: said, with the option."""
    if resample_by is not None or STUDY_COLUMN not in data.column_names:
        return None
    studies = [s for s in data[STUDY_COLUMN] if s is not None]
    if len(set(studies)) == len(studies):
        return None
    return (f"the CIs resample rows one by one, as the papers do, but {len(studies)} rows come from "
            f"{len(set(studies))} studies ({STUDY_COLUMN}); where a study's reports move together such intervals are "
            f"narrower than their level (95% CIs held the true τ-b in 89% of simulated runs of 50 studies x 4 "
            f"reports; 94% resampling studies): --resample-by {STUDY_COLUMN} resamples whole studies")


@dataclass
class Ensemble:
    """--ensemble mean:vert@a,vert@b, average:green,bleu-4 or linear:green,vert (VERT Sec. 4.1.2). "mean" is the
    paper's average operator, the plain mean of the members' scores (VERT averages VERT scores of three LLMs, one
    scale); "average" z-scores each member first, so metrics of different scales can be mixed."""

    method: str
    members: list[str]

    @classmethod
    def parse(cls, spec: str) -> Ensemble:
        from radmetrics.errors import InputError

        method, sep, names = spec.partition(":")
        members = [m.strip() for m in names.split(",") if m.strip()]
        if not sep or method not in {"mean", "average", "linear"} or len(members) < 2:
            raise InputError(f"--ensemble {spec!r}: write mean:METRIC,METRIC[,...] (the plain mean, as VERT), "
                             "average:... (of z-scores, to mix scales) or linear:METRIC,METRIC[,...]")
        return cls(method, members)

    @property
    def name(self) -> str:
        return f"{self.method}({'+'.join(self.members)})"


def ensemble_runs(runs: list[MetricRun], ensembles: list[Ensemble], expert_up: list[float | None],
                  train: list[int], seed: int) -> tuple[list[MetricRun], dict[str, Any]]:
    """Each ensemble as a run (oriented: higher = agreement), and its settings (weights, scheme)."""
    by_name = {r.name: r for r in runs}
    made, details = [], {}
    for ens in ensembles:
        n = len(expert_up)
        missing = [m for m in ens.members if m not in by_name]
        failed = [m for m in ens.members if m in by_name and by_name[m].error]
        if missing or failed:
            why = (f"not run: {', '.join(missing)} (name them with -m)" if missing
                   else f"member metric failed: {', '.join(failed)}")
            made.append(MetricRun.failed(ens.name, n, why))
            details[ens.name] = {"error": why}
            continue
        columns = [_oriented(by_name[m].scores, by_name[m].higher_is_better) for m in ens.members]
        if ens.method == "mean":
            scores = targets.plain_average(columns)
            details[ens.name] = {"method": "mean of the oriented member scores (VERT Sec. 4.1.2)", "members": ens.members}
            note = targets.mixed_scales_note(ens.name, {m: by_name[m].scores for m in ens.members})
            if note:
                details[ens.name]["note"] = note
        elif ens.method == "average":
            scores = targets.zscore_average(columns)
            details[ens.name] = {"method": "mean of z-scored, oriented member scores", "members": ens.members}
        else:
            fit = targets.linear_ensemble(columns, expert_up, train, [], seed=seed)
            scores = fit.pop("predictions")
            details[ens.name] = {"method": "least squares on the oriented expert target", "members": ens.members,
                                 **fit}
            if fit["intercept"] is None:  # no fit at all: say why, not "a member is unscored" on every row
                why = (f"too few rows to fit {len(ens.members)} weights and an intercept ({fit['scheme']}; each fit "
                       f"needs {targets.rows_to_fit(len(ens.members))} rows with every member scored and an expert score)")
                made.append(MetricRun.failed(ens.name, n, why))
                details[ens.name]["error"] = why
                continue
        reasons = [None if s is not None else "a member metric is unscored for this row" for s in scores]
        made.append(MetricRun(ens.name, scores, True, [None] * n, {"ensemble": details[ens.name]}, reasons))
    return made, details


def _per_category(run: MetricRun, data, rows, resamples, seed, target: str = "per-category",
                  groups: dict[str, Any] | None = None) -> tuple[dict[str, Any], str] | None:
    """Per error category (a)-(f): the judge's count (or ER²Score's reward for the matching RadCliQ criterion)
    against the expert mean count for that category: significant errors, and for ER²Score's criteria under the
    'total' target significant + insignificant (ER²Score Table 1: 1 point per error of either kind, the total their
    sum). A judge's counts are of significant errors (GREEN), so they are graded against those. Returns the
    correlations by category and which expert counts they were graded against ("significant", or "significant +
    insignificant")."""
    if "expert_significant" not in data.column_names:
        return None
    expert = [v if v is not None and len(v) == 6 else None for v in data["expert_significant"]]
    graded_against = "significant"
    if any(c is not None for c in run.counts):
        columns = {x: ([None if c is None else -c[k] for c in run.counts], "count") for k, x in enumerate(LETTERS)}
    elif len(run.extra) == 6:
        columns = {x: (list(vals), name) for x, (name, vals) in zip(LETTERS, run.extra.items())}
        if target == "total" and "expert_insignificant" in data.column_names:
            expert = [None if e is None or i is None or len(i) != 6 else [a + b for a, b in zip(e, i)]
                      for e, i in zip(expert, data["expert_insignificant"])]
            graded_against = "significant + insignificant"
    else:
        return None
    out = {}
    for k, (letter, (values, source)) in enumerate(columns.items()):
        expert_up = [None if e is None else -e[k] for e in expert]
        out[letter] = {"source": source, **_correlations(values, expert_up, rows, resamples, seed, groups)}
    return out, graded_against


def dataset_label(data, fallback: str) -> str:
    """The dataset's own name (its `dataset` column), not the converter default."""
    names = sorted({n for n in data["dataset"] if n}) if "dataset" in data.column_names else []
    return ", ".join(names) if names else fallback


def expert_meaning(data) -> str:
    """What the expert score is, for axis labels: the converter card's wording where the dataset is known."""
    from radmetrics.data import CONVERTERS, converter

    names = sorted({n for n in data["dataset"] if n}) if "dataset" in data.column_names else []
    if len(names) == 1 and names[0] in CONVERTERS:
        return converter(names[0])[1]["expert_score_meaning"]
    better = "higher" if data[0]["expert_higher_is_better"] else "lower"
    return f"expert score ({better} is better)"


def analyse(runs: list[MetricRun], data, resamples: int = 1000, seed: int = 0, target: str = "score",
            split: float | int | None = None, split_seed: int = 0, ensembles: list[Ensemble] | None = None,
            resample_by: str | None = None) -> dict[str, Any]:
    """Every statistic on the graded rows: all rows, or the seeded held-out subset (`split`), against the expert
    `target` (targets.TARGETS). Ensembles are added as runs; "_runs" carries every run for the outputs.
    ``resample_by``: a column whose value groups rows (ReXVal's ``study_id``): the correlations' CIs resample whole
    groups (a cluster bootstrap) instead of rows."""
    groups = resampling_groups(data, resample_by)
    expert_all, expert_higher, meaning = targets.expert_target(data, target)
    expert_up_all = _oriented(expert_all, expert_higher)
    train, test = targets.held_out(len(data), split, split_seed)
    extra_runs, ensemble_details = ensemble_runs(runs, ensembles or [], expert_up_all, train, seed)
    all_runs = list(runs) + extra_runs
    expert, expert_up = _subset(expert_all, test), _subset(expert_up_all, test)
    annotated_all = ([x is not None and len(x) == 6 for x in data["expert_significant"]]
                     if "expert_significant" in data.column_names else [False] * len(data))
    annotated = _subset(annotated_all, test)
    n_expert = sum(e is not None for e in expert)
    out: dict[str, Any] = {"n": len(expert), "n_dataset": len(data), "n_with_expert_score": n_expert,
                           "resamples": resamples, "seed": seed, "target": target, "target_meaning": meaning,
                           "split": None if split is None else {"held_out": len(test), "train": len(train),
                                                                "seed": split_seed,
                                                                "test_ids": [data[i]["id"] for i in test]},
                           "orientation": "scores and expert values oriented so positive correlation = agreement",
                           "resampled": resample_by or "rows", "metrics": {}, "warnings": []}
    if shared := _shared_studies_warning(data, resample_by):
        out["warnings"].append(shared)
    test_groups = {"column": groups["column"], "labels": _subset(groups["labels"], test)} if groups else None
    for full_run in all_runs:
        if full_run.error:
            out["metrics"][full_run.name] = {"failed": full_run.error, "n_scored": 0, "num_unscored": len(expert)}
            out["warnings"].append(f"{full_run.name}: not computed: {full_run.error}")
            continue
        run = MetricRun(full_run.name, _subset(full_run.scores, test), full_run.higher_is_better,
                        _subset(full_run.counts, test) if full_run.counts else [], full_run.fingerprint,
                        _subset(full_run.reasons, test) if full_run.reasons else [])
        judge_up = _oriented(run.scores, run.higher_is_better)
        n_scored = sum(s is not None for s in run.scores)
        # rows without a judge verdict at all (a failed call, an answer cut at the token limit): not the judge's
        # disagreement with the experts, and they may follow the reports (long ones time out or run long), so the
        # correlations are over other rows than asked; named here, and the CLI exits 2 (review 29a), as compare does
        without_verdict = run.rows_without_verdict()
        failed_calls, cut, too_short = (without_verdict[k] for k in ("judge_calls_failed", "answers_cut", "past_context"))
        entry: dict[str, Any] = {
            "n_scored": n_scored, "num_unscored": len(expert) - n_scored, **without_verdict,
            # the correlations use the rows with both a score and an expert value (their "n")
            **_correlations(judge_up, expert_up, range(len(expert_up)), resamples, seed, test_groups),
            "fingerprint": run.fingerprint,
        }
        for label, key in (("Kendall τ-b", "kendall_tau_b"), ("Spearman ρ", "spearman")):
            used, asked = entry[key].get("resamples_used"), entry[key].get("resamples")
            # few rows: many resamples repeat one row. Not where the correlation itself is undefined (a constant
            # metric or expert side): every resample is then constant, and "0 of 1000 resamples ... the others drew
            # rows with one distinct value" misread a metric that ranks nothing as bad luck in the resampling
            if used is not None and asked and used < asked and not _undefined(entry[key].get("value")):
                out["warnings"].append(f"{full_run.name}: the {label} CI is made of {used} of {asked} resamples (the "
                                       "others drew rows with one distinct value, which have no correlation)")
        if failed_calls:
            out["warnings"].append(f"{full_run.name}: the judge gave no answer for {failed_calls} row(s) (judge call "
                                   "failed); its correlations leave them out")
        if cut:
            out["warnings"].append(f"{full_run.name}: {cut} judge answer(s) reached the token limit (unscored); its "
                                   "correlations leave them out")
        if too_short:
            out["warnings"].append(f"{full_run.name}: the judge's context was too short for {too_short} row(s) (the "
                                   "prompt, or the prompt and its answer; unscored); its correlations leave them out")
        if target == "per-category" or full_run.extra:
            per_category = _per_category(full_run, data, test, resamples, seed, target, groups)
            if per_category:
                # which expert counts, in results.json: the report's title read it from other keys before
                entry["per_category"], entry["per_category_expert"] = per_category
        if full_run.extra:
            entry["criteria"] = {name: _correlations(vals, expert_up_all, test, resamples, seed)
                                 for name, vals in full_run.extra.items()}
        if n_scored == 0:
            out["warnings"].append(f"{run.name}: every row is unscored ({_top_reason(run)}); it has no statistics")
        elif entry["kendall_tau_b"]["n"] < 3:
            out["warnings"].append(f"{run.name}: only {entry['kendall_tau_b']['n']} rows with a score and an expert "
                                   "value; correlations need at least 3")
        elif n_scored < len(expert):
            out["warnings"].append(f"{run.name}: {len(expert) - n_scored} of {len(expert)} rows unscored "
                                   f"({_top_reason(run)}); its statistics use the {n_scored} scored rows")
        idx = [i for i, c in enumerate(run.counts) if c is not None and annotated[i]]
        if idx:
            human = [data[test[i]]["expert_significant"] for i in idx]
            model = [run.counts[i] for i in idx]
            entry["mae_significant_errors"] = stats.mae([sum(m) for m in model], [sum(h) for h in human])
            entry["category_accuracy"] = dict(zip(LETTERS, stats.category_accuracy(model, human)))
            entry["error_type_f1"] = dict(zip(LETTERS, stats.error_type_f1(
                [[round(v) for v in h] for h in human], model)))
            entry["n_with_error_counts"] = len(idx)
        out["metrics"][run.name] = entry
    if ensemble_details:
        out["ensembles"] = ensemble_details
        out["warnings"] += [e["note"] for e in ensemble_details.values() if e.get("note")]
    raters = targets.inter_rater(data, "total" if target == "total" else "significant")
    if raters and target != "per-category":
        rows = {name: _correlations(raters[name], raters[f"others of {name}"], test, resamples, seed)
                for name in raters if name.startswith("rater ")}
        taus = [r["kendall_tau_b"]["value"] for r in rows.values()]
        out["inter_rater"] = {"meaning": "each rater's error count against the mean of the other raters",
                              "raters": rows, "mean_kendall_tau_b": float(np.nanmean(taus)) if taus else None,
                              "mean_spearman": float(np.nanmean([r["spearman"]["value"] for r in rows.values()]))}
    judged = [r for r in all_runs if r.judge_label]
    if judged:
        table: dict[str, dict[str, Any]] = {}
        for r in judged:
            value = out["metrics"][r.name].get("kendall_tau_b", {}).get("value")
            table.setdefault(r.judge_label, {})[r.name[: -len(r.judge_label) - 1]] = value
        out["judge_metric_kendall_tau_b"] = table
    ok = [MetricRun(r.name, _subset(r.scores, test), r.higher_is_better) for r in all_runs if not r.error]
    if len(ok) > 1:
        out["pairwise_randomization"] = []
        for i, a in enumerate(ok):
            for b in ok[i + 1:]:
                keep = [k for k in range(len(expert)) if a.scores[k] is not None and b.scores[k] is not None
                        and expert_up[k] is not None]
                entry = {"a": a.name, "b": b.name, "n": len(keep)}
                if len(keep) >= 3:
                    entry.update(stats.paired_randomization_test(
                        [_oriented(a.scores, a.higher_is_better)[k] for k in keep],
                        [_oriented(b.scores, b.higher_is_better)[k] for k in keep],
                        [expert_up[k] for k in keep], trials=resamples, seed=seed))
                    if math.isnan(entry["difference"]):
                        entry["skipped"] = ("a correlation is undefined (one side has the same value on every row "
                                            "both scored): nothing to test")
                else:
                    entry["skipped"] = f"only {len(keep)} rows scored by both; the test needs at least 3"
                out["pairwise_randomization"].append(entry)
        # every pair is one more chance of a p below 0.05 when no metric is better than another: with 5 equally good
        # metrics (10 pairs, 50 rows) some raw p was <= 0.05 in 18 of 60 simulated runs (Holm: 2). Holm across the pairs tested, as compare
        # corrects its pairs; the raw p is kept beside it
        tested = out["pairwise_randomization"]
        adjusted = holm([None if "skipped" in t else t["p_value"] for t in tested])
        for t, p_holm in zip(tested, adjusted):
            t["p_holm"] = p_holm
    if "site" in data.column_names and len(set(data["site"])) > 1:
        out["per_site_spearman"] = {run.name: stats.per_site_spearman(
            _oriented(run.scores, run.higher_is_better), expert_up, _subset(list(data["site"]), test),
            resamples=resamples, seed=seed) for run in ok}
    out["_runs"] = all_runs  # for the outputs; removed before writing
    return out


def _top_reason(run: MetricRun) -> str:
    reasons: dict[str, int] = {}
    for s, r in zip(run.scores, run.reasons or []):
        if s is None and r:
            reasons[r] = reasons.get(r, 0) + 1
    if not reasons:
        return "no reason recorded"
    reason, count = max(reasons.items(), key=lambda kv: kv[1])
    return f"most often: {shorten(reason, 160)} ×{count}"


@text_as_written
def _plots(runs: list[MetricRun], data, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[tuple[str, str]] = []
    expert = list(data["expert_score"])
    meaning = expert_meaning(data)
    ok = [r for r in runs if not r.error]
    for run in ok:
        label = short_label(run.name)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        pts = [(e, s) for e, s in zip(expert, run.scores) if s is not None and e is not None]
        if pts:
            ax.scatter(*zip(*pts), alpha=0.7)
        else:
            ax.text(0.5, 0.5, "no scored rows", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(_wrap(meaning, 60), fontsize=9)
        direction = "higher" if run.higher_is_better else "lower"
        ax.set_ylabel(f"{label} ({direction} is better)")
        ax.set_title(f"{label} vs experts (n = {len(pts)})")
        fig.tight_layout()
        name = f"scatter_{safe}.png"
        fig.savefig(folder / name, dpi=120)
        plt.close(fig)
        written.append((name, f"{label} against the expert score, one point per scored report"))
        idx = [i for i, c in enumerate(run.counts) if c is not None
               and "expert_significant" in data.column_names and len(data[i]["expert_significant"]) == 6]
        if idx:
            detected = [sum(run.counts[i][k] for i in idx) for k in range(6)]
            annotated = [sum(data[i]["expert_significant"][k] for i in idx) for k in range(6)]
            fig, ax = plt.subplots(figsize=(10, 4.5))
            y = list(range(6))
            ax.barh([v - 0.2 for v in y], annotated, height=0.4, label="annotated (expert mean)")
            ax.barh([v + 0.2 for v in y], detected, height=0.4, label=f"detected by {label}")
            ax.set_yticks(y, [f"({c}) {CATEGORY_NAMES[c]}" for c in LETTERS])
            ax.invert_yaxis()
            ax.set_xlabel(f"clinically significant errors, summed over {len(idx)} reports")
            ax.set_title(f"Significant errors per category: {label} vs experts")
            ax.legend(loc="lower right", fontsize=8)
            fig.tight_layout()
            name = f"error_counts_{safe}.png"
            fig.savefig(folder / name, dpi=120)
            plt.close(fig)
            written.append((name, f"significant errors per category, {label} against the expert annotation"))
    if "site" in data.column_names and len(set(data["site"])) > 1 and ok:
        import numpy as np

        results = {run.name: stats.per_site_spearman(
            _oriented(run.scores, run.higher_is_better), _oriented(expert, bool(data[0]["expert_higher_is_better"])),
            list(data["site"]), resamples=200, seed=0) for run in ok}
        sites = sorted(set(data["site"]))
        width = 0.8 / len(ok)
        fig, ax = plt.subplots(figsize=(max(5.5, 1.6 * len(sites) * len(ok) ** 0.5), 4.5))
        for j, run in enumerate(ok):
            vals = [results[run.name][s]["value"] for s in sites]
            low = [results[run.name][s]["ci_low"] for s in sites]
            high = [results[run.name][s]["ci_high"] for s in sites]
            x = np.arange(len(sites)) + (j - (len(ok) - 1) / 2) * width
            err = np.array([[max(v - lo, 0) if v == v and lo == lo else 0 for v, lo in zip(vals, low)],
                            [max(hi - v, 0) if v == v and hi == hi else 0 for v, hi in zip(vals, high)]])
            ax.bar(x, [v if v == v else 0 for v in vals], width=width, yerr=err, capsize=3,
                   label=short_label(run.name))
        ax.set_xticks(range(len(sites)), sites)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_ylabel("Spearman ρ with experts (higher = agrees)")
        ax.set_xlabel("site")
        ax.set_title("Per-site agreement with experts (95% bootstrap CI)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / "per_site.png", dpi=120)
        plt.close(fig)
        written.append(("per_site.png", "Spearman ρ between each metric and the experts within each site"))
    return written


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def build_report(results: dict[str, Any], dataset_name: str, plots: list[tuple[str, str]]) -> Report:
    report = Report(
        title=f"Meta-evaluation on {dataset_name}",
        intro=[f"Target: {results.get('target', 'score')} ({results.get('target_meaning', 'expert score')})"
               + (f"; graded on a held-out subset of {results['split']['held_out']} of {results['n_dataset']} rows "
                  f"(seed {results['split']['seed']})" if results.get("split") else "") + ".",
               f"{results['n']} reports, {results.get('n_with_expert_score', results['n'])} with an expert score. "
               f"Correlations: {results['orientation']}; 95% percentile bootstrap CIs over {results['resamples']} "
               f"resamples (seed {results['seed']}) of "
               + ("rows" if results.get("resampled", "rows") == "rows" else f"whole groups of rows by "
                  f"{results['resampled']}")
               + ". Each statistic uses only the rows its metric scored: its n is shown."],
        warnings=list(results.get("warnings", [])), plots=plots)
    rows = []
    for name, m in results["metrics"].items():
        if "failed" in m:
            rows.append([short_label(name), "failed", "n/a", "n/a", "n/a", "n/a", m["failed"]])
            continue
        k, s = m["kendall_tau_b"], m["spearman"]
        mae = m.get("mae_significant_errors")
        mae_text = "n/a" if not mae or mae.get("mae") is None else f"{mae['mae']:.2f} ± {mae['std']:.2f} (n={mae['n']})"
        rows.append([short_label(name), f"{m['n_scored']}/{results['n']}", k.get("n"), interval_text(k), interval_text(s),
                     mae_text, m["num_unscored"]])
    # why a correlation is n/a: too few rows, or one side the same on every row (no ranking to compare)
    undefined = [short_label(name) for name, m in results["metrics"].items() if "failed" not in m
                 and (m["kendall_tau_b"].get("n") or 0) >= 3 and _undefined(m["kendall_tau_b"].get("value"))]
    report.tables.append(Table(
        "Agreement with experts", ["metric", "scored", "n (corr.)", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]",
                                   "MAE sig. errors", "unscored"], rows,
        note="n (corr.): rows with both a metric score and an expert value, used by τ and ρ (n/a below 3). "
             + (f"n/a for {', '.join(undefined)}: the scores (or the expert values) are the same on every row, so "
                "they rank nothing. " if undefined else "")
             + "Local module paths are shortened here; results.json has the full names.", numeric={2, 6}))
    inter = results.get("inter_rater")
    if inter:
        report.tables.append(Table(
            "Inter-rater baseline", ["rater", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]"],
            [[name, interval_text(r["kendall_tau_b"]), interval_text(r["spearman"])] for name, r in inter["raters"].items()],
            note=f"{inter['meaning']}; mean τ-b {inter['mean_kendall_tau_b']:.3f}, mean ρ {inter['mean_spearman']:.3f}."))
    table = results.get("judge_metric_kendall_tau_b")
    if table:
        names = sorted({m for row in table.values() for m in row})
        report.tables.append(Table("Kendall τ-b by judge and metric", ["judge"] + names,
                                   [[judge] + [row.get(m) for m in names] for judge, row in table.items()],
                                   numeric=set(range(1, len(names) + 1))))
    for name, m in results["metrics"].items():
        graded_against = m.get("per_category_expert") or (  # results.json written before the key: as then
            "significant + insignificant" if results.get("target") == "total" and not m.get("mae_significant_errors")
            else "significant")
        per_category_title = f"per error category (expert mean {graded_against} count per category)"
        for key, title in (("per_category", per_category_title),
                           ("criteria", "per criterion against the expert target")):
            if key in m:
                report.tables.append(Table(
                    f"{short_label(name)}, {title}", ["", "source", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]"],
                    [[c, v.get("source", ""), interval_text(v["kendall_tau_b"]), interval_text(v["spearman"])]
                     for c, v in m[key].items()]))
    for name, e in (results.get("ensembles") or {}).items():
        if "error" not in e:
            weights = "" if e.get("weights") is None else \
                f"; weights {', '.join(f'{w:.3g}' for w in e['weights'])}, intercept {e['intercept']:.3g} ({e['scheme']})"
            report.intro.append(f"Ensemble {name}: {e['method']}{weights}.")
    for name, m in results["metrics"].items():
        if "error_type_f1" in m:
            report.tables.append(Table(
                f"Error-type F1 for {short_label(name)} (VERT App. C)", ["category", "precision", "recall", "F1", "accuracy"],
                [[f"({c}) {CATEGORY_NAMES[c]}", m["error_type_f1"][c]["precision"], m["error_type_f1"][c]["recall"],
                  m["error_type_f1"][c]["f1"], m["category_accuracy"][c]] for c in LETTERS],
                note=f"Over the {m['n_with_error_counts']} reports with both expert and judge error counts.",
                numeric={1, 2, 3, 4}))
    if results.get("pairwise_randomization"):
        report.tables.append(Table(
            "Paired approximate-randomization tests (difference in Kendall τ)",
            ["A", "B", "n", "τ(A) − τ(B)", "p", "p (Holm)"],
            [[short_label(t["a"]), short_label(t["b"]), t["n"], t.get("difference")]
             + ([t["skipped"], ""] if "skipped" in t else
                # a results.json written before p_holm existed has none: n/a, not a number
                [p_value_text(t.get("p_value")), p_value_text(t.get("p_holm"))])
             for t in results["pairwise_randomization"]],
            note=("n: rows scored by both metrics (and with an expert value); the test uses only those. Each "
                  "metric's scores are swapped as standardized ranks, so p does not depend on the metrics' units. "
                  f"p (Holm): adjusted across the {sum('skipped' not in t for t in results['pairwise_randomization'])} "
                  "pairs tested; read this one when asking whether any pair differs."),
            numeric={2, 3, 4, 5}))
    if results.get("per_site_spearman"):
        sites = sorted({s for per in results["per_site_spearman"].values() for s in per})
        report.tables.append(Table(
            "Per-site Spearman ρ with experts (ReXamine-Global)", ["metric"] + sites,
            [[short_label(name)] + [f"{interval_text(per.get(s))} (n={per.get(s, {}).get('n', 0)})" for s in sites]
             for name, per in results["per_site_spearman"].items()]))
    return report


def write_report(runs: list[MetricRun], data, out_dir: str | Path, dataset_name: str | None = None,
                 resamples: int = 1000, seed: int = 0, target: str = "score", split: float | int | None = None,
                 split_seed: int = 0, ensembles: list[Ensemble] | None = None, *, overwrite: bool = False,
                 resample_by: str | None = None) -> Path:
    """The report in `out_dir`, replacing an earlier meta-eval report there whole: none of its plots of a metric
    this run does not have is left beside the new report as if it were part of it (review 10 F21). A folder holding
    another command's report or files no meta-eval report wrote (your own results.json) is refused before anything is
    written, as the CLI refuses it, unless `overwrite`."""
    from radmetrics.meta.report_folder import ReportWriter, check_report_folder

    check_report_folder(out_dir, "meta-eval", overwrite)
    with ReportWriter(out_dir, "meta-eval") as report_files:  # staged: a kill while writing leaves no half report
        staging = report_files.staging
        label = dataset_label(data, dataset_name or "expert dataset")
        results = analyse(runs, data, resamples=resamples, seed=seed, target=target, split=split,
                          split_seed=split_seed, ensembles=ensembles, resample_by=resample_by)
        runs = results.pop("_runs")  # the ensembles included
        results["dataset"] = label
        results = strict_json_ready(results)
        held = set(results["split"]["test_ids"]) if results.get("split") else None
        expert_target, _, _ = targets.expert_target(data, target)
        with report_files.path("per_sample.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "split", "expert_score", "expert_target"] + [f"{r.name}" for r in runs]
                            + [f"{r.name}_reason" for r in runs])
            for i in range(len(data)):
                part = "all" if held is None else ("test" if data[i]["id"] in held else "train")
                writer.writerow([data[i]["id"], part, data[i]["expert_score"], expert_target[i]]
                                + [r.scores[i] for r in runs] + [r.reasons[i] if r.reasons else None for r in runs])
        plots = _plots(runs, data, staging)
        for name, _ in plots:
            report_files.path(name)
        report = build_report(results, label, plots)
        report_files.path("summary.md").write_text(to_markdown(report))
        report_files.path("report.html").write_text(to_html(report, staging), encoding="utf-8")
        report_files.finish(results)
    return report_files.folder
