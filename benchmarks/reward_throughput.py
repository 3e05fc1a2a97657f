"""Reward throughput (completions/s) as GRPO calls a reward: a few reward calls of `batch` completions each
(prompts x generations), every call a fresh batch of completions the judge has never seen.

    python benchmarks/reward_throughput.py --preset cpu-tiny
    python benchmarks/reward_throughput.py --preset gpu-7b          # on a GPU

Contenders, same random-weight model shape (benchmarks/judge_throughput.py PRESETS), same report pairs:
- baseline: the official GREEN loop (judge_throughput.official_loop: HF generate, batches of 8 in input order)
  called on each reward batch — what a reward function wrapping upstream GREEN does — plus GREEN's parsing;
- radmetrics GREEN reward (`radmetrics.rewards.reward_function("green", judge=<ready judge>)`, the judge at its
  defaults, no options): one batched call per reward call on the transformers backend's greedy engine, parse,
  orientation, unscored handling; no response cache (every completion is new, as in RL);
- radmetrics ER²Score reward (`er2score_reward`): a multi-reward head on a backbone of the same shape, one
  forward pass per batch, no generation.
Output tokens are forced (EOS suppressed until N, as in judge_throughput) so that both GREEN contenders do the
same work; random weights mean the judge's answers are unreadable (every GREEN row unscored), which costs the
parser nothing it would not spend on real answers. Each round runs every contender once; the fastest round is
kept; ratios are to the baseline of the same run.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from judge_throughput import PRESETS, build_model, official_loop, report_pairs  # noqa: E402


def er2score_model(model, tok, device: str):
    """ER²Score's reward model (radmetrics.er2score.model) on the judge's backbone (random weights), random head."""
    import copy

    import torch

    from radmetrics.er2score.model import MultiRewardModel
    from radmetrics.er2score.pairs import CRITERIA

    backbone = model.model  # LlamaModel: the causal LM without its LM head, as AutoModel loads it
    torch.manual_seed(0)
    head = torch.nn.Linear(backbone.config.hidden_size, len(CRITERIA["radcliq"])).to(device)
    # its own tokenizer copy: the reward model pads on the right, the judge on the left
    return MultiRewardModel(backbone, copy.deepcopy(tok), CRITERIA["radcliq"], "random-backbone", head=head)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--batch", type=int, default=32, help="completions per reward call (prompts x generations)")
    parser.add_argument("--calls", type=int, default=3, help="reward calls per round")
    parser.add_argument("--out-tokens", type=int, help="forced judge output tokens (default: the preset's)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    preset = dict(PRESETS[args.preset])
    n_tok = args.out_tokens or preset["out_tokens"]

    import torch

    from radmetrics.green import build_green_prompt
    from radmetrics.judge import CachedJudge
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.rewards import er2score_reward, reward_function
    from radmetrics.runner import read_answer
    from radmetrics.types import GenerationConfig

    pairs = report_pairs(args.batch * args.calls, preset["report_repeat"])
    batches = [pairs[i * args.batch:(i + 1) * args.batch] for i in range(args.calls)]
    prompts = [build_green_prompt(r, c) for r, c in pairs]
    model, tok = build_model(preset, prompts)
    # the judge at its defaults (no batch options): what `reward_function("green", judge=...)` users get
    judge = CachedJudge(TransformersJudge.from_objects(model, tok, "random-green-judge", chat_template="green"),
                        cache=None)
    config = GenerationConfig(max_new_tokens=n_tok, min_new_tokens=n_tok)
    green = reward_function("green", judge=judge, config=config)
    er2 = er2score_reward(er2score_model(model, tok, preset["device"]))
    system = green.system

    def baseline():
        out = []
        for batch in batches:
            texts = official_loop(model, tok, [build_green_prompt(r, c) for r, c in batch], n_tok)
            out += [read_answer(system, t, r, c).score for t, (r, c) in zip(texts, batch)]
        return out

    def radmetrics_green():
        return [x for b in batches for x in green(completions=[c for _, c in b], reference=[r for r, _ in b])]

    def radmetrics_er2score():
        out = []
        for b in batches:
            er2.shared._memo = None  # the last-batch memo serves the per-criterion functions; RL batches are new
            out += er2(completions=[c for _, c in b], reference=[r for r, _ in b])
        return out

    contenders = {"official GREEN loop per reward batch (baseline)": baseline,
                  "radmetrics GREEN reward (greedy engine)": radmetrics_green,
                  "radmetrics ER²Score reward (one forward pass)": radmetrics_er2score}
    official_loop(model, tok, prompts[:8], 4)  # warm-up
    judge.generate(prompts[:8], GenerationConfig(max_new_tokens=4, min_new_tokens=4), progress=False)
    er2(completions=[c for _, c in pairs[:8]], reference=[r for r, _ in pairs[:8]])
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, run in contenders.items():
            if preset["device"] == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            run()
            if preset["device"] == "cuda":
                torch.cuda.synchronize()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    n = len(pairs)
    base = best["official GREEN loop per reward batch (baseline)"]
    rows = [{"contender": k, "seconds": s, "completions_per_s": n / s, "ratio": base / s} for k, s in best.items()]
    info = {"preset": args.preset, "batch": args.batch, "calls": args.calls, "completions": n,
            "forced_output_tokens": n_tok, "rounds": args.rounds, "dtype": preset["dtype"],
            "device": torch.cuda.get_device_name() if preset["device"] == "cuda" else platform.processor() or "cpu",
            "cpu_threads": torch.get_num_threads(), "torch": torch.__version__,
            "green_unscored": green.unscored, "er2score_forward_passes": er2.forward_passes}
    print(json.dumps(info, indent=1))
    print("\n| contender | completions/s | seconds | ratio to baseline |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['contender']} | {r['completions_per_s']:.2f} | {r['seconds']:.2f} | {r['ratio']:.2f}× |")
    if args.json:
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
