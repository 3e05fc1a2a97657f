"""Where a command writes: checked when the command line is read, so a folder or file that cannot be written is a
one-line usage error before any work (review 12: `score -o /sys/out.jsonl` was a PermissionError traceback, and
`compare -o` into a read-only place failed only after every metric had run)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def unwritable_reason(path: Path, folder: bool) -> str | None:
    """Why ``path`` (a folder to create or fill, or a file to create or replace) cannot be written; None when it
    can. Nothing is created here."""
    existing = _nearest_existing(path.absolute())
    if existing == path.absolute():
        if folder and not existing.is_dir():
            return "it is a file"
        if not folder and existing.is_dir():
            return "it is a folder"
        target = existing if folder else existing.parent
    else:
        target = existing
        if not target.is_dir():
            return f"{target} is a file, not a folder"
    try:  # a real try: os.access says yes to root on /sys and /proc, where nothing can be created
        fd, probe = tempfile.mkstemp(prefix=".radmetrics-write-test-", dir=target)
    except OSError as e:
        return f"{target} is not writable ({e.strerror or type(e).__name__})"
    os.close(fd)
    os.unlink(probe)
    return None


class OutputPath(click.Path):
    """click.Path for an output, refusing one that cannot be written."""

    def __init__(self, folder: bool):
        super().__init__(file_okay=not folder, dir_okay=folder)
        self.folder = folder

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        reason = unwritable_reason(Path(value), self.folder)
        if reason:
            self.fail(f"cannot write {'folder' if self.folder else 'file'} {value!r}: {reason}", param, ctx)
        return value


#: a report or dataset folder the command creates or fills
OUTPUT_FOLDER = OutputPath(folder=True)
#: a results file the command creates or replaces
OUTPUT_FILE = OutputPath(folder=False)


#: --overwrite of the report commands (compare, meta-eval, preference-eval, rexamine)
OVERWRITE_REPORT = click.option(
    "--overwrite", is_flag=True,
    help="Write into a folder that holds files this report would overwrite and that no earlier report of this "
         "command wrote there (your own results.json, another command's report, which is then replaced whole).")


def check_report_folder(folder: str, command: str, overwrite: bool, cache_files: tuple[Path, ...] = ()) -> None:
    """Before any work: refuse a report folder whose files the report would overwrite without having written them
    (review 24 M6), or that is the response cache's path (review 33: `compare -o out/ --cache out/` made the cache
    file there, judged every row, then could not make the folder), and say when an earlier report of the command
    is replaced (review 12: a meta-eval re-run with a typo in -m replaced a finished judge report without a word)."""
    from radmetrics.errors import InputError
    from radmetrics.io import same_path
    from radmetrics.meta.report_folder import check_report_folder as check

    for cache_file in cache_files:
        if same_path(Path(cache_file).expanduser(), Path(folder).expanduser()):
            raise InputError(f"--cache {cache_file} is the report folder -o {folder}: the response cache needs a file "
                             f"of its own (e.g. --cache judgments.sqlite, or one inside the folder), or --no-cache")

    note = check(folder, command, overwrite)
    if note:
        click.echo(f"Note: {note}", err=True)
