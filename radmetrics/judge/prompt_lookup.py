"""Prompt-lookup drafts for the greedy engine: guesses of a row's next tokens, checked by the model in one step.

A judge's answer repeats its prompt: GREEN names the error categories its instructions list ("(b) Missing a
finding present in the reference: 0.") and quotes the reports' findings. When the last few tokens of a row (the
prompt and the answer so far) occurred earlier, the tokens that followed them then are a cheap guess for what
comes next ("prompt lookup decoding", Saxena 2023; HF ``generate(prompt_lookup_num_tokens=...)``, vLLM's
``ngram`` speculator). The engine feeds the guesses after the row's next input token and keeps the longest run the
model itself predicts, plus the model's own next token: greedy answers are unchanged, in fewer steps.

A judge's answers also repeat each other: the same sections, the same phrases for the same kind of finding
("No clinically significant errors", a template's item lines with their counts). `AnswerLookup` indexes the
answers the call's rows have already given, and a row's lookup takes the longer match of the two (its own tokens
win a tie): a retrieval-based draft (REST, He et al. 2024) over the call's own answers. It pays most where every
step drafts: with a table smaller than the input (8 rows on the natural benchmark, as a judge too large for more
rows gets) calls took 19-24% less time; with all 96 prompts in one table only the tail drafts, and the gain was
within noise (BENCHMARKS.md, session 27; `benchmarks/answer_drafts.py`).

`DraftPolicy` decides step by step whether drafting pays: a step that checks k guesses per row costs more
compute than a plain one (a compute-bound model with few accepted guesses gets slower), so both kinds of step are
timed and the faster in answer tokens per second is used, the other re-tried now and then.
"""
from __future__ import annotations

#: guesses per row and step on the host-synced (CPU) path
DRAFT_TOKENS = 4
#: drafts only in steps of at most this many slots: a drafted step's extra compute grows with the rows (cpu-tiny
#: natural benchmark, 4 guesses: 1.3x a plain step at 6 rows, 1.7x at 24, 2.5x at 96 for ~1.9 tokens per step),
#: and trying drafts at 96 rows cost more than they saved
DRAFT_MAX_ROWS = 32
#: longest token n-gram looked up (then shorter ones)
MAX_NGRAM = 3
#: longest n-gram looked up in other rows' answers: longer than a row's own, so a phrase the answers share
#: (whose last 3 tokens also occur in the row's prompt, followed by something else) is continued as they continue
MAX_ANSWER_NGRAM = 4
#: answer tokens kept for drafts per call: the first answers already hold the phrases answers share, and the index
#: (~4 entries per token) stays a few MB however many rows one call judges
MAX_ANSWER_TOKENS = 16_384


class PromptLookup:
    """Draft tokens for one row from its own tokens so far: the continuation of the latest earlier occurrence of
    its last ``n`` tokens (``n`` = ``max_ngram`` down to 1)."""

    def __init__(self, tokens: list[int], max_ngram: int = MAX_NGRAM, index: dict | None = None, indexed: int = 0):
        self.tokens = list(tokens)
        self.max_ngram = max_ngram
        # n-gram -> position right after its latest occurrence that has a continuation
        self.index: dict[tuple[int, ...], int] = dict(index) if index else {}
        self._indexed = indexed  # tokens[:indexed] are in the index as continuations
        self._catch_up()

    @classmethod
    def after(cls, shared: PromptLookup, tokens: list[int]) -> PromptLookup:
        """A row whose tokens start with ``shared``'s (a call's shared prefix): its index is copied, not rebuilt."""
        return cls(shared.tokens + list(tokens), shared.max_ngram, shared.index, shared._indexed)

    def extend(self, tokens: list[int]) -> None:
        self.tokens.extend(tokens)
        self._catch_up()

    def draft(self, k: int, answers: AnswerLookup | None = None) -> list[int]:
        """Up to ``k`` guessed next tokens; [] when the row's last tokens never occurred before. With
        ``answers``, the continuation of the longest match among the row's own tokens and other rows' answers
        (the row's own at equal length)."""
        tokens = self.tokens
        own_n, own_start = 0, None
        for n in range(min(self.max_ngram, len(tokens) - 1), 0, -1):
            own_start = self.index.get(tuple(tokens[-n:]))
            if own_start is not None:
                own_n = n
                break
        if answers is not None:
            guess = answers.draft(tokens, k, longer_than=own_n)
            if guess:
                return guess
        return tokens[own_start : own_start + k] if own_start is not None else []

    def _catch_up(self) -> None:
        # token t continues the n-grams ending at t - 1 (the n-gram ending at the last token has no continuation
        # yet, so a row never finds itself)
        tokens, index = self.tokens, self.index
        for t in range(max(1, self._indexed), len(tokens)):
            for n in range(1, min(self.max_ngram, t) + 1):
                index[tuple(tokens[t - n : t])] = t
        self._indexed = max(self._indexed, len(tokens))


