"""Files a command reads, as given on the command line. '-' does not mean standard input here (an interrupted run is
resumed by rerunning the same command on the same input, which a pipe cannot give twice): said in one line with what
to do, instead of "Input file not found: -" (review 24, L7)."""
from __future__ import annotations

import click

STDIN_REFUSED = ("standard input ('-') is not supported: write the data to a file first and pass that file (an "
                 "interrupted run can then be resumed by rerunning the same command)")


class InputPath(click.Path):
    """click.Path for an input, refusing '-' with what to do instead."""

    def convert(self, value, param, ctx):
        if value == "-":
            self.fail(STDIN_REFUSED, param, ctx)
        return super().convert(value, param, ctx)


#: a JSONL/CSV file of rows
INPUT_FILE = InputPath(dir_okay=False)
#: a file or folder that must be there (a converted dataset, a folder of sources)
EXISTING_INPUT = InputPath(exists=True)
#: a file that must be there
EXISTING_FILE = InputPath(exists=True, dir_okay=False)
