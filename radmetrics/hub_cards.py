"""Locating the top-level hub_cards/ and lm_eval_tasks/ folders, from a checkout or an installed wheel."""
from __future__ import annotations

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
