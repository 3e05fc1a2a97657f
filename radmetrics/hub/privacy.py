"""The privacy gate every push goes through (datasets, judges, Spaces): what may leave the machine, and where.

Three rules, checked before a byte is uploaded:
1. Data whose card or provenance says PhysioNet / credentialed access (ReXVal, RadEval's MIMIC reports,
   RaTE-Eval, ReFISco) is never pushed to a public repository, whatever the command or flag.
2. An existing repository's real visibility is read from the Hub API: adding to a public repository needs
   `--public` (before, a push "without --public" into an existing public repo uploaded into it while printing
   "private").
3. A README/card the user wrote is never replaced unless asked (`--overwrite-card`): cards radmetrics renders
   carry a marker with the hash of their text, so an unedited rendered card may be refreshed, an edited one not.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from radmetrics.errors import RadmetricsError
# the card stamp lives with the card templates, so dataset writers (radmetrics.data) need not import hub
from radmetrics.hub_cards import _CARD_MARKER, card_with_marker, strip_marker  # noqa: F401


class PushRefused(RadmetricsError):
    """A push the privacy rules forbid; the CLI prints it as one line (exit code 2)."""


#: words in a card that mark credentialed data (our dataset cards say them; so do PhysioNet's own)
_RESTRICTED_CARD = re.compile(r"physionet|credentialed|mimic-cxr|mimic-iv|mimic[ _-]?iii", re.IGNORECASE)
#: placeholder text of the default card transformers / peft write: not something a person wrote
_AUTO_CARD_HINTS = ("[More Information Needed]",)


def restricted_reasons(folder: str | Path) -> list[str]:
    """Why FOLDER holds data that must stay private (empty list: nothing found). Fails closed: a data file whose
    provenance cannot be read is a reason too."""
    from radmetrics.data import PHYSIONET_DERIVED

    folder = Path(folder)
    reasons: list[str] = []
    card = folder / "README.md"
    if card.is_file():
        hit = _RESTRICTED_CARD.search(card.read_text(encoding="utf-8", errors="replace"))
        if hit:
            reasons.append(f"its card (README.md) says '{hit.group(0)}'")
    names, unreadable = _dataset_names(folder)
    # "rexval", "ReXVal", "MIMIC-CXR", "physionet/mimic-cxr": any spelling (review 19: "MIMIC-CXR" went public)
    restricted = sorted({n for n in names if n.strip().lower() in PHYSIONET_DERIVED or _RESTRICTED_CARD.search(n)})
    if restricted:
        reasons.append(f"its rows come from {', '.join(restricted)} (PhysioNet credentialed data)")
    if unreadable:
        reasons.append(f"{unreadable[0]} could not be read to check where its rows come from")
    return reasons


#: data files a push uploads whose `dataset` column the gate reads (review 19: Parquet and CSV, the Hub's own
#: layouts, went public unread)
_TABLE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv", ".arrow")


def _dataset_names(folder: Path) -> tuple[set[str], list[str]]:
    """Values of the `dataset` column (our schema's provenance) in a save_to_disk folder (Dataset or
    DatasetDict) and in every JSON Lines, JSON, Parquet, CSV and Arrow file under it; and the files that could not
    be read."""
    names: set[str] = set()
    unreadable: list[str] = []
    if (folder / "state.json").exists() or (folder / "dataset_dict.json").exists():
        import datasets

        loaded = datasets.load_from_disk(str(folder))
        splits = loaded.values() if isinstance(loaded, datasets.DatasetDict) else [loaded]
        for split in splits:
            if "dataset" in split.column_names:
                names.update(str(v) for v in split.unique("dataset"))
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in _TABLE_SUFFIXES):
        try:
            names.update(_column_values(path))
        except Exception:  # noqa: BLE001 - any file the gate cannot read keeps the push private
            unreadable.append(str(path.relative_to(folder)))
    return names, unreadable


def _column_values(path: Path) -> set[str]:
    """The `dataset` values of one data file (none when it has no such column)."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".arrow"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        if suffix == ".parquet":
            schema = pq.read_schema(path)
            table = pq.read_table(path, columns=["dataset"]) if "dataset" in schema.names else None
        else:  # datasets' cache files are Arrow streams; a plain Arrow file is read as one too
            try:
                table = pa.ipc.open_stream(str(path)).read_all()
            except pa.ArrowInvalid:
                table = pa.ipc.open_file(str(path)).read_all()
            table = table.select(["dataset"]) if "dataset" in table.column_names else None
        return set() if table is None else {str(v) for v in table.column("dataset").to_pylist() if v is not None}
    if suffix == ".csv":
        import csv

        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            return {row["dataset"] for row in csv.DictReader(fh) if row.get("dataset")}
    text = path.read_text(encoding="utf-8", errors="replace")
    rows: list = []
    if suffix == ".json":
        try:
            data = json.loads(text)
            rows = data if isinstance(data, list) else [data]
        except ValueError:
            pass  # JSON Lines written as .json (datasets' to_json): read line by line below
    if not rows:
        for line in text.splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return {row["dataset"] for row in rows if isinstance(row, dict) and isinstance(row.get("dataset"), str)}


def check_public_allowed(folder: str | Path, what: str) -> None:
    reasons = restricted_reasons(folder)
    if reasons:
        raise PushRefused(
            f"Refusing to push {what} publicly: {'; '.join(reasons)}. PhysioNet's credentialed-data licence forbids "
            "redistribution; push it private (the default), optionally --gated.")


def written_by_user(card_text: str) -> bool:
    """True unless the card is radmetrics' own, unedited (marker hash matches), or a library's placeholder."""
    found = _CARD_MARKER.search(card_text)
    if found:
        body = card_text[: found.start()].rstrip("\n") + "\n"
        return hashlib.sha256(body.encode()).hexdigest() != found.group(1)
    return not any(hint in card_text for hint in _AUTO_CARD_HINTS)


def write_card(path: str | Path, text: str, overwrite: bool) -> None:
    """Write a rendered card to PATH, refusing to replace one the user wrote unless overwrite."""
    path = Path(path)
    if path.exists() and not overwrite and written_by_user(path.read_text(encoding="utf-8", errors="replace")):
        raise PushRefused(f"{path} was written or edited by hand: not replacing it (pass --overwrite-card to "
                          "replace it with the rendered card)")
    path.write_text(card_with_marker(text), encoding="utf-8")
