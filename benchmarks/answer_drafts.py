"""What drafting from the call's earlier answers buys: the natural preset's judge, with and without `AnswerLookup`.

    python benchmarks/answer_drafts.py                        # the shipped table (96 rows here), then 8 rows
    python benchmarks/answer_drafts.py --rows 8 --judge-seed 1

Why: a row's prompt-lookup drafts also come from the answers other rows of the call already gave
(`radmetrics/judge/prompt_lookup.py`). Drafts run only while few rows are live (`DRAFT_MAX_ROWS`), so what this
buys depends on the table: with all 96 prompts in one table only the tail drafts, while a table smaller than the
input (a judge too large for more rows in memory, e.g. a 7B judge on a CPU) drafts in every step and admits later
prompts after earlier answers are known. Each round runs both variants on the same judge (interleaved, the order
alternating); answers must be equal, and the best round of each is printed with the decode steps it took.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[0, 8],
                        help="slot-table rows to measure (0: the shipped default)")
    parser.add_argument("--judge-seed", type=int, default=0, help="which build of the tiny judge (judge_throughput)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import tempfile

    import judge_throughput as bench

    from radmetrics.judge import greedy_engine, prompt_lookup
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    folder = Path(tempfile.gettempdir()) / ("radmetrics-bench-tiny-judge"
                                            + (f"-seed-{args.judge_seed}" if args.judge_seed else ""))
    model, tokenizer = bench.tiny_judge(folder, "cpu", args.judge_seed)
    prompts = bench.natural_prompts(96)

    class WithoutAnswers(prompt_lookup.AnswerLookup):
        def draft(self, tokens, k, longer_than=0):
            return []

    steps = []
    step = greedy_engine._SlotEngine._step_eager

    def counted(self, b, k, drafts=None):
        steps.append(b)
        return step(self, b, k, drafts)

    greedy_engine._SlotEngine._step_eager = counted
    variants = {"own tokens only": WithoutAnswers, "own tokens + earlier answers": prompt_lookup.AnswerLookup}
    for rows in args.rows:
        judge = TransformersJudge.from_objects(model, tokenizer, "tiny", **({"max_batch_size": rows} if rows else {}))
        judge.generate(prompts[:8], GenerationConfig(max_new_tokens=4, min_new_tokens=4), progress=False)
        best: dict[str, tuple[float, int]] = {}
        reference = None
        for r in range(args.rounds):
            for name in (list(variants) if r % 2 == 0 else list(reversed(variants))):
                greedy_engine.AnswerLookup = variants[name]
                steps.clear()
                start = time.perf_counter()
                answers = judge.generate(prompts, GenerationConfig(), progress=False)
                seconds = time.perf_counter() - start
                reference = reference or answers
                if answers != reference:
                    raise SystemExit(f"{name}: answers differ")
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, len(steps))
        greedy_engine.AnswerLookup = prompt_lookup.AnswerLookup
        base = best["own tokens only"][0]
        table = f"{rows} rows" if rows else "shipped table"
        for name, (seconds, n_steps) in best.items():
            print(f"{table:>13} | {name:<28} | {seconds:6.2f} s | {n_steps:4d} steps | {base / seconds:4.2f}x")


if __name__ == "__main__":
    main()
