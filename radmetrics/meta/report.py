"""`radmetrics meta-eval`: score an expert dataset with one or more metrics and write a report folder.

results.json (every statistic with its settings), per_sample.csv, PNG plots (metric vs expert scatter;
detected vs annotated significant errors per category, like VERT Fig. 2; per-site box plots, like
ReXamine-Global Fig. 3) and summary.md with the tables.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from radmetrics.meta import runs as runs_module
from radmetrics.meta import stats, targets
from radmetrics.meta.runs import MetricRun
from radmetrics.taxonomy import LETTERS

__all__ = ["Ensemble", "MetricRun", "analyse", "run_evaluate_metric", "run_radmetrics_metric", "write_report"]


def run_radmetrics_metric(name: str, data, judge_kwargs: dict[str, Any]) -> MetricRun:
    return runs_module.run_radmetrics_metric(name, list(data["reference"]), list(data["candidate"]), judge_kwargs)


def run_evaluate_metric(name: str, data) -> MetricRun:
    return runs_module.run_evaluate_metric(name, list(data["reference"]), list(data["candidate"]))


def _oriented(values, higher_is_better):
    return [None if v is None else (v if higher_is_better else -v) for v in values]


def _subset(values, rows):
    return [values[i] for i in rows]


def _correlations(judge_up, expert_up, rows, resamples, seed) -> dict[str, Any]:
    a, b = _subset(judge_up, rows), _subset(expert_up, rows)
    return {"kendall_tau_b": stats.kendall_tau(a, b, resamples=resamples, seed=seed).to_dict(),
            "spearman": stats.spearman(a, b, resamples=resamples, seed=seed).to_dict()}


@dataclass
class Ensemble:
    """--ensemble average:green,bleu-4 or linear:green,vert (VERT Sec. 4.1.2)."""

    method: str
    members: list[str]

    @classmethod
    def parse(cls, spec: str) -> Ensemble:
        from radmetrics.errors import InputError

        method, sep, names = spec.partition(":")
        members = [m.strip() for m in names.split(",") if m.strip()]
        if not sep or method not in {"average", "linear"} or len(members) < 2:
            raise InputError(f"--ensemble {spec!r}: write average:METRIC,METRIC[,...] or linear:METRIC,METRIC[,...]")
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
        if ens.method == "average":
            scores = targets.zscore_average(columns)
            details[ens.name] = {"method": "mean of z-scored, oriented member scores", "members": ens.members}
        else:
            fit = targets.linear_ensemble(columns, expert_up, train, [], seed=seed)
            scores = fit.pop("predictions")
            details[ens.name] = {"method": "least squares on the oriented expert target", "members": ens.members,
                                 **fit}
        reasons = [None if s is not None else "a member metric is unscored for this row" for s in scores]
        made.append(MetricRun(ens.name, scores, True, [None] * n, {"ensemble": details[ens.name]}, reasons))
    return made, details


def _per_category(run: MetricRun, data, rows, resamples, seed) -> dict[str, Any] | None:
    """Per error category (a)-(f): the judge's count (or ER²Score's reward for the matching RadCliQ criterion)
    against the expert mean count for that category."""
    if "expert_significant" not in data.column_names:
        return None
    expert = [v if v is not None and len(v) == 6 else None for v in data["expert_significant"]]
    if any(c is not None for c in run.counts):
        columns = {x: ([None if c is None else -c[k] for c in run.counts], "count") for k, x in enumerate(LETTERS)}
    elif len(run.extra) == 6:
        columns = {x: (list(vals), name) for x, (name, vals) in zip(LETTERS, run.extra.items())}
    else:
        return None
    out = {}
    for k, (letter, (values, source)) in enumerate(columns.items()):
        expert_up = [None if e is None else -e[k] for e in expert]
        out[letter] = {"source": source, **_correlations(values, expert_up, rows, resamples, seed)}
    return out


def analyse(runs: list[MetricRun], data, resamples: int = 1000, seed: int = 0, target: str = "score",
            split: float | int | None = None, split_seed: int = 0, ensembles: list[Ensemble] | None = None,
            ) -> dict[str, Any]:
    expert, expert_higher, meaning = targets.expert_target(data, target)
    expert_up = _oriented(expert, expert_higher)
    train, test = targets.held_out(len(data), split, split_seed)
    extra_runs, ensemble_details = ensemble_runs(runs, ensembles or [], expert_up, train, seed)
    all_runs = list(runs) + extra_runs
    annotated = ([v is not None and len(v) == 6 for v in data["expert_significant"]]
                 if "expert_significant" in data.column_names else [False] * len(expert))
    out: dict[str, Any] = {
        "n": len(test), "n_dataset": len(data), "resamples": resamples, "seed": seed, "target": target,
        "target_meaning": meaning,
        "split": None if split is None else {"held_out": len(test), "train": len(train), "seed": split_seed,
                                             "test_ids": [data[i]["id"] for i in test]},
        "orientation": "scores and expert values oriented so positive correlation = agreement",
        "metrics": {}}
    for run in all_runs:
        entry: dict[str, Any] = {"higher_is_better": run.higher_is_better, "error": run.error,
                                 "num_unscored": sum(run.scores[i] is None for i in test),
                                 "fingerprint": run.fingerprint}
        entry.update(_correlations(_oriented(run.scores, run.higher_is_better), expert_up, test, resamples, seed))
        idx = [i for i in test if run.counts and run.counts[i] is not None and annotated[i]]
        if idx:
            human = [data[i]["expert_significant"] for i in idx]
            model = [run.counts[i] for i in idx]
            entry["mae_significant_errors"] = stats.mae([sum(m) for m in model], [sum(h) for h in human])
            entry["category_accuracy"] = dict(zip(LETTERS, stats.category_accuracy(model, human)))
            entry["error_type_f1"] = dict(zip(LETTERS, stats.error_type_f1(
                [[round(v) for v in h] for h in human], model)))
        if target == "per-category" or run.extra:
            per_category = _per_category(run, data, test, resamples, seed)
            if per_category:
                entry["per_category"] = per_category
        if run.extra:
            entry["criteria"] = {name: _correlations(vals, expert_up, test, resamples, seed)
                                 for name, vals in run.extra.items()}
        out["metrics"][run.name] = entry
    if ensemble_details:
        out["ensembles"] = ensemble_details
    raters = targets.inter_rater(data, "total" if target == "total" else "significant")
    if raters and target != "per-category":
        rows = {}
        for name in [k for k in raters if k.startswith("rater ")]:
            rows[name] = _correlations(raters[name], raters[f"others of {name}"], test, resamples, seed)
        taus = [r["kendall_tau_b"]["value"] for r in rows.values()]
        out["inter_rater"] = {"meaning": "each rater's error count against the mean of the other raters",
                              "raters": rows, "mean_kendall_tau_b": float(np.nanmean(taus)) if taus else None,
                              "mean_spearman": float(np.nanmean([r["spearman"]["value"] for r in rows.values()]))}
    judged = [r for r in all_runs if r.judge_label]
    if judged:
        table: dict[str, dict[str, Any]] = {}
        for r in judged:
            metric = r.name[: -len(r.judge_label) - 1]
            table.setdefault(r.judge_label, {})[metric] = out["metrics"][r.name]["kendall_tau_b"]["value"]
        out["judge_metric_kendall_tau_b"] = table
    ok = [r for r in all_runs if not r.error]
    if len(ok) > 1:
        out["pairwise_randomization"] = []
        for i, a in enumerate(ok):
            for b in ok[i + 1:]:
                keep = [k for k in test if a.scores[k] is not None and b.scores[k] is not None
                        and expert_up[k] is not None]
                if len(keep) >= 3:
                    test_result = stats.paired_randomization_test(
                        [_oriented(a.scores, a.higher_is_better)[k] for k in keep],
                        [_oriented(b.scores, b.higher_is_better)[k] for k in keep],
                        [expert_up[k] for k in keep], trials=resamples, seed=seed)
                    out["pairwise_randomization"].append({"a": a.name, "b": b.name, **test_result})
    if "site" in data.column_names and len(set(data["site"])) > 1:
        sites = [data["site"][i] for i in test]
        out["per_site_spearman"] = {run.name: stats.per_site_spearman(
            _subset(_oriented(run.scores, run.higher_is_better), test), _subset(expert_up, test), sites,
            resamples=resamples, seed=seed) for run in ok}
    out["_runs"] = all_runs  # for the outputs; removed before writing
    return out


def _file_safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.+@()=-]+", "_", name)[-120:]


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
        name = f"scatter_{_file_safe(run.name)}.png"
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
            name = f"error_counts_{_file_safe(run.name)}.png"
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


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _corr_cell(c: dict[str, Any]) -> str:
    if c["value"] is None or (isinstance(c["value"], float) and math.isnan(c["value"])):
        return f"n/a (n = {c['n']})"
    return f"{_num(c['value'])} [{_num(c['ci_low'])}, {_num(c['ci_high'])}]"


def _summary_markdown(results: dict[str, Any], dataset_name: str, plots: list[str]) -> str:
    split = results.get("split")
    rows_note = (f"held-out subset of {split['held_out']} of {results['n_dataset']} rows (seed {split['seed']})"
                 if split else f"all {results['n']} rows")
    lines = [f"# Meta-evaluation on {dataset_name} (n = {results['n']})", "",
             f"Target: {results['target']} ({results['target_meaning']}); {rows_note}.",
             f"Correlations: {results['orientation']}; 95% percentile bootstrap CIs over "
             f"{results['resamples']} resamples (seed {results['seed']}).", "",
             "| metric | Kendall τ-b [95% CI] | p | Spearman ρ [95% CI] | MAE sig. errors | unscored |",
             "| --- | --- | ---: | --- | --- | ---: |"]
    for name, m in results["metrics"].items():
        if m.get("error"):
            lines.append(f"| {name} | n/a: {m['error'][:120]} | | | | {m['num_unscored']} |")
            continue
        k, s = m["kendall_tau_b"], m["spearman"]
        mae = m.get("mae_significant_errors")
        mae_text = "n/a" if not mae else f"{mae['mae']:.2f} ± {mae['std']:.2f}"
        p = k["p_value"]
        p_text = "n/a" if p is None or (isinstance(p, float) and math.isnan(p)) else f"{p:.2g}"
        lines.append(f"| {name} | {_corr_cell(k)} | {p_text} | {_corr_cell(s)} | {mae_text} | {m['num_unscored']} |")
    inter = results.get("inter_rater")
    if inter:
        lines += ["", f"Inter-rater baseline ({inter['meaning']}); mean τ-b {_num(inter['mean_kendall_tau_b'])}, "
                      f"mean ρ {_num(inter['mean_spearman'])}:", "",
                  "| rater | Kendall τ-b [95% CI] | Spearman ρ [95% CI] |", "| --- | --- | --- |"]
        lines += [f"| {name} | {_corr_cell(r['kendall_tau_b'])} | {_corr_cell(r['spearman'])} |"
                  for name, r in inter["raters"].items()]
    table = results.get("judge_metric_kendall_tau_b")
    if table:
        metrics = sorted({m for row in table.values() for m in row})
        lines += ["", "Kendall τ-b by judge and metric:", "", "| judge | " + " | ".join(metrics) + " |",
                  "| --- | " + " | ".join("---:" for _ in metrics) + " |"]
        lines += [f"| {judge} | " + " | ".join(_num(row.get(m)) for m in metrics) + " |" for judge, row in table.items()]
    for name, m in results["metrics"].items():
        for key, title in (("per_category", "per error category (expert mean count per category)"),
                           ("criteria", "per criterion against the expert target")):
            if key in m:
                lines += ["", f"{name}, {title}:", "", "| | source | Kendall τ-b [95% CI] | Spearman ρ [95% CI] |",
                          "| --- | --- | --- | --- |"]
                lines += [f"| {c} | {v.get('source', '')} | {_corr_cell(v['kendall_tau_b'])} | {_corr_cell(v['spearman'])} |"
                          for c, v in m[key].items()]
    for name, m in results["metrics"].items():
        if "error_type_f1" in m:
            lines += ["", f"Error-type F1 for {name} (VERT App. C):", "", "| category | precision | recall | F1 | accuracy |",
                      "| --- | ---: | ---: | ---: | ---: |"]
            for c in LETTERS:
                f = m["error_type_f1"][c]
                lines.append(f"| ({c}) | {f['precision']:.2f} | {f['recall']:.2f} | {f['f1']:.2f} | "
                             f"{m['category_accuracy'][c]:.2f} |")
    for name, e in (results.get("ensembles") or {}).items():
        if "error" not in e:
            weights = "" if "weights" not in e or e["weights"] is None else \
                f"; weights {', '.join(f'{w:.3g}' for w in e['weights'])}, intercept {e['intercept']:.3g} ({e['scheme']})"
            lines += ["", f"Ensemble {name}: {e['method']}{weights}."]
    if results.get("pairwise_randomization"):
        lines += ["", "Paired approximate-randomization tests (difference in Kendall τ):", "",
                  "| A | B | τ(A) − τ(B) | p |", "| --- | --- | ---: | ---: |"]
        lines += [f"| {t['a']} | {t['b']} | {_num(t['difference'])} | {_num(t['p_value'])} |"
                  for t in results["pairwise_randomization"]]
    lines += ["", "Plots: " + ", ".join(f"![{p}]({p})" for p in plots), ""]
    return "\n".join(lines)


def write_report(runs: list[MetricRun], data, out_dir: str | Path, dataset_name: str, resamples: int = 1000,
                 seed: int = 0, target: str = "score", split: float | int | None = None, split_seed: int = 0,
                 ensembles: list[Ensemble] | None = None) -> Path:
    from radmetrics.meta.compare import _strict

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    results = analyse(runs, data, resamples=resamples, seed=seed, target=target, split=split,
                      split_seed=split_seed, ensembles=ensembles)
    all_runs = results.pop("_runs")
    results["dataset"] = dataset_name
    results = _strict(results)
    (folder / "results.json").write_text(json.dumps(results, indent=2, default=str, allow_nan=False))
    held = set(results["split"]["test_ids"]) if results.get("split") else None
    expert, _, _ = targets.expert_target(data, target)
    with (folder / "per_sample.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "split", "expert_score", "expert_target"] + [r.name for r in all_runs]
                        + [f"{r.name}_reason" for r in all_runs])
        for i in range(len(data)):
            part = "all" if held is None else ("test" if data[i]["id"] in held else "train")
            writer.writerow([data[i]["id"], part, data[i]["expert_score"], expert[i]] + [r.scores[i] for r in all_runs]
                            + [r.reasons[i] if r.reasons else None for r in all_runs])
    plots = _plots([r for r in all_runs if not r.error], data, folder)
    (folder / "summary.md").write_text(_summary_markdown(results, dataset_name, plots))
    return folder
