"""ReXVal (Yu et al. 2023, PhysioNet rexval-dataset 1.0.0) -> the radmetrics expert-dataset schema.

Inputs, as downloaded from PhysioNet (credentialed access):
- 50_samples_gt_and_candidates.csv: study_id, gt_report, and one candidate column per generation method
  (radgraph, bertscore, s_emb, bleu): 50 studies x 4 candidates = 200 pairs;
- 6_valid_raters_per_rater_error_categories.csv: study_number (0-based row of the first file),
  candidate_type, rater_index, error_category (1-6), clinically_significant, num_errors.
Output: per pair, each rater's counts per category and significance, their means, and
expert_score = mean number of clinically significant errors (lower is better; GREEN Sec. 4.1).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from radmetrics.data.schema import PHYSIONET_LICENSE, read_count, read_csv_rows, read_yes_no
from radmetrics.errors import InputError

CANDIDATE_TYPES = ("radgraph", "bertscore", "s_emb", "bleu")
REPORTS_FILE = "50_samples_gt_and_candidates.csv"
RATERS_FILE = "6_valid_raters_per_rater_error_categories.csv"
RATER_COLUMNS = ("study_number", "candidate_type", "rater_index", "error_category", "clinically_significant",
                 "num_errors")


def read_rexval(folder: str | Path) -> list[dict[str, Any]]:
    folder = Path(folder)
    if folder.is_file():
        raise InputError(f"{folder}: ReXVal is two files ({REPORTS_FILE}, {RATERS_FILE}); give their folder")
    reports = read_csv_rows(folder / REPORTS_FILE, ("study_id", "gt_report"), "ReXVal")
    types = [t for t in CANDIDATE_TYPES if t in reports[0]] if reports else []
    if not types:
        raise InputError(f"{folder / REPORTS_FILE}: no candidate columns ({', '.join(CANDIDATE_TYPES)})")
    raters = read_csv_rows(folder / RATERS_FILE, RATER_COLUMNS, "ReXVal")
    # counts[(study, type)][rater] = ([sig x6], [insig x6])
    counts: dict[tuple[int, str], dict[int, tuple[list[int], list[int]]]] = defaultdict(dict)
    first_line: dict[tuple, int] = {}  # (study, type, rater, category, significant) -> the line that gave it
    for line, row in enumerate(raters, 2):
        where = f"{RATERS_FILE} line {line}"
        try:
            study, rater, category = int(row["study_number"]), int(row["rater_index"]), int(row["error_category"])
        except ValueError as e:
            raise InputError(f"{where}: {e}") from e
        n = read_count(row["num_errors"], where, "num_errors")
        if not 0 <= study < len(reports) or row["candidate_type"] not in types or not 1 <= category <= 6:
            raise InputError(f"{where}: study_number {study}, candidate_type {row['candidate_type']!r}, "
                             f"error_category {category}, num_errors {n} out of range")
        significant = read_yes_no(row["clinically_significant"], where, "clinically_significant")
        key = (study, row["candidate_type"], rater, category, significant)
        if key in first_line:  # a concatenated or re-exported file: adding it again would change expert_score
            raise InputError(f"{where} repeats line {first_line[key]} (study_number {study}, candidate_type "
                             f"{row['candidate_type']!r}, rater_index {rater}, error_category {category}, "
                             f"clinically_significant {significant}): each rater gives one count per category "
                             f"and significance; remove the duplicate")
        first_line[key] = line
        sig, insig = counts[(study, row["candidate_type"])].setdefault(rater, ([0] * 6, [0] * 6))
        (sig if significant else insig)[category - 1] += n
    rows = []
    for study, report in enumerate(reports):
        for ctype in types:
            per_rater = counts.get((study, ctype), {})
            if not per_rater:
                raise InputError(f"no rater annotations for study_number {study}, candidate_type {ctype!r}")
            raters_sorted = sorted(per_rater)
            sig = [per_rater[r][0] for r in raters_sorted]
            insig = [per_rater[r][1] for r in raters_sorted]
            mean_sig = [sum(s[c] for s in sig) / len(sig) for c in range(6)]
            mean_insig = [sum(s[c] for s in insig) / len(insig) for c in range(6)]
            # the raters' mean total as one division: a sum of the per-category means in float leaves equal means a
            # last digit apart (37/6 as 6.166666666666666 or ...667), which rank correlations read as no tie
            sig_total, insig_total = sum(map(sum, sig)), sum(map(sum, insig))
            rows.append({
                "id": f"rexval-{study}-{ctype}", "dataset": "rexval", "reference": report["gt_report"],
                "candidate": report[ctype], "expert_score": sig_total / len(sig), "expert_higher_is_better": False,
                "expert_significant": mean_sig, "expert_insignificant": mean_insig, "site": "MIMIC-CXR",
                "study_number": study, "study_id": str(report["study_id"]), "candidate_type": ctype,
                "rater_index": raters_sorted, "rater_significant": sig, "rater_insignificant": insig,
                "expert_total_errors": (sig_total + insig_total) / len(sig),
            })
    return rows


def rexval_dataset(folder: str | Path):
    import datasets

    from radmetrics.data.schema import to_dataset

    ints = datasets.Sequence(datasets.Value("int64"))
    return to_dataset(read_rexval(folder), {
        "study_number": datasets.Value("int64"), "study_id": datasets.Value("string"),
        "candidate_type": datasets.Value("string"), "rater_index": ints,
        "rater_significant": datasets.Sequence(ints), "rater_insignificant": datasets.Sequence(ints),
        "expert_total_errors": datasets.Value("float64"),
    })


CARD = {
    "license": "other", **PHYSIONET_LICENSE, "pretty_name": "ReXVal (radmetrics format)", "converter": "rexval",
    "description": "Six board-certified radiologists counted clinically significant and insignificant errors in "
                   "six categories for 200 candidate chest X-ray reports (50 MIMIC-CXR studies × 4 generation "
                   "methods) against the reference report.",
    "expert_score_meaning": "mean number of clinically significant errors over raters; lower is better",
    "extra_columns": "`study_number`, `study_id`, `candidate_type`, `rater_index`, `rater_significant`, "
                     "`rater_insignificant` (per rater, 6 categories), `expert_total_errors`",
    "source": "PhysioNet, ReXVal 1.0.0: https://physionet.org/content/rexval-dataset/1.0.0/ "
              "(PhysioNet Credentialed Health Data License 1.5.0).",
    "access": "PhysioNet credentialed data: keep private; do not redistribute publicly "
              "(radmetrics refuses to push it with --public).",
    "citation": "Yu, F. et al. Evaluating progress in automatic chest X-ray radiology report generation. "
                "Patterns 4(9), 2023.",
}
