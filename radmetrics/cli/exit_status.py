"""How a scoring run ends: interrupted (130 / 143), judge failed (1), or fine (0); and the lines that say so."""
from __future__ import annotations

import functools
import signal
from collections import Counter
from collections.abc import Callable
from typing import Any

#: exit code when the judge, not the input, made the run fail (every row, or more than --max-failures)
JUDGE_FAILED = 1


class RunInterrupted(Exception):
    """Ctrl-C or SIGTERM reached a command; carries the exit code (128 + signal number) and the command's note on
    what an interrupt means (`note_interrupt`), if it set one. Not a KeyboardInterrupt subclass so that click
    passes it through unchanged."""

    def __init__(self, signum: int, note: str | None = None):
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum
        self.note = note


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so it takes the same path as Ctrl-C (nothing new sent, answers kept)."""


def raise_terminated(signum, frame) -> None:
    raise Terminated()


#: what an interrupt means in the running command's phase, when it is not a judging run's (train sets it while
#: training, score --engine ray while its actors judge); set only inside an `interrupt_scope` command
_INTERRUPT_NOTE: list[str] = []


def note_interrupt(line: str) -> None:
    _INTERRUPT_NOTE[:] = [line]


def interrupt_scope(command: Callable) -> Callable:
    """Decorator for a command that calls `note_interrupt`: the note lives only while that command runs. It
    leaves with the interrupt (RunInterrupted.note, which `main` prints) and is cleared when the command ends,
    however it ends: a later command in the same process printed the first one's note (review 20)."""

    @functools.wraps(command)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        _INTERRUPT_NOTE.clear()
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as e:
            note = _INTERRUPT_NOTE[0] if _INTERRUPT_NOTE else None
            raise RunInterrupted(signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT, note) from None
        finally:
            _INTERRUPT_NOTE.clear()

    return scoped


def interrupted_line(note: str | None = None) -> str:
    """The line an interrupted run ends with: the command's note (RunInterrupted.note), else this process's
    answered and cached counts."""
    from radmetrics.judge import run_tally, tally_lock

    if note:
        return note

    # wait (briefly) for a worker thread that is storing an answer, so the counts and the cache agree
    locked = tally_lock.acquire(timeout=1.0)
    try:
        answered, cached = run_tally["answered"], run_tally["cached"]
        line = f"interrupted: {answered} answered, {cached} cached; rerun to resume"
        if answered > cached:  # --no-cache (or answers not worth keeping): the rows not yet written are asked again
            lost = answered - cached
            line += (f" ({lost} answer{'s' if lost != 1 else ''} not cached: without a cache only the rows already "
                     "written to the output's part file are kept; the others are asked again)")
        return line
    finally:
        if locked:
            tally_lock.release()


