"""Locating files shipped with radmetrics (hub_cards/, lm_eval_tasks/, the sample data), from a checkout or an
installed wheel alike."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def package_folder(name: str) -> Path:
    """The repository's `name` folder in a checkout / editable install, else the copy inside the package."""
    for folder in (_PACKAGE.parent / name, _PACKAGE / f"_{name}"):
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"radmetrics' {name}/ folder is missing from this installation")


def load_template(kind: str) -> str:
    return (package_folder("hub_cards") / f"{kind}.md").read_text(encoding="utf-8")


SAMPLE_FILES = ("pairs.jsonl", "green_replay.jsonl", "system_b.jsonl")


def sample_path(name: str | None = None) -> Path:
    """The bundled sample data folder, or one file in it (pairs.jsonl: 8 report pairs; green_replay.jsonl: the
    recorded GREEN judge answers for them). Works the same from a checkout and from an installed wheel."""
    from radmetrics.errors import InputError

    folder = _PACKAGE / "sample_data"
    if name is None:
        return folder
    if name not in SAMPLE_FILES:
        raise InputError(f"No sample file {name!r}; the samples are {', '.join(SAMPLE_FILES)}")
    return folder / name


#: the stamp on cards radmetrics rendered: a later push can tell an unedited card of ours from one a person wrote
_CARD_MARKER = re.compile(r"\n?<!-- radmetrics-card sha256=([0-9a-f]{64}) -->\n?$")


def card_with_marker(text: str) -> str:
    """A card radmetrics rendered, stamped so that a later push can tell it was not edited since."""
    text = text.rstrip("\n") + "\n"
    return f"{text}\n<!-- radmetrics-card sha256={hashlib.sha256(text.encode()).hexdigest()} -->\n"


def strip_marker(card_text: str) -> str:
    return _CARD_MARKER.sub("\n", card_text)
