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
    """Why FOLDER holds data that must stay private (empty list: nothing found)."""
    from radmetrics.data import PHYSIONET_DERIVED

    folder = Path(folder)
    reasons: list[str] = []
    card = folder / "README.md"
    if card.is_file():
        hit = _RESTRICTED_CARD.search(card.read_text(encoding="utf-8", errors="replace"))
        if hit:
            reasons.append(f"its card (README.md) says '{hit.group(0)}'")
    names = _dataset_names(folder)
    restricted = sorted(names & PHYSIONET_DERIVED)
    if restricted:
        reasons.append(f"its rows come from {', '.join(restricted)} (PhysioNet credentialed data)")
    return reasons


def _dataset_names(folder: Path) -> set[str]:
    """Values of the `dataset` column (our schema's provenance) in a save_to_disk folder (Dataset or
    DatasetDict) and in JSONL files beside it."""
    names: set[str] = set()
    if (folder / "state.json").exists() or (folder / "dataset_dict.json").exists():
        import datasets

        loaded = datasets.load_from_disk(str(folder))
        splits = loaded.values() if isinstance(loaded, datasets.DatasetDict) else [loaded]
        for split in splits:
            if "dataset" in split.column_names:
                names.update(str(v) for v in split.unique("dataset"))
    for path in folder.rglob("*.jsonl"):
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("dataset"), str):
                    names.add(row["dataset"])
    return names


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
