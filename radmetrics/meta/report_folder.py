"""Report folders (`compare`, `meta-eval`, `preference-eval`, `rexamine -o`): results.json records which command
wrote the report and which files are its, so that a rerun replaces the earlier report whole (its files this run does
not write are removed, none left beside the new report) and a file no such report wrote is never overwritten or
removed without --overwrite (review 24 M6: a user's own results.json was replaced after a note, and compare into a
meta-eval report's folder left one folder holding half of each report)."""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
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
    if earlier and is_incomplete(out):
        return f"{folder} holds a report a run was stopped while writing; this run replaces it."
    return f"{folder} holds an earlier report; this run replaces it." if earlier else None


class ReportWriter:
    """Writes one command's report into its folder so that a kill or Ctrl-C at any moment leaves either the earlier
    report, or a report its results.json marks as half-written, never new files beside an earlier results.json nor
    a file cut short (review 28: a kill while writing left a truncated per_row.csv that the rerun then refused to
    replace). `path(name)` is where to write each file: a staging folder inside the report folder; `finish(results)`
    marks the report as being written, moves the staged files in (each rename is atomic), writes results.json last
    (with the record of the report's files) and removes the earlier report's files this run did not write. Use it
    as a context manager: an error or interrupt before `finish` removes the staging folder; one a kill left behind
    is removed by the next writer. The earlier report is read when the writer is made."""

    def __init__(self, folder: str | Path, command: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.command = command
        earlier = earlier_report(self.folder)
        self.earlier_files = earlier[1] if earlier else []
        self.written: list[str] = []
        from radmetrics.io import remove_abandoned_staging

        remove_abandoned_staging(self.folder, STAGING_PREFIX)  # a killed writer's
        self.staging = self.folder / f"{STAGING_PREFIX}{os.getpid()}"
        if self.staging.exists():  # this process's own, from a writer that did not finish
            shutil.rmtree(self.staging, ignore_errors=True)
        self.staging.mkdir()

    def __enter__(self) -> ReportWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.discard()

    def path(self, name: str) -> Path:
        """Where to write the report's file `name` (in the staging folder until `finish`)."""
        assert is_output(self.command, name), f"{self.command} does not list {name} in OUTPUTS"
        self.written.append(name)
        return self.staging / name

    def finish(self, results: dict[str, Any]) -> Path:
        files = sorted({*self.written, "results.json"})
        staged = self.path("results.json")
        record = {REPORT_KEY: {"command": self.command, "files": files}}
        staged.write_text(json.dumps({**record, **results}, indent=2, allow_nan=False, default=str))
        # from here until the last rename, results.json says the report is half-written (and lists every file the
        # folder may hold of either report), so a rerun of the command replaces it and no reader takes it as done
        pending = {REPORT_KEY: {"command": self.command, "files": sorted({*files, *self.earlier_files}),
                                INCOMPLETE: INCOMPLETE_TEXT.format(command=self.command)}}
        _replace_with_text(self.folder / "results.json", json.dumps(pending, indent=2))
        for name in files:
            if name != "results.json" and (self.staging / name).is_file():
                os.replace(self.staging / name, self.folder / name)
        os.replace(staged, self.folder / "results.json")
        for name in sorted(set(self.earlier_files) - set(files)):
            stale = self.folder / name
            if stale.is_file() and not stale.is_symlink():  # a link or folder put there since is not ours
                stale.unlink()
        self.discard()
        return self.folder / "results.json"

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


#: the staging folder's name in a report folder, before the writing process's pid (hidden: no command's output)
STAGING_PREFIX = ".radmetrics-report-staging."
#: results.json's record key saying the report is being written (present only until the last rename)
INCOMPLETE = "incomplete"
INCOMPLETE_TEXT = ("this report is being written, or its run was stopped while writing it: run the same radmetrics "
                   "{command} command again")


def is_incomplete(folder: str | Path) -> bool:
    """Whether the report in `folder` is one a run stopped while writing (its results.json holds only the record)."""
    try:
        record = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8")).get(REPORT_KEY)
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(record, dict) and INCOMPLETE in record


def _replace_with_text(path: Path, text: str) -> None:
    from radmetrics.io import AtomicFile

    with AtomicFile(path) as fh:
        fh.write(text)
