"""The natural run's tail: its longest answers alone, at several draft lengths (`draft_tokens`).

    python benchmarks/tail_drafts.py                      # the 3 longest answers of the natural preset's 96
    python benchmarks/tail_drafts.py --tail 1 --draft-tokens 4 16

Why: in `judge_throughput.py --mode natural` the last steps run one to three rows (the answers that outgrew the
slot table's reserve, continued in a second table: 164 steps for 3 rows in session 34), where a step costs about the
same at 1 row as at 3 (its ~900 small operations, not its bytes). A longer draft costs such a step almost nothing
more, so it would pay if the drafts were right for longer. Each round runs every draft length on the same judge
(interleaved); answers must be equal; the best and the median round of each are printed.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tail", type=int, default=3, help="the longest answers to time (of the 96)")
    parser.add_argument("--draft-tokens", type=int, nargs="+", default=[4, 8, 12, 16])
    parser.add_argument("--judge-seed", type=int, default=0, help="which build of the tiny judge (judge_throughput)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from judge_throughput import natural_prompts, tiny_judge

    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    prompts = natural_prompts(96)
    folder = Path(tempfile.gettempdir()) / ("radmetrics-bench-tiny-judge" +
                                            (f"-seed-{args.judge_seed}" if args.judge_seed else ""))
    model, tok = tiny_judge(folder, "cpu", args.judge_seed)
    config = GenerationConfig()  # the shipped max_new_tokens
    answers = TransformersJudge.from_objects(model, tok, "tiny-green-judge").generate(prompts, config, progress=False)
    lengths = sorted((len(tok(str(a), add_special_tokens=False)["input_ids"]), i) for i, a in enumerate(answers))
    tail = [prompts[i] for _, i in lengths[-args.tail:]]
    print(f"the {args.tail} longest answers: {[n for n, _ in lengths[-args.tail:]]} tokens")
    judges = {d: TransformersJudge.from_objects(model, tok, "tiny-green-judge", draft_tokens=d)
              for d in args.draft_tokens}
    first = {d: [str(t) for t in judge.generate(tail, config, progress=False)] for d, judge in judges.items()}
    assert all(texts == first[args.draft_tokens[0]] for texts in first.values()), "answers differ with the drafts"
    seconds: dict[int, list[float]] = {d: [] for d in judges}
    for _ in range(args.rounds):
        for d, judge in judges.items():
            started = time.perf_counter()
            judge.generate(tail, config, progress=False)
            seconds[d].append(time.perf_counter() - started)
    print("| draft_tokens | best s | median s |\n| ---: | ---: | ---: |")
    for d, times in seconds.items():
        print(f"| {d} | {min(times):.3f} | {sorted(times)[len(times) // 2]:.3f} |")


if __name__ == "__main__":
    main()
