"""Report folders (`compare`, `meta-eval`, `preference-eval`, `rexamine -o`): results.json records which command
wrote the report and which files are its, so that a rerun replaces the earlier report whole (its files this run does
not write are removed, none left beside the new report) and a file no such report wrote is never overwritten or
removed without --overwrite (review 24 M6: a user's own results.json was replaced after a note, and compare into a
meta-eval report's folder left one folder holding half of each report)."""
from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError

#: results.json's key naming the command that wrote the report and the files it wrote
REPORT_KEY = "radmetrics_report"

#: the names each command may write into its folder (a pattern where the name follows a metric's)
OUTPUTS: dict[str, tuple[str, ...]] = {
    "compare": ("results.json", "per_row.csv", "forest.png", "report.html"),
    "meta-eval": ("results.json", "per_sample.csv", "summary.md", "report.html", "scatter_*.png",
                  "error_counts_*.png", "per_site.png"),
    "preference-eval": ("results.json", "per_pair.csv", "summary.md"),
    "rexamine": ("results.json", "rexamine_data.jsonl", "per_row.csv", "fig3_spearman.png", "summary.md"),
}


def is_output(command: str, name: str) -> bool:
    """Whether `command` may write a file of this name (a plain name in its folder, nothing above or below it)."""
    plain = name not in ("", ".", "..") and "/" not in name and "\\" not in name
    return plain and any(fnmatch.fnmatchcase(name, pattern) for pattern in OUTPUTS[command])


def earlier_report(folder: str | Path) -> tuple[str, list[str]] | None:
    """The command and files of the radmetrics report in `folder` as its results.json records them; None when
    there is none (no results.json, the user's own, or a report written before reports recorded this). Only names
    that command writes are taken: a results.json edited or copied by hand never removes anything else."""
    try:
        data = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    record = data.get(REPORT_KEY) if isinstance(data, dict) else None
    if not isinstance(record, dict) or record.get("command") not in OUTPUTS or not isinstance(record.get("files"), list):
        return None
    command = record["command"]
    return command, [name for name in record["files"] if isinstance(name, str) and is_output(command, name)]


def _listed(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


# The same refusal reaches a CLI user and a Python caller (write_outputs, run_rexamine): both ways of saying yes.
_FROM_PYTHON = " (overwrite=True from Python)"


def check_report_folder(folder: str | Path, command: str, overwrite: bool) -> str | None:
    """Before any work: may `command` write its report into `folder`? A new or empty folder, or one whose files it
    would not touch (`-o .` in a project), is fine (None); an earlier report of the same command is replaced (a
    note). A folder holding another command's report, or files the command would overwrite that no report of it
    wrote (a user's own results.json), is refused with one line unless `overwrite` (then a note says what goes)."""
    out = Path(folder).expanduser()
    if not out.is_dir():
        return None
    earlier = earlier_report(out)
    if earlier and earlier[0] != command:
        if not overwrite:
            raise InputError(f"--output {folder} holds a radmetrics {earlier[0]} report: {command} would replace "
                             "part of it and leave the rest beside its own. Choose a new folder, or pass --overwrite "
                             f"to replace that report{_FROM_PYTHON}")
        return f"--overwrite: {folder}'s {earlier[0]} report is replaced by this {command} report."
    own = set(earlier[1]) if earlier else set()
    foreign = sorted(p.name for p in out.iterdir() if is_output(command, p.name) and p.name not in own)
    if foreign and not overwrite:
        them = "it" if len(foreign) == 1 else "them"
        older = " (a report of radmetrics before it recorded its files counts as not written by it)" \
            if "results.json" in foreign else ""
        raise InputError(f"--output {folder} holds {_listed(foreign)}, which no radmetrics {command} report there "
                         f"wrote{older}: this run would overwrite {them}. Choose a new folder, or pass --overwrite"
                         f"{_FROM_PYTHON}")
    if foreign:
        return f"--overwrite: this run replaces {_listed(foreign)} in {folder}."
    return f"{folder} holds an earlier report; this run replaces it." if earlier else None


class ReportWriter:
    """Writes one command's report into its folder: `path(name)` for each file, then `finish(results)` writes
    results.json (last, with the record of the report's files) and removes the earlier report's files this run
    did not write. The earlier report is read when the writer is made, before its results.json is replaced."""

    def __init__(self, folder: str | Path, command: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.command = command
        earlier = earlier_report(self.folder)
        self.earlier_files = earlier[1] if earlier else []
        self.written: list[str] = []

    def path(self, name: str) -> Path:
        assert is_output(self.command, name), f"{self.command} does not list {name} in OUTPUTS"
        self.written.append(name)
        return self.folder / name

    def finish(self, results: dict[str, Any]) -> Path:
        files = sorted({*self.written, "results.json"})
        path = self.path("results.json")
        record = {REPORT_KEY: {"command": self.command, "files": files}}
        path.write_text(json.dumps({**record, **results}, indent=2, allow_nan=False, default=str))
        for name in sorted(set(self.earlier_files) - set(files)):
            stale = self.folder / name
            if stale.is_file() and not stale.is_symlink():  # a link or folder put there since is not ours
                stale.unlink()
        return path
