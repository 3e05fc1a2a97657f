"""RadEval expert dataset (Xu et al. 2025; IAMJB/RadEvalExpertDataset, reader_study_final_with_annotationsv3.csv)
-> the radmetrics expert-dataset schema.

Columns: annotator, type (findings/impression), ground_truth, images_path, prediction1-3, annotation1-3.
Each annotation is free text: a "Clinically significant errors:" and an "insignificant" section, each with
numbered lines 1-7 (the six RadCliQ categories and 7 = inarticulate report / grammar) ending in a count
("1. False prediction of finding: 2"), or just the count ("1. 2"). A blank or unreadable annotation is
reported and its counts left missing, never read as zeros. expert_score = significant errors in
categories 1-6 (lower is better).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from radmetrics.data.schema import read_csv_rows

FILE = "reader_study_final_with_annotationsv3.csv"
COLUMNS = ("annotator", "type", "ground_truth", "prediction1", "prediction2", "prediction3", "annotation1",
           "annotation2", "annotation3")
_HEADER = re.compile(r"\s*(?:clinically\s+)?(insignificant|significant)(?:\s+errors)?\s*:\s*$", re.I)
_ITEM = re.compile(r"\s*([1-7])[.)]\s*(.*)$")
_COUNT = re.compile(r"(?:[:=]\s*|^\s*)([0-9]+)\s*[.;]?\s*$")


def parse_annotation(text: str) -> tuple[list[int], list[int]]:
    """(significant[7], insignificant[7]); raises ValueError naming the problem."""
    if not text or not text.strip():
        raise ValueError("blank annotation")
    counts: dict[str, list[int | None]] = {"significant": [None] * 7, "insignificant": [None] * 7}
    section = None
    for line in text.splitlines():
        if not line.strip():
            continue
        header = _HEADER.fullmatch(line)
        if header:
            section = header.group(1).lower()
            continue
        item = _ITEM.match(line)
        if not item:
            raise ValueError(f"unrecognized line {line.strip()[:60]!r}")
        if section is None:
            raise ValueError("category line before any significant/insignificant header")
        count = _COUNT.search(item.group(2))
        if not count:
            raise ValueError(f"no count in {line.strip()[:60]!r}")
        counts[section][int(item.group(1)) - 1] = int(count.group(1))
    for section, values in counts.items():
        if all(v is None for v in values):
            raise ValueError(f"no {section} section")
    return ([v or 0 for v in counts["significant"]], [v or 0 for v in counts["insignificant"]])


def read_radeval(folder: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    path = Path(folder)
    path = path / FILE if path.is_dir() else path
    source = read_csv_rows(path, COLUMNS, "RadEval")
    rows, problems = [], []
    for line, row in enumerate(source, 2):
        for slot in (1, 2, 3):
            try:
                sig, insig = parse_annotation(row[f"annotation{slot}"])
                problem = None
            except ValueError as e:
                sig = insig = None
                problem = f"{path.name} line {line}, annotation{slot}: {e}"
                problems.append(problem)
            rows.append({
                "id": f"radeval-{line - 2}-{slot}", "dataset": "radeval", "reference": row["ground_truth"],
                "candidate": row[f"prediction{slot}"], "expert_score": None if sig is None else float(sum(sig[:6])),
                "expert_higher_is_better": False, "expert_significant": [] if sig is None else [float(v) for v in sig[:6]],
                "expert_insignificant": [] if insig is None else [float(v) for v in insig[:6]],
                "site": row.get("images_path", "").split("/")[0] or "unknown",
                "annotator": row["annotator"], "section": row["type"], "slot": slot,
                "grammar_significant": None if sig is None else sig[6],
                "grammar_insignificant": None if insig is None else insig[6],
                "annotation_problem": problem,
            })
    return rows, problems


def radeval_dataset(folder: str | Path):
    import datasets

    from radmetrics.data.schema import to_dataset

    rows, _ = read_radeval(folder)
    return to_dataset(rows, {
        "annotator": datasets.Value("string"), "section": datasets.Value("string"), "slot": datasets.Value("int64"),
        "grammar_significant": datasets.Value("int64"), "grammar_insignificant": datasets.Value("int64"),
        "annotation_problem": datasets.Value("string"),
    })


CARD = {
    "license": "mit", "pretty_name": "RadEval expert annotations (radmetrics format)", "converter": "radeval",
    "description": "Radiologists counted clinically significant and insignificant errors in six RadCliQ categories "
                   "plus inarticulate report/grammar for three candidate reports per chest X-ray study (MIMIC-CXR, "
                   "CheXpert-Plus, ReXGradient-160K). Unreadable or blank annotations are kept with "
                   "`annotation_problem` set and no expert score.",
    "expert_score_meaning": "clinically significant errors in categories 1-6; lower is better; null when the "
                            "annotation could not be read",
    "extra_columns": "`annotator`, `section` (findings/impression), `slot` (1-3), `grammar_significant`, "
                     "`grammar_insignificant`, `annotation_problem`",
    "source": "https://huggingface.co/datasets/IAMJB/RadEvalExpertDataset (MIT; MIMIC-CXR's data use agreement "
              "still applies to MIMIC reports).",
    "access": "Contains MIMIC-CXR text: keep private unless your data use agreement allows otherwise.",
    "citation": "Xu, J. et al. RadEval: A framework for radiology text evaluation. EMNLP 2025 (demos).",
}
