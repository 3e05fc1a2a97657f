"""The schema every expert-dataset converter produces, so meta-evaluation and lm-eval tasks read any of them.

Core columns: id, dataset, reference, candidate, expert_score (the dataset's headline expert judgment),
expert_higher_is_better, expert_significant / expert_insignificant (mean counts for error categories
(a)-(f) or 1-6, empty when the dataset has none), site; converters add their own columns beside them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

CORE_COLUMNS = ("id", "dataset", "reference", "candidate", "expert_score", "expert_higher_is_better",
                "expert_significant", "expert_insignificant", "site")

DATASET_CARD_TEMPLATE = Path(__file__).resolve().parents[2] / "hub_cards" / "dataset.md"


def read_csv_rows(path: Path, required: tuple[str, ...], what: str) -> list[dict[str, str]]:
    """Rows of a CSV the user downloaded; a missing file or column is an error naming the file and columns."""
    import csv

    from radmetrics.errors import InputError

    if not path.is_file():
        raise InputError(f"{what} file not found: {path}")
    with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: spreadsheet exports start with a BOM
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: missing column(s) {', '.join(missing)}; columns are {reader.fieldnames}")
        return list(reader)


def core_features():
    import datasets

    return {
        "id": datasets.Value("string"), "dataset": datasets.Value("string"),
        "reference": datasets.Value("string"), "candidate": datasets.Value("string"),
        "expert_score": datasets.Value("float64"), "expert_higher_is_better": datasets.Value("bool"),
        "expert_significant": datasets.Sequence(datasets.Value("float64")),
        "expert_insignificant": datasets.Sequence(datasets.Value("float64")),
        "site": datasets.Value("string"),
    }


def to_dataset(rows: list[dict[str, Any]], extra_features: dict[str, Any]):
    import datasets

    features = datasets.Features({**core_features(), **extra_features})
    return datasets.Dataset.from_list(rows, features=features)


def render_card(template_fields: dict[str, str]) -> str:
    from radmetrics.hub_cards import load_template

    return load_template("dataset").format(**template_fields)


def save_dataset(dataset, out_dir: str | Path, card_fields: dict[str, str]) -> Path:
    """save_to_disk plus the dataset card (README.md) beside the data."""
    out = Path(out_dir)
    dataset.save_to_disk(str(out))
    from radmetrics.hub.privacy import card_with_marker

    (out / "README.md").write_text(card_with_marker(render_card(card_fields)), encoding="utf-8")
    return out
