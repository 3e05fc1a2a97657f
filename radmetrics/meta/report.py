"""`radmetrics meta-eval`: score an expert dataset with one or more metrics and write a report folder.

results.json (every statistic with its settings), per_sample.csv, PNG plots (metric vs expert scatter;
detected vs annotated significant errors per category, like VERT Fig. 2; per-site box plots, like
ReXamine-Global Fig. 3) and summary.md with the tables.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radmetrics.meta import stats
from radmetrics.taxonomy import LETTERS


@dataclass
class MetricRun:
    name: str
    scores: list[float | None]
    higher_is_better: bool
    #: per sample significant counts (a)-(f), when the metric's judge writes them
    counts: list[list[int] | None] = field(default_factory=list)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    reasons: list[str | None] = field(default_factory=list)


def run_radmetrics_metric(name: str, data, judge_kwargs: dict[str, Any]) -> MetricRun:
    import radmetrics

    result = radmetrics.score(name, data["reference"], data["candidate"], **judge_kwargs)
    counts = [j.significant_errors() for j in result.judgments]
    return MetricRun(name, result.scores, radmetrics.get_scoring_system(name).higher_is_better, counts,
                     result.fingerprint, [j.reason for j in result.judgments])


def run_evaluate_metric(name: str, data) -> MetricRun:
    """Any other evaluate module (rouge, bertscore, a local path) as a baseline: per-sample scores from
    its list output, or one compute() per sample when it only returns a corpus value."""
    import evaluate

    module = evaluate.load(name)
    preds, refs = list(data["candidate"]), list(data["reference"])
    out = module.compute(predictions=preds, references=refs)
    per_sample = next((v for v in out.values() if isinstance(v, list) and len(v) == len(preds)), None)
    if per_sample is None:
        key = next(k for k, v in out.items() if isinstance(v, (int, float)))
        per_sample = [module.compute(predictions=[p], references=[r])[key] for p, r in zip(preds, refs)]
    return MetricRun(name, [float(v) for v in per_sample], True, [None] * len(preds),
                     {"evaluate_module": name}, [None] * len(preds))


def _oriented(values, higher_is_better):
    return [None if v is None else (v if higher_is_better else -v) for v in values]


def analyse(runs: list[MetricRun], data, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    expert = list(data["expert_score"])
    expert_up = _oriented(expert, bool(data[0]["expert_higher_is_better"]))
    annotated = ([len(x) == 6 for x in data["expert_significant"]] if "expert_significant" in data.column_names
                 else [False] * len(expert))
    out: dict[str, Any] = {"n": len(expert), "resamples": resamples, "seed": seed,
                           "orientation": "scores and expert values oriented so positive correlation = agreement",
                           "metrics": {}}
    for run in runs:
        judge_up = _oriented(run.scores, run.higher_is_better)
        entry: dict[str, Any] = {
            "kendall_tau_b": stats.kendall_tau(judge_up, expert_up, resamples=resamples, seed=seed).to_dict(),
            "spearman": stats.spearman(judge_up, expert_up, resamples=resamples, seed=seed).to_dict(),
            "num_unscored": sum(s is None for s in run.scores), "fingerprint": run.fingerprint,
        }
        idx = [i for i, c in enumerate(run.counts) if c is not None and annotated[i]]
        if idx:
            human = [data[i]["expert_significant"] for i in idx]
            model = [run.counts[i] for i in idx]
            entry["mae_significant_errors"] = stats.mae([sum(m) for m in model], [sum(h) for h in human])
            entry["category_accuracy"] = dict(zip(LETTERS, stats.category_accuracy(model, human)))
            entry["error_type_f1"] = dict(zip(LETTERS, stats.error_type_f1(
                [[round(v) for v in h] for h in human], model)))
        out["metrics"][run.name] = entry
    if len(runs) > 1:
        out["pairwise_randomization"] = []
        for i, a in enumerate(runs):
            for b in runs[i + 1:]:
                keep = [k for k in range(len(expert)) if a.scores[k] is not None and b.scores[k] is not None]
                if len(keep) >= 3:
                    test = stats.paired_randomization_test(
                        [_oriented(a.scores, a.higher_is_better)[k] for k in keep],
                        [_oriented(b.scores, b.higher_is_better)[k] for k in keep],
                        [expert_up[k] for k in keep], trials=resamples, seed=seed)
                    out["pairwise_randomization"].append({"a": a.name, "b": b.name, **test})
    if "site" in data.column_names and len(set(data["site"])) > 1:
        out["per_site_spearman"] = {run.name: stats.per_site_spearman(
            _oriented(run.scores, run.higher_is_better), expert_up, list(data["site"]), resamples=resamples, seed=seed)
            for run in runs}
    return out


def _plots(runs: list[MetricRun], data, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    expert = list(data["expert_score"])
    for run in runs:
        fig, ax = plt.subplots(figsize=(4.5, 4))
        pts = [(e, s) for e, s in zip(expert, run.scores) if s is not None]
        if pts:
            ax.scatter(*zip(*pts), alpha=0.7)
        ax.set_xlabel("expert score")
        ax.set_ylabel(run.name)
        ax.set_title(f"{run.name} vs experts (n={len(pts)})")
        fig.tight_layout()
        name = f"scatter_{run.name.replace('/', '_')}.png"
        fig.savefig(folder / name, dpi=120)
        plt.close(fig)
        written.append(name)
        idx = [i for i, c in enumerate(run.counts) if c is not None
               and "expert_significant" in data.column_names and len(data[i]["expert_significant"]) == 6]
        if idx:
            detected = [sum(run.counts[i][k] for i in idx) for k in range(6)]
            annotated = [sum(data[i]["expert_significant"][k] for i in idx) for k in range(6)]
            fig, ax = plt.subplots(figsize=(5, 3.5))
            x = range(6)
            ax.bar([v - 0.2 for v in x], annotated, width=0.4, label="annotated (expert mean)")
            ax.bar([v + 0.2 for v in x], detected, width=0.4, label=f"detected ({run.name})")
            ax.set_xticks(list(x), [f"({c})" for c in LETTERS])
            ax.set_ylabel("clinically significant errors")
            ax.legend()
            fig.tight_layout()
            name = f"error_counts_{run.name}.png"
            fig.savefig(folder / name, dpi=120)
            plt.close(fig)
            written.append(name)
    if "site" in data.column_names and len(set(data["site"])) > 1:
        sites = sorted(set(data["site"]))
        fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3.5), squeeze=False)
        for ax, run in zip(axes[0], runs):
            ax.boxplot([[s for s, site in zip(run.scores, data["site"]) if site == t and s is not None]
                        for t in sites], tick_labels=sites)
            ax.set_title(run.name)
        fig.tight_layout()
        fig.savefig(folder / "per_site.png", dpi=120)
        plt.close(fig)
        written.append("per_site.png")
    return written


def _summary_markdown(results: dict[str, Any], dataset_name: str, plots: list[str]) -> str:
    lines = [f"# Meta-evaluation on {dataset_name} (n = {results['n']})", "",
             f"Correlations: {results['orientation']}; 95% percentile bootstrap CIs over "
             f"{results['resamples']} resamples (seed {results['seed']}).", "",
             "| metric | Kendall τ-b [95% CI] | Spearman ρ [95% CI] | MAE sig. errors | unscored |",
             "| --- | --- | --- | --- | ---: |"]
    for name, m in results["metrics"].items():
        k, s = m["kendall_tau_b"], m["spearman"]
        mae = m.get("mae_significant_errors")
        mae_text = "n/a" if not mae else f"{mae['mae']:.2f} ± {mae['std']:.2f}"
        lines.append(f"| {name} | {k['value']:.3f} [{k['ci_low']:.3f}, {k['ci_high']:.3f}] | "
                     f"{s['value']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}] | {mae_text} | {m['num_unscored']} |")
    for name, m in results["metrics"].items():
        if "error_type_f1" in m:
            lines += ["", f"Error-type F1 for {name} (VERT App. C):", "", "| category | precision | recall | F1 | accuracy |",
                      "| --- | ---: | ---: | ---: | ---: |"]
            for c in LETTERS:
                f = m["error_type_f1"][c]
                lines.append(f"| ({c}) | {f['precision']:.2f} | {f['recall']:.2f} | {f['f1']:.2f} | "
                             f"{m['category_accuracy'][c]:.2f} |")
    if results.get("pairwise_randomization"):
        lines += ["", "Paired approximate-randomization tests (difference in Kendall τ):", "",
                  "| A | B | τ(A) − τ(B) | p |", "| --- | --- | ---: | ---: |"]
        lines += [f"| {t['a']} | {t['b']} | {t['difference']:.3f} | {t['p_value']:.3f} |"
                  for t in results["pairwise_randomization"]]
    lines += ["", "Plots: " + ", ".join(f"![{p}]({p})" for p in plots), ""]
    return "\n".join(lines)


def write_report(runs: list[MetricRun], data, out_dir: str | Path, dataset_name: str, resamples: int = 1000,
                 seed: int = 0) -> Path:
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    results = analyse(runs, data, resamples=resamples, seed=seed)
    results["dataset"] = dataset_name
    (folder / "results.json").write_text(json.dumps(results, indent=2, default=str))
    with (folder / "per_sample.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "expert_score"] + [f"{r.name}" for r in runs] + [f"{r.name}_reason" for r in runs])
        for i in range(len(data)):
            writer.writerow([data[i]["id"], data[i]["expert_score"]] + [r.scores[i] for r in runs]
                            + [r.reasons[i] if r.reasons else None for r in runs])
    plots = _plots(runs, data, folder)
    (folder / "summary.md").write_text(_summary_markdown(results, dataset_name, plots))
    return folder
