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

#: the PhysioNet licence of the credentialed datasets (ReXVal; MIMIC-derived RaTE-Eval, ReFiSco)
PHYSIONET_LICENSE = {"license_name": "physionet-credentialed-health-data-license-1.5.0",
                     "license_link": "https://physionet.org/about/licenses/physionet-credentialed-health-data-license-150/"}


def read_yes_no(value: Any, where: str, column: str) -> bool:
    """A yes/no flag as the converters read it from text (a CSV cell, "False", "0") or from a bool or 0/1: every
    reader of a flag takes the same words. Anything else is a one-line InputError naming WHERE and COLUMN."""
    from radmetrics.errors import InputError

    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "y", "1.0"}:
        return True
    if text in {"0", "false", "no", "n", "0.0"}:
        return False
    raise InputError(f"{where}: {column} = {value!r} is not a yes/no value")


def read_count(value: Any, where: str, column: str) -> int:
    """A count of errors: a whole number >= 0, written "2" or "2.0". 2.7, inf, nan or -1 is a one-line InputError
    naming WHERE and COLUMN, never truncated to an int (2.7 is not 2 errors)."""
    import math

    from radmetrics.errors import InputError

    try:
        number = float(str(value).strip())
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise InputError(f"{where}: {column} = {value!r} is not a count of errors (a whole number >= 0)")
    return int(number)


def read_csv_rows(path: Path, required: tuple[str, ...], what: str) -> list[dict[str, str]]:
    """Rows of a CSV the user downloaded; a missing file or column is an error naming the file and columns, and
    so is a row with more or fewer fields than the header (review 39b: a download cut inside a quoted field read
    as a last row whose cut text was a candidate and whose later columns were None, converted without a word)."""
    import csv

    from radmetrics.errors import InputError

    if not path.is_file():
        raise InputError(f"{what} file not found: {path}")
    from radmetrics.io import ends_inside_quotes, not_utf8_file

    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: spreadsheet exports start with a BOM
            lines = fh.readlines()  # a download of a few thousand rows; kept to read the last record's own text
            reader = csv.reader(lines)
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path} is empty: a {what} CSV needs the columns {', '.join(required)}")
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(f"{path}: missing column(s) {', '.join(missing)}; columns are {header}")
            rows, first = [], reader.line_num + 1
            for fields in reader:
                if fields and len(fields) != len(header):
                    where = (f"line {first}" if reader.line_num == first
                             else f"lines {first}-{reader.line_num} (read as one record)")
                    why = ("an unquoted comma?" if len(fields) > len(header)
                           else f'a file cut short, or an unmatched " on line {first}?')
                    raise InputError(f"{path} {where}: {len(fields)} field{'s' if len(fields) != 1 else ''}, the "
                                     f"header has {len(header)} ({why}); fix the file or download it again")
                if fields and reader.line_num == len(lines) and ends_inside_quotes("".join(lines[first - 1:])):
                    # a download cut inside its last field's quotes keeps the header's number of fields (session 33:
                    # converted without a word, the cut text a whole report)
                    raise InputError(f"{path} line {first}: the file ends inside a quoted field, whose closing quote "
                                     "never comes (a download cut short?); download it again")
                if fields:  # a blank line is no row, as csv.DictReader reads it
                    rows.append(dict(zip(header, fields)))
                first = reader.line_num + 1
            return rows
    except UnicodeDecodeError as e:  # an Excel / Latin-1 export, or not text at all
        raise InputError(not_utf8_file(path, e)) from None
    except csv.Error as e:
        raise InputError(f"{path}: not a readable CSV ({e})") from None


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


def size_category(num_rows: int) -> str:
    """The Hub's size_categories bucket for a row count (n<1K, 1K<n<10K, ..., n>1T)."""
    bounds = [(10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"), (10**6, "100K<n<1M"),
              (10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B"), (10**10, "1B<n<10B"),
              (10**11, "10B<n<100B"), (10**12, "100B<n<1T")]
    return next((name for bound, name in bounds if num_rows < bound), "n>1T")


def render_card(template_fields: dict[str, str]) -> str:
    """The dataset card; the metadata follows the Hub's rules (a computed size category; a licence that is
    not on the Hub's list is `other` with its name and link)."""
    from radmetrics.hub_cards import load_template

    fields = dict(template_fields)
    details = ""
    if fields["license"] == "other":
        details = f"\nlicense_name: {fields['license_name']}\nlicense_link: {fields['license_link']}"
    fields.setdefault("license_details", details)
    fields.setdefault("size_category", size_category(int(fields["num_rows"])))
    return load_template("dataset").format(**fields)


def save_dataset(dataset, out_dir: str | Path, card_fields: dict[str, str]) -> Path:
    """save_to_disk plus the dataset card (README.md) beside the data."""
    from radmetrics.hub_cards import card_with_marker
    from radmetrics.io import owner_only, staged_folder

    out = Path(out_dir)
    # the expert data's reports (credentialed data among them): readable by you only; staged: a kill while writing
    # leaves no dataset without its card
    with owner_only(out), staged_folder(out) as staging:
        dataset.save_to_disk(str(staging))
        (staging / "README.md").write_text(card_with_marker(render_card(card_fields)), encoding="utf-8")
    return out
