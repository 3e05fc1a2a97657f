"""Reading report pairs (JSONL or CSV) and writing per-row results."""
from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError

REFERENCE_ALIASES = ("reference", "references", "ref", "ground_truth", "gt_report", "gt", "target",
                     "reference_report", "findings")
CANDIDATE_ALIASES = ("candidate", "candidates", "prediction", "predictions", "pred", "hypothesis", "hyp",
                     "generated", "generated_report", "candidate_report")


@dataclass
class PairFile:
    rows: list[dict[str, Any]]
    reference_column: str
    candidate_column: str
    #: row index -> why the line could not be read (it is kept as an unscored row)
    bad_rows: dict[int, str]
    decoding_errors: int = 0


def _pick(columns: Iterable[str], aliases: tuple[str, ...], wanted: str | None, kind: str, path: Path) -> str:
    columns = list(columns)
    if wanted:
        if wanted not in columns:
            raise InputError(f"{path}: no column '{wanted}' for the {kind}; columns are: {', '.join(columns)}")
        return wanted
    lowered = {c.lower().strip(): c for c in columns}
    for alias in aliases:
        if alias in lowered:
            return lowered[alias]
    raise InputError(
        f"{path}: no {kind} column. Expected one of: {', '.join(aliases)} (or pass --{kind}-column); "
        f"columns are: {', '.join(columns) or '(none)'}"
    )


def read_pairs(path: str | os.PathLike, reference_column: str | None = None,
               candidate_column: str | None = None) -> PairFile:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Input file not found: {path}")
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")  # a stray byte must not stop a run; counted below
    decoding_errors = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    rows: list[dict[str, Any]] = []
    bad: dict[int, str] = {}
    if path.suffix.lower() in {".csv", ".tsv"}:
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        columns = reader.fieldnames or []
        for row in reader:
            rows.append({k: v for k, v in row.items() if k is not None})
    else:
        columns_seen: dict[str, None] = {}
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"a JSON {type(row).__name__}, not an object")
            except ValueError as e:
                bad[len(rows)] = f"line {lineno} is not a JSON object ({str(e)[:80]})"
                rows.append({"_line": lineno})
                continue
            columns_seen.update(dict.fromkeys(row))
            rows.append(row)
        columns = list(columns_seen)
    ref = _pick(columns, REFERENCE_ALIASES, reference_column, "reference", path)
    cand = _pick(columns, CANDIDATE_ALIASES, candidate_column, "candidate", path)
    return PairFile(rows, ref, cand, bad, decoding_errors)


def read_references(path: str | os.PathLike, column: str | None = None) -> list[str]:
    """Reports of one column (a reference alias by default) from JSONL or CSV; empty ones are dropped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Input file not found: {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    name = _pick(columns, REFERENCE_ALIASES, column, "reference", path)
    return [r[name] for r in rows if isinstance(r.get(name), str) and r[name].strip()]


#: results formats, by the output file's extension
OUTPUT_FORMATS = {".jsonl": "JSON lines", ".json": "JSON lines", ".csv": "CSV", ".parquet": "Parquet"}


def check_output_path(path: str | os.PathLike) -> str:
    """The results format the extension names; anything else is refused before any work is done (a
    `.parquet` file must not silently hold JSON lines)."""
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise InputError(f"--output {path}: unknown results format '{suffix or '(no extension)'}'; use one of "
                         f"{', '.join(sorted(OUTPUT_FORMATS))}")
    if suffix == ".parquet":
        from radmetrics.errors import optional_import

        optional_import("pyarrow", "evaluate", "to write .parquet results")
    return suffix


def write_rows(path: str | os.PathLike, rows: list[dict[str, Any]]) -> None:
    """Write atomically (temp file + rename) so a killed run never leaves half a results file.
    The format follows the extension (check_output_path)."""
    path = Path(path)
    if check_output_path(path) == ".parquet":
        return _write_parquet(path, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            if path.suffix.lower() == ".csv":
                flat = [{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()} for r in rows]
                fields = list(dict.fromkeys(k for r in flat for k in r))
                writer = csv.DictWriter(fh, fieldnames=fields)
                writer.writeheader()
                writer.writerows(flat)
            else:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    """Parquet through pyarrow; nested fields (details, fingerprint, counts) as JSON text, so that rows
    whose details differ in shape still share one schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    flat = [{k: json.dumps(v, ensure_ascii=False, default=str) if isinstance(v, (dict, list)) else v
             for k, v in r.items()} for r in rows]
    fields = list(dict.fromkeys(k for r in flat for k in r))
    table = pa.Table.from_pylist([{k: r.get(k) for k in fields} for r in flat])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
