"""`radmetrics` command line. Errors radmetrics raises on purpose print as one line, exit code 2."""
from __future__ import annotations

import contextlib
import logging
import signal
import sys
import warnings
from pathlib import Path
from typing import NoReturn

import click

from radmetrics.cli.compare import compare_command
from radmetrics.cli.data import data_group, meta_eval_command, preference_eval_command
from radmetrics.cli.hub import hub_group
from radmetrics.cli.reward import reward_check_command
from radmetrics.cli.rexamine import rexamine_command
from radmetrics.cli.score import score_command
from radmetrics.cli.train import train_group
from radmetrics.errors import MissingExtraError, RadmetricsError


class _StderrLines(logging.Handler):
    """radmetrics' warnings as plain lines on the stderr of the moment (click's test runner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def _plain_warnings():
    """radmetrics' warnings printed as plain lines, whatever a library did to the root logger: rouge-score's first
    log call sets up Python's default format, and compare's lines then read "WARNING:radmetrics.runner:..."
    where `score` printed the same line plainly (review 24 L3)."""
    logger = logging.getLogger("radmetrics")
    handler = _StderrLines(logging.WARNING)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _Group(click.Group):
    def invoke(self, ctx):
        # click turns KeyboardInterrupt into a bare "Aborted!"; we say what was kept and exit 128 + signal.
        try:
            with _plain_warnings():
                return super().invoke(ctx)
        except KeyboardInterrupt as e:
            from radmetrics.cli.exit_status import RunInterrupted, Terminated

            raise RunInterrupted(signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="radmetrics")
def cli() -> None:
    """LLM-judge metrics for radiology reports (GREEN and friends) on one shared judge backend."""


cli.add_command(score_command)
cli.add_command(data_group)
cli.add_command(meta_eval_command)
cli.add_command(compare_command)
cli.add_command(preference_eval_command)
cli.add_command(rexamine_command)
cli.add_command(hub_group)
cli.add_command(train_group)
cli.add_command(reward_check_command)


@cli.command("list")
def list_command() -> None:
    """Scoring systems and judge backends, built-ins and plugins alike, and the named baselines."""
    import radmetrics
    from radmetrics import baselines

    click.echo("scoring systems: " + ", ".join(radmetrics.list_scoring_systems()))
    click.echo("judge backends:  " + ", ".join(radmetrics.list_judge_backends()))
    # what meta-eval / compare -m also take (each needs its library: README "Baselines"); any evaluate module too
    click.echo("baselines:       " + ", ".join(baselines.list_baselines()) + " (meta-eval, compare; or an evaluate "
               "module: name:key:option=value)")


@cli.command("install-metrics")
def install_metrics_command() -> None:
    """Register every metric's evaluate module in evaluate's local cache, so that
    evaluate.load("radmetrics/<metric>") works from any directory without network."""
    from radmetrics.errors import optional_import
    from radmetrics.evaluate_modules import install_evaluate_modules

    optional_import("evaluate", "evaluate", "by install-metrics")
    for name, path in install_evaluate_modules().items():
        click.echo(f"radmetrics/{name} -> {path}")


@cli.command("lm-eval-path")
def lm_eval_path_command() -> None:
    """Print the folder to pass to lm_eval --include_path (the radmetrics_judge tasks)."""
    from radmetrics.hub_cards import package_folder

    click.echo(package_folder("lm_eval_tasks"))


@cli.command("sample-path")
@click.argument("name", required=False, type=click.Choice(["pairs.jsonl", "green_replay.jsonl", "system_b.jsonl"]))
def sample_path_command(name: str | None) -> None:
    """Print the bundled sample data folder, or the path of one sample file in it (from any directory, also
    when radmetrics is installed as a wheel): pairs.jsonl (8 report pairs), green_replay.jsonl (their recorded
    GREEN judge answers, for --replay), system_b.jsonl (a second system's candidates for the same ids, for
    `radmetrics compare`)."""
    from radmetrics.hub_cards import sample_path

    click.echo(sample_path(name))


def _warning_line(show):
    """``warnings.showwarning`` for the command line: radmetrics' own deprecations as one line, the rest as before."""
    def shown(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, DeprecationWarning) and "radmetrics" in Path(filename).parts:
            click.echo(f"Warning: {message}", err=True)
        else:
            show(message, category, filename, lineno, file, line)
    return shown


def main() -> None:
    from radmetrics.cli.exit_status import RunInterrupted, interrupted_line, raise_terminated

    signal.signal(signal.SIGTERM, raise_terminated)
    # Deprecated names (e.g. --metric radcliq) say so on the command line too, as one "Warning:" line like the
    # others (Python's own form named the line of radmetrics' source that asked, review 43)
    warnings.filterwarnings("default", category=DeprecationWarning, module="radmetrics")
    warnings.showwarning = _warning_line(warnings.showwarning)
    try:
        cli.main(standalone_mode=False)
    except RunInterrupted as e:
        from radmetrics.judge import tally_lock

        # from here on no worker thread stores an answer: the counts printed are the cache's (RLock: the
        # line below takes it again in this thread); held until the process ends
        held = tally_lock.acquire(timeout=1.0)
        click.echo(interrupted_line(e.note), err=True)
        if held and "ray" in sys.modules:  # a normal exit joins the worker threads: let them finish
            tally_lock.release()
        _exit_now(e.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except RadmetricsError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(2)
    except ModuleNotFoundError as e:  # an optional dependency imported lazily: one line naming the extra
        missing = MissingExtraError.from_import_error(e)
        if missing is None:
            raise
        click.echo(f"Error: {missing}", err=True)
        sys.exit(2)
    except OSError as e:
        if e.filename is None:
            if is_network_error(e):
                _network_error_line(e)
            raise
        # a file or folder the system refused (permissions, a full disk, a path through a file): one line
        click.echo(f"Error: {e.filename}: {e.strerror or type(e).__name__}", err=True)
        sys.exit(2)
    except Exception as e:
        if not is_network_error(e):
            raise
        _network_error_line(e)


def _network_error_line(e: BaseException) -> NoReturn:
    detail = " ".join(str(e).split())[:200] or type(e).__name__
    click.echo(f"Error: a network request failed ({type(e).__name__}: {detail}). Check the network, the server "
               "URL or HF_ENDPOINT; for the Hub, offline use needs local folders or cached models.", err=True)
    sys.exit(2)


def is_network_error(error: BaseException) -> bool:
    """Connection and timeout errors of the HTTP stacks radmetrics and huggingface_hub use (httpx, requests,
    urllib3) and of the socket layer: the user's network, not a bug, so one line instead of a traceback."""
    import socket

    seen = set()
    while error is not None and id(error) not in seen:  # also when wrapped (raise ... from ...)
        seen.add(id(error))
        module = type(error).__module__.split(".")[0]
        name = type(error).__name__
        if isinstance(error, (ConnectionError, TimeoutError, socket.gaierror)):
            return True
        if module in ("httpx", "httpcore", "requests", "urllib3") and ("Connect" in name or "Timeout" in name
                                                                     or "Network" in name):
            return True
        if module == "huggingface_hub" and name in ("OfflineModeIsEnabled", "LocalEntryNotFoundError"):
            return True
        error = error.__cause__ or error.__context__
    return False


def _exit_now(code: int) -> None:
    """After an interrupt everything worth keeping is committed (answers in the cache, claims released): skip
    the interpreter's teardown, which on a busy machine took longer than the rest of the stop (measured 1.5 s
    of the 2 s budget). Not when Ray is loaded: its exit hook stops the workers it started."""
    import logging
    import os

    if "ray" in sys.modules:
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
