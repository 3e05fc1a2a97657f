"""How many decode steps each prompt-lookup draft policy would take on the natural preset's answers, replayed.

    python benchmarks/draft_policies.py                     # the 3 longest answers and all 96
    python benchmarks/draft_policies.py --draft-tokens 4 8 --tail 5

Why: a drafted step keeps the guessed tokens the model agrees with, so with greedy decoding the steps a policy takes
follow from the answers alone: replay each answer token by token, guess as the policy would from the row's prompt,
its answer so far and the other rows' answers, and keep the guess's longest prefix equal to what the answer says
next (the model's own choice). No model runs after the answers are made, so policies are compared exactly, without
timing noise; what a step costs is measured elsewhere (`judge_throughput.py`, `tail_drafts.py`). The other rows'
answers are all indexed (in a call only those finished before), so answer-drafts count at their best.

Policies (k = --draft-tokens guesses a step):
* ``latest``: the continuation of the longest n-gram's latest occurrence (the row's own before other answers at
  equal length): what the engine ships (`radmetrics.judge.prompt_lookup`);
* ``vote-L``: the continuations of the n-gram's L latest occurrences vote token by token (no more inputs a step);
* ``best-of-M``: M distinct continuations checked in one step as a tree (M x k inputs a step; the one the model
  agrees with longest is kept).
Session 37 (BENCHMARKS.md): vote-4 needed ~20% fewer steps than latest, best-of-8 ~45% fewer; in the engine the first
saved 5.5% of the default run's steps and no time measurable, the second cost more per step than it saved.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OWN_NGRAM, ANSWER_NGRAM = 3, 4  # as radmetrics.judge.prompt_lookup (MAX_NGRAM, MAX_ANSWER_NGRAM)


class Index:
    """n-gram -> the positions after its latest ``keep`` occurrences in a sequence (latest first)."""

    def __init__(self, max_ngram: int, keep: int):
        self.max_ngram, self.keep, self.at = max_ngram, keep, {}

    def add(self, source: int, tokens: list[int], t: int) -> None:  # tokens[t] continues the n-grams ending at t-1
        for n in range(1, min(self.max_ngram, t) + 1):
            key = tuple(tokens[t - n : t])
            self.at[key] = ((source, t),) + self.at.get(key, ())[: self.keep - 1]


def steps(prompt: list[int], answer: list[int], others: list[list[int]], policy: str, k: int) -> int:
    kind, size = policy.split("-")[0], policy.rsplit("-", 1)[-1]  # latest, vote-L, best-of-M
    keep = int(size) if kind in ("vote", "best") else 1
    sources = {0: list(prompt)} | {i + 1: a for i, a in enumerate(others)}
    own, answers = Index(OWN_NGRAM, keep), Index(ANSWER_NGRAM, keep)
    for i, other in enumerate(others):
        for t in range(1, len(other)):
            answers.add(i + 1, other, t)
    row = sources[0]
    for t in range(1, len(row)):
        own.add(0, row, t)
    taken, i = 0, 0
    while i < len(answer):
        row.append(answer[i])  # the step's input: the answer's next token
        own.add(0, row, len(row) - 1)
        guesses = []
        for n in range(max(OWN_NGRAM, ANSWER_NGRAM), 0, -1):
            key = tuple(row[-n:])
            found = (own.at.get(key, ()) if n <= OWN_NGRAM and n < len(row) else ()) + answers.at.get(key, ())
            guesses = [g for g in (sources[s][p : p + k] for s, p in found) if g]
            if guesses:
                break
        if kind == "vote":
            guesses = [_voted(guesses, k)]
        elif kind == "latest":
            guesses = guesses[:1]
        else:  # best-of-M: M distinct guesses
            guesses = list(dict.fromkeys(map(tuple, guesses)))[: int(size)]
        truth = answer[i + 1 : i + 1 + k]
        kept = max((_agreed(g, truth) for g in guesses), default=0)
        i += 1 + kept
        taken += 1
    return taken


def _agreed(guess, truth) -> int:
    n = 0
    while n < min(len(guess), len(truth)) and guess[n] == truth[n]:
        n += 1
    return n


def _voted(continuations: list[list[int]], k: int) -> list[int]:
    """Token by token the next token most continuations that agree so far give (the latest at a tie)."""
    pool, guess = [c for c in continuations if c], []
    while pool and len(guess) < k:
        j = len(guess)
        votes: dict[int, int] = {}
        for c in pool:
            votes[c[j]] = votes.get(c[j], 0) + 1
        top = max(votes.values())
        token = next(c[j] for c in pool if votes[c[j]] == top)
        guess.append(token)
        pool = [c for c in pool if c[j] == token and len(c) > j + 1]
    return guess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", nargs="+", default=["latest", "vote-4", "vote-8", "best-of-4", "best-of-8"])
    parser.add_argument("--draft-tokens", type=int, nargs="+", default=[4])
    parser.add_argument("--tail", type=int, default=3, help="the longest answers, shown one by one")
    parser.add_argument("--judge-seed", type=int, default=0, help="which build of the tiny judge (judge_throughput)")
    args = parser.parse_args()

    from judge_throughput import natural_prompts, tiny_judge

    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    prompts = natural_prompts(96)
    folder = Path(tempfile.gettempdir()) / ("radmetrics-bench-tiny-judge" +
                                            (f"-seed-{args.judge_seed}" if args.judge_seed else ""))
    model, tok = tiny_judge(folder, "cpu", args.judge_seed)
    judge = TransformersJudge.from_objects(model, tok, "tiny-green-judge")
    texts = [str(a) for a in judge.generate(prompts, GenerationConfig(), progress=False)]
    encode = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    rows = [(encode(p), encode(a)) for p, a in zip(prompts, texts)]
    order = sorted(range(len(rows)), key=lambda r: len(rows[r][1]))
    tail = order[-args.tail:]
    print(f"answers: {sum(len(a) for _, a in rows)} tokens; the {args.tail} longest: "
          f"{[len(rows[r][1]) for r in tail]}")
    print("| policy | draft tokens | steps, the longest answers | steps, all answers |\n| --- | ---: | ---: | ---: |")
    for k in args.draft_tokens:
        for policy in args.policies:
            counts = [steps(p, a, [rows[o][1] for o in range(len(rows)) if o != r], policy, k)
                      for r, (p, a) in enumerate(rows)]
            print(f"| {policy} | {k} | {', '.join(str(counts[r]) for r in tail)} | {sum(counts)} |")


if __name__ == "__main__":
    main()
