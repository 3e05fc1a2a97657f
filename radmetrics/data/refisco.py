"""ReFiSco (Tian et al. 2023; the line-level annotations FineRadScore evaluates on) -> radmetrics schema.

Input: one CSV row per candidate line, in the columns of the annotation sheet FineRadScore shows (Fig. 3):
report_id, ground_truth, "Impression lines" (the candidate's line; empty for an inserted line),
"Corrected line" (the correction; "[delete]" deletes; empty = correct line), "Error clinical severity",
"Comments". Lines keep their order within a report. Severity numbers follow FineRadScore (Not actionable 1,
Actionable nonurgent 2, Urgent 3, Emergent 4; Invalid comparison counts as 1); expert_score = sum of line
severities (FineRadScore Sec. 7), lower is better; the per-line corrections are kept as JSON.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from radmetrics.data.schema import PHYSIONET_LICENSE, read_csv_rows
from radmetrics.errors import InputError
from radmetrics.finerad_score.parse import SEVERITY

COLUMNS = ("report_id", "ground_truth", "Impression lines", "Corrected line", "Error clinical severity", "Comments")


def read_refisco(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if path.is_dir():
        found = sorted(path.glob("*.csv"))
        if len(found) != 1:
            raise InputError(f"{path}: expected one ReFiSco CSV, found {[f.name for f in found]}")
        path = found[0]
    lines = read_csv_rows(path, COLUMNS, "ReFiSco")
    reports: dict[str, dict[str, Any]] = {}
    previous_id = None
    for number, row in enumerate(lines, 2):
        _check_same_report(reports.get(row["report_id"]), row, previous_id, f"{path.name} line {number}")
        previous_id = row["report_id"]
        report = reports.setdefault(row["report_id"], {"ground_truth": row["ground_truth"], "lines": [],
                                                        "first_line": number})
        label = (row["Error clinical severity"] or "").strip()
        severity = 0 if label.lower() in {"", "no error"} else SEVERITY.get(label.lower().rstrip("."))
        if severity is None:
            raise InputError(f"{path.name} line {number}: unknown severity {label!r}")
        report["lines"].append({"candidate": row["Impression lines"].strip(), "corrected": row["Corrected line"].strip(),
                                "severity": severity, "severity_label": label, "comments": row["Comments"].strip()})
    rows = []
    for report_id, report in reports.items():
        candidate = " ".join(line["candidate"] for line in report["lines"] if line["candidate"])
        rows.append({"id": f"refisco-{report_id}", "dataset": "refisco", "reference": report["ground_truth"],
                     "candidate": candidate, "expert_score": float(sum(line["severity"] for line in report["lines"])),
                     "expert_higher_is_better": False, "expert_significant": [], "expert_insignificant": [],
                     "site": "MIMIC-CXR", "report_id": report_id, "line_annotations": json.dumps(report["lines"]),
                     "expert_severity_max": max((line["severity"] for line in report["lines"]), default=0),
                     "corrected_lines": sum(1 for line in report["lines"] if line["severity"] and line["candidate"]),
                     "inserted_lines": sum(1 for line in report["lines"] if not line["candidate"] and line["corrected"])})
    return rows


def _check_same_report(report: dict[str, Any] | None, row: dict[str, str], previous_id: str | None, where: str):
    """A report's lines come together, under one ground truth. A report_id seen again after another report (a file
    concatenated twice, two exports joined) would add its severities twice, so it is an error naming both lines."""
    if report is None:
        return
    if row["report_id"] != previous_id:
        raise InputError(f"{where}: report_id {row['report_id']!r} again, after other reports (its lines start at "
                         f"line {report['first_line']}); a report's lines must be together, each once")
    if row["ground_truth"] != report["ground_truth"]:
        raise InputError(f"{where}: report_id {row['report_id']!r} has a different ground_truth from line "
                         f"{report['first_line']}")


def refisco_dataset(path: str | Path):
    import datasets

    from radmetrics.data.schema import to_dataset

    return to_dataset(read_refisco(path), {
        "report_id": datasets.Value("string"), "line_annotations": datasets.Value("string"),
        "expert_severity_max": datasets.Value("int64"), "corrected_lines": datasets.Value("int64"),
        "inserted_lines": datasets.Value("int64")})


CARD = {
    "license": "other", **PHYSIONET_LICENSE, "pretty_name": "ReFiSco line-level corrections (radmetrics format)", "converter": "refisco",
    "description": "Radiologists corrected AI-generated chest X-ray impressions line by line (substitute, delete or "
                   "insert) and rated each correction's clinical severity.",
    "expert_score_meaning": "sum of line severities (Not actionable 1 ... Emergent 4); lower is better",
    "extra_columns": "`report_id`, `line_annotations` (JSON per line: candidate, corrected, severity, comments), "
                     "`expert_severity_max`, `corrected_lines`, `inserted_lines`",
    "source": "ReFiSco (Tian et al. 2023), as annotated for FineRadScore; reports from MIMIC-CXR.",
    "access": "Derived from PhysioNet data: keep private (radmetrics refuses to push it with --public).",
    "citation": "Huang, A. et al. FineRadScore, ML4H 2024; Tian, K. et al. 2023 (ReFiSco).",
}