class FailureTally:
    """Rows the judge left unscored, counted row by row (the streaming runner keeps no list of judgments): the
    end-of-run warning, and the error when the run must exit non-zero."""

    def __init__(self, replay: bool = False, cached: bool = True) -> None:
        self.replay = replay  # answers come from a file: asking again gives the same
        self.cached = cached  # a response cache keeps the answers (not with --no-cache)
        self.judged = 0
        self.reasons: Counter = Counter()
        self.unreadable = 0  # rows the input itself left unscored (not counted against the judge)
        # rows by what a rerun does for them, counted here: `reasons` lumps reasons past MAX_REASONS together
        self.kinds: Counter = Counter()

    def add(self, judgment: Any) -> None:
        from radmetrics.scoring import is_input_problem

        if is_input_problem(judgment.reason):  # "row N: ..." / "input line N: ...": the user's, not the judge's
            self.unreadable += 1
            return
        self.judged += 1
        if judgment.score is None and not judgment.parsed:  # a failed call or an unreadable answer
            from radmetrics.scoring import add_reason, grouped_reason

            from radmetrics.runner import judge_call_failed
            from radmetrics.types import answer_reached_context, answer_was_cut, prompt_filled_context

            add_reason(self.reasons, grouped_reason(judgment.reason))  # at most MAX_REASONS kept: memory stays flat
            reason = judgment.reason
            # a prompt the judge's context has no room after fails as a call, but a rerun fails it the same
            self.kinds["prompt_context" if prompt_filled_context(reason) else "calls" if judge_call_failed(reason)
                       else "context" if answer_reached_context(reason) else "cut" if answer_was_cut(reason)
                       else "unreadable"] += 1

    def _top(self) -> str:
        """The three most common reasons, each cut at a word, and how many other reasons there are."""
        from radmetrics.meta.html_report import shorten
        from radmetrics.scoring import MAX_REASONS, OTHER_REASONS

        top = [(reason, n) for reason, n in self.reasons.most_common(4) if reason != OTHER_REASONS][:3]
        text = "; ".join(f"{n} × {shorten(reason, 160)}" for reason, n in top)
        rest = sum(self.reasons.values()) - sum(n for _, n in top)
        kinds = f"over {MAX_REASONS - 3:,}" if OTHER_REASONS in self.reasons else f"{len(self.reasons) - 3}"
        return text + (f"; {rest} more with {kinds} other reasons" if rest else "")

    def input_warning(self) -> str | None:
        """A line for rows the input left unscored (unreadable, missing or empty fields): the output has them,
        unscored with their reason, and the scores leave them out."""
        if not self.unreadable:
            return None
        if self.unreadable == 1:
            return ("1 input row could not be judged (its reason names the input line: `reason` in the results) and "
                    "is unscored")
        return (f"{self.unreadable} input rows could not be judged (their reasons name the input lines: `reason` in "
                "the results) and are unscored")

    def warning(self) -> str | None:
        """A line for a run the judge left partly unscored (the mean covers fewer rows than were judged): a
        judge answering in the wrong format must not pass for a result, even when the exit code is 0."""
        failed = sum(self.reasons.values())
        if not failed or failed == self.judged:
            return None
        return (f"{failed} of {self.judged} judged rows ({failed / self.judged:.0%}) are unscored because of the "
                f"judge ({self._top()}): the scores cover the other {self.judged - failed}. --max-failures "
                f"FRACTION makes such a run exit 1")

    def advice(self) -> str:
        """What a rerun does for the failed rows: asks again those whose judge call failed (nothing is cached for
        them); an unreadable answer is cached, so a plain rerun gives it back (only --retry-unscored asks again)."""
        calls, cut, unreadable = self.kinds["calls"], self.kinds["cut"], self.kinds["unreadable"]
        parts = []
        if calls and self.replay:
            parts.append(f"the replay file has no answer for {calls} row{'s' if calls != 1 else ''} (a rerun gives "
                         "the same): record their answers with a live judge, or check that the prompts match")
        elif calls:
            parts.append(f"rerun to ask again the {calls} row{'s' if calls != 1 else ''} whose judge call failed")
        if cut:
            parts.append(f"{cut} answer{'s' if cut != 1 else ''} reached the token limit before {'they' if cut != 1 else 'it'} "
                         "ended (not cached): rerun with a higher --max-new-tokens")
        too_long = self.kinds["prompt_context"]
        if too_long:
            parts.append(f"{too_long} prompt{'s' if too_long != 1 else ''} left no room for an answer in the judge's "
                         f"context and {'were' if too_long != 1 else 'was'} not sent (a rerun gives the same): shorten "
                         "the reports, or use a judge with a longer context")
        context = self.kinds["context"]
        if context:
            parts.append(f"{context} answer{'s' if context != 1 else ''} reached the end of the judge's context before "
                         f"{'they' if context != 1 else 'it'} ended (the prompt left too few tokens; a higher "
                         "--max-new-tokens does not help): shorten the reports, or use a judge with a longer context")
        if unreadable and not self.cached:  # --no-cache: nothing kept, a rerun asks again (review 33: "are cached")
            parts.append(f"{unreadable} answer{'s' if unreadable != 1 else ''} could not be read (no response cache: a "
                         "rerun asks again, and a judge that decodes greedily answers the same): check the judge and "
                         "the answer format it was trained for")
        elif unreadable:
            parts.append(f"{unreadable} answer{'s' if unreadable != 1 else ''} could not be read and "
                         f"{'are' if unreadable != 1 else 'is'} cached (a plain rerun gives the same): check the "
                         "judge and the answer format it was trained for; --retry-unscored asks them again")
        return "; ".join(parts)

    def message(self, max_failures: float | None) -> str | None:
        """The one-line error when the run must exit non-zero (every judged row failed, or over
        ``max_failures``), or None."""
        if not self.judged:
            return None
        failed = sum(self.reasons.values())
        top = self._top()
        if failed == self.judged:
            return f"no row was scored: {failed} of {self.judged} judged rows failed because of the judge ({top})"
        if max_failures is not None and failed > max_failures * self.judged:
            return (f"{failed} of {self.judged} judged rows ({failed / self.judged:.0%}) failed because of the judge, "
                    f"over --max-failures {max_failures:g} ({top})")
        return None
