"""Where the commands' summary tables print."""
from __future__ import annotations

import os
import sys

#: columns a table may take when the output is not a terminal (a pipe, a log file, CI)
UNBOUNDED_WIDTH = 1000


def table_console(stderr: bool = False):
    """A rich console for tables: a terminal's own width; elsewhere (rich would assume 80 columns and wrap or cut
    labels and intervals) as wide as each table needs, unless ``COLUMNS`` says otherwise.

    Cells hold the user's names and the judges' reasons, printed as written: no rich markup (a system named
    "llama[ft]" printed as "llama", and "B[/]" or a reason quoting "[/INST]" was a MarkupError traceback after the
    results were written) and no emoji codes (a metric "module:v:..." printed a victory hand for ":v:")."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    interactive = hasattr(stream, "isatty") and stream.isatty()
    width = None if interactive or os.environ.get("COLUMNS") else UNBOUNDED_WIDTH
    return Console(stderr=stderr, width=width, markup=False, emoji=False)
