"""`radmetrics meta-eval`: score an expert dataset with one or more metrics and write a report folder.

results.json (every statistic with its settings and the rows it used; strict JSON), per_sample.csv, PNG plots
(metric vs expert scatter; detected vs annotated significant errors per category, like VERT Fig. 2; per-site
Spearman with CIs, like ReXamine-Global Fig. 3), summary.md and one self-contained report.html with the same
tables. A metric that fails (a baseline that cannot load offline, a judge that cannot be reached) is reported
with its reason; the metrics that finished are kept.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from radmetrics.meta import stats
from radmetrics.meta.runs import MetricRun
from radmetrics.meta.html_report import Report, Table, interval_text, short_label, strict_json_ready, to_html, to_markdown

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
            "radmetrics' own baselines (rouge-l, bleu-2, bleu-4, meteor, ...: `radmetrics list`), a local module "
            "folder, or run once with network.") from e


def _oriented(values, higher_is_better):
    return [None if v is None else (v if higher_is_better else -v) for v in values]


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


def analyse(runs: list[MetricRun], data, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    expert = list(data["expert_score"])
    expert_up = _oriented(expert, bool(data[0]["expert_higher_is_better"]))
    annotated = ([len(x) == 6 for x in data["expert_significant"]] if "expert_significant" in data.column_names
                 else [False] * len(expert))
    n_expert = sum(e is not None for e in expert)
    out: dict[str, Any] = {"n": len(expert), "n_with_expert_score": n_expert, "resamples": resamples, "seed": seed,
                           "orientation": "scores and expert values oriented so positive correlation = agreement",
                           "metrics": {}, "warnings": []}
    for run in runs:
        if run.error:
            out["metrics"][run.name] = {"failed": run.error, "n_scored": 0, "num_unscored": len(expert)}
            out["warnings"].append(f"{run.name}: not computed: {run.error}")
            continue
        judge_up = _oriented(run.scores, run.higher_is_better)
        n_scored = sum(s is not None for s in run.scores)
        entry: dict[str, Any] = {
            "n_scored": n_scored, "num_unscored": len(expert) - n_scored,
            # the correlations use the rows with both a score and an expert value (their "n")
            "kendall_tau_b": stats.kendall_tau(judge_up, expert_up, resamples=resamples, seed=seed).to_dict(),
            "spearman": stats.spearman(judge_up, expert_up, resamples=resamples, seed=seed).to_dict(),
            "fingerprint": run.fingerprint,
        }
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
            human = [data[i]["expert_significant"] for i in idx]
            model = [run.counts[i] for i in idx]
            entry["mae_significant_errors"] = stats.mae([sum(m) for m in model], [sum(h) for h in human])
            entry["category_accuracy"] = dict(zip(LETTERS, stats.category_accuracy(model, human)))
            entry["error_type_f1"] = dict(zip(LETTERS, stats.error_type_f1(
                [[round(v) for v in h] for h in human], model)))
            entry["n_with_error_counts"] = len(idx)
        out["metrics"][run.name] = entry
    ok = [r for r in runs if not r.error]
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
                else:
                    entry["skipped"] = f"only {len(keep)} rows scored by both; the test needs at least 3"
                out["pairwise_randomization"].append(entry)
    if "site" in data.column_names and len(set(data["site"])) > 1:
        out["per_site_spearman"] = {run.name: stats.per_site_spearman(
            _oriented(run.scores, run.higher_is_better), expert_up, list(data["site"]), resamples=resamples, seed=seed)
            for run in ok}
    return out


def _top_reason(run: MetricRun) -> str:
    reasons: dict[str, int] = {}
    for s, r in zip(run.scores, run.reasons or []):
        if s is None and r:
            reasons[r] = reasons.get(r, 0) + 1
    if not reasons:
        return "no reason recorded"
    reason, count = max(reasons.items(), key=lambda kv: kv[1])
    return f"most often: {reason[:160]} ×{count}"


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


def build_report(results: dict[str, Any], dataset_name: str, plots: list[tuple[str, str]]) -> Report:
    report = Report(
        title=f"Meta-evaluation on {dataset_name}",
        intro=[f"{results['n']} reports, {results.get('n_with_expert_score', results['n'])} with an expert score. "
               f"Correlations: {results['orientation']}; 95% percentile bootstrap CIs over {results['resamples']} "
               f"resamples (seed {results['seed']}). Each statistic uses only the rows its metric scored: its n is shown."],
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
    report.tables.append(Table(
        "Agreement with experts", ["metric", "scored", "n (corr.)", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]",
                                   "MAE sig. errors", "unscored"], rows,
        note="n (corr.): rows with both a metric score and an expert value, used by τ and ρ. "
             "Local module paths are shortened here; results.json has the full names.", numeric={2, 6}))
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
            "Paired approximate-randomization tests (difference in Kendall τ)", ["A", "B", "n", "τ(A) − τ(B)", "p"],
            [[short_label(t["a"]), short_label(t["b"]), t["n"], t.get("difference"), t.get("p_value") if "skipped" not in t else t["skipped"]]
             for t in results["pairwise_randomization"]],
            note="n: rows scored by both metrics (and with an expert value); the test uses only those.",
            numeric={2, 3, 4}))
    if results.get("per_site_spearman"):
        sites = sorted({s for per in results["per_site_spearman"].values() for s in per})
        report.tables.append(Table(
            "Per-site Spearman ρ with experts (ReXamine-Global)", ["metric"] + sites,
            [[short_label(name)] + [f"{interval_text(per.get(s))} (n={per.get(s, {}).get('n', 0)})" for s in sites]
             for name, per in results["per_site_spearman"].items()]))
    return report


def write_report(runs: list[MetricRun], data, out_dir: str | Path, dataset_name: str | None = None,
                 resamples: int = 1000, seed: int = 0) -> Path:
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    label = dataset_label(data, dataset_name or "expert dataset")
    results = analyse(runs, data, resamples=resamples, seed=seed)
    results["dataset"] = label
    results = strict_json_ready(results)
    (folder / "results.json").write_text(json.dumps(results, indent=2, default=str, allow_nan=False))
    with (folder / "per_sample.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "expert_score"] + [f"{r.name}" for r in runs] + [f"{r.name}_reason" for r in runs])
        for i in range(len(data)):
            writer.writerow([data[i]["id"], data[i]["expert_score"]] + [r.scores[i] for r in runs]
                            + [r.reasons[i] if r.reasons else None for r in runs])
    plots = _plots(runs, data, folder)
    report = build_report(results, label, plots)
    (folder / "summary.md").write_text(to_markdown(report))
    (folder / "report.html").write_text(to_html(report, folder), encoding="utf-8")
    return folder
