"""RaTE-Eval paragraph level (Zhao et al. 2024) -> the radmetrics expert-dataset schema.

Input: a CSV (or JSONL) with gt_report, similar_report and Score (the expert score, 0-5), as in the
RaTE-Eval paragraph-level release. expert_score = Score / 5 so that it reads on VERT's 0-1 scale
(VERT Sec. 3, App. A Fig. 6); higher is better.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from radmetrics.data.schema import PHYSIONET_LICENSE
from radmetrics.errors import InputError

SCALE = 5.0


def read_rate_eval(path: str | Path) -> list[dict[str, Any]]:
    from radmetrics.io import read_pairs

    path = Path(path)
    if path.is_dir():
        found = sorted([*path.glob("*.csv"), *path.glob("*.jsonl")])
        if len(found) != 1:
            raise InputError(f"{path}: expected one RaTE-Eval CSV/JSONL file, found {[f.name for f in found]}")
        path = found[0]
    pairs = read_pairs(path, reference_column="gt_report", candidate_column="similar_report")
    rows = []
    for i, row in enumerate(pairs.rows):
        if i in pairs.bad_rows:
            raise InputError(f"{path} {pairs.bad_rows[i]}")
        try:
            score = float(row["Score"])
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path} line {pairs.lines[i]}: no numeric 'Score' ({e})") from e
        if not 0 <= score <= SCALE:
            raise InputError(f"{path} line {pairs.lines[i]}: Score {score} outside 0-{SCALE:g}")
        rows.append({"id": f"rate_eval-{i}", "dataset": "rate_eval", "reference": row["gt_report"],
                     "candidate": row["similar_report"], "expert_score": score / SCALE,
                     "expert_higher_is_better": True, "expert_significant": [], "expert_insignificant": [],
                     "site": str(row.get("modality") or row.get("anatomy") or "MIMIC-IV"),
                     "raw_score": score})
    return rows


def rate_eval_dataset(path: str | Path):
    import datasets

    from radmetrics.data.schema import to_dataset

    return to_dataset(read_rate_eval(path), {"raw_score": datasets.Value("float64")})


CARD = {
    "license": "other", **PHYSIONET_LICENSE, "pretty_name": "RaTE-Eval paragraph level (radmetrics format)", "converter": "rate_eval",
    "description": "Reference reports from MIMIC-IV across imaging modalities and anatomies, each paired with a "
                   "candidate report and an expert score from 0 to 5.",
    "expert_score_meaning": "expert score / 5, in [0, 1]; higher is better (raw value in `raw_score`)",
    "extra_columns": "`raw_score`",
    "source": "RaTE-Eval (Zhao et al. 2024), paragraph-level benchmark; derived from MIMIC-IV (PhysioNet).",
    "access": "Derived from PhysioNet data: keep private (radmetrics refuses to push it with --public).",
    "citation": "Zhao, W. et al. RaTEScore: A metric for radiology report generation. EMNLP 2024.",
}