class AnswerLookup:
    """The answers a call's rows have given so far, as one n-gram index: drafts for a row from what the others
    wrote after the same tokens. Answers are indexed when first needed (no cost while no step drafts)."""

    def __init__(self, max_ngram: int = MAX_ANSWER_NGRAM, max_tokens: int = MAX_ANSWER_TOKENS):
        self.max_ngram, self.max_tokens = max_ngram, max_tokens
        self.answers: list[list[int]] = []
        self.kept_tokens = 0
        # n-gram -> (answer, position right after its latest occurrence there that has a continuation)
        self.index: dict[tuple[int, ...], tuple[int, int]] = {}
        self._indexed = 0  # answers[:_indexed] are in the index

    def add(self, answer: list[int]) -> None:
        if len(answer) > 1 and self.kept_tokens + len(answer) <= self.max_tokens:
            self.answers.append(list(answer))
            self.kept_tokens += len(answer)

    def draft(self, tokens: list[int], k: int, longer_than: int = 0) -> list[int]:
        """Up to ``k`` tokens that followed the longest n-gram (longer than ``longer_than``) ending ``tokens``
        in an answer; [] when none did."""
        self._catch_up()
        for n in range(min(self.max_ngram, len(tokens)), longer_than, -1):
            found = self.index.get(tuple(tokens[-n:]))
            if found is not None:
                answer, start = found
                return self.answers[answer][start : start + k]
        return []

    def _catch_up(self) -> None:
        index, max_ngram = self.index, self.max_ngram
        for a in range(self._indexed, len(self.answers)):
            answer = self.answers[a]
            for t in range(1, len(answer)):
                for n in range(1, min(max_ngram, t) + 1):
                    index[tuple(answer[t - n : t])] = (a, t)
        self._indexed = len(self.answers)


class DraftPolicy:
    """Whether the next decode step checks drafts: per batch size (a drafted step's extra cost grows with the rows:
    on the cpu-tiny natural benchmark 1.3x a plain step at 6 rows, 2.5x at 96), the kind of step (drafted or
    plain) with more answer tokens per second, each measured over a few adjacent steps; the other kind is
    re-measured every ``explore_every`` steps (the rows' answers change what drafts are worth)."""

    def __init__(self, trial_steps: int = 4, explore_every: int = 48):
        self.trial_steps, self.explore_every = trial_steps, explore_every
        self._by_rows: dict[int, _Trials] = {}
        # steps and answer tokens by kind (drafted or plain) over the call: the engine logs them at the end
        self.steps = {True: 0, False: 0}
        self.tokens = {True: 0, False: 0}

    def use_drafts(self, rows: int) -> bool:
        return self._trials(rows).use_drafts()

    def record(self, rows: int, drafted: bool, seconds: float, tokens: int) -> None:
        """A step of ``rows`` slots ran: ``drafted`` (with drafts checked), ``seconds`` long, ``tokens`` answer
        tokens produced."""
        self.steps[drafted] += 1
        self.tokens[drafted] += tokens
        self._trials(rows).record(drafted, seconds, tokens)

    def _trials(self, rows: int) -> _Trials:
        if rows not in self._by_rows:
            self._by_rows[rows] = _Trials(self.trial_steps, self.explore_every)
        return self._by_rows[rows]


class _Trials:
    def __init__(self, trial_steps: int, explore_every: int):
        self.trial_steps, self.explore_every = trial_steps, explore_every
        self.rate: dict[bool, float | None] = {True: None, False: None}  # answer tokens per second
        self._current: list[tuple[float, int]] = []  # (seconds, tokens) of the running trial
        self._trying: bool | None = True  # the kind of step under trial (drafted first); None: settled
        self._since_trial = 0

    def use_drafts(self) -> bool:
        if self._trying is not None:
            return self._trying
        return self._best()

    def record(self, drafted: bool, seconds: float, tokens: int) -> None:
        if self._trying is not None and drafted == self._trying:
            self._current.append((seconds, tokens))
            if len(self._current) >= self.trial_steps:
                seconds_sum = sum(s for s, _ in self._current)
                self.rate[drafted] = sum(t for _, t in self._current) / max(seconds_sum, 1e-9)
                self._current = []
                missing = [kind for kind in (True, False) if self.rate[kind] is None]
                self._trying = missing[0] if missing else None
                self._since_trial = 0
            return
        self._since_trial += 1
        if self._trying is None and self._since_trial >= self.explore_every:
            self._trying = not self._best()  # re-measure the kind not in use

    def _best(self) -> bool:
        drafted, plain = self.rate[True], self.rate[False]
        return drafted is not None and (plain is None or drafted > plain)
