"""Where the default judge's time goes: the default contender of `judge_throughput.py` (no options: what
`radmetrics score --judge X` runs) on the preset's forced-length GREEN prompts, timed once, then once more under
`torch.profiler`: the operators that took the most device time (CUDA; CPU time on CPU), and the figures a
bandwidth floor is reckoned from (weight bytes, key/value bytes per token, rows and tokens).

    python benchmarks/decode_profile.py --preset gpu-7b --json profile.json --trace trace.json   # ~2 min, one GPU
    python benchmarks/decode_profile.py --preset cpu-tiny --n 32

Prepared for a session that is lent a GPU (BENCHMARKS.md, session 21: a 128-row decode step of the gpu-7b preset
took ~50 ms on an H100 against ~20 ms to read the weights and every slot's window once; this says where the rest
goes). The profiled run is slower than the timed one (the profiler's own cost); compare operators with each other,
not with the timed seconds.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_throughput import add_workload_arguments, forced_workload, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_workload_arguments(parser)
    parser.add_argument("--top", type=int, default=25, help="operators listed")
    parser.add_argument("--json", type=Path, help="also write the figures and the top operators here")
    parser.add_argument("--trace", type=Path, help="also write the profiled run's Chrome trace here")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    preset, n, out_tokens, prompts, model, tok = forced_workload(args)
    cuda = preset["device"] == "cuda"
    judge = TransformersJudge.from_objects(model, tok, "random-green-judge")  # the default: no options
    config = GenerationConfig(max_new_tokens=out_tokens, min_new_tokens=out_tokens)
    judge.generate(prompts[:8], GenerationConfig(max_new_tokens=4, min_new_tokens=4), progress=False)  # warm-up

    def run() -> float:
        return timed(lambda: judge.generate(prompts, config, progress=False), preset["device"])[1]

    seconds = run()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        profiled_seconds = run()
    if args.trace:
        prof.export_chrome_trace(str(args.trace))

    def self_us(event) -> float:  # microseconds; `self_cuda_time_total` before torch 2.4
        if not cuda:
            return event.self_cpu_time_total
        return getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0) or 0

    events = sorted(prof.key_averages(), key=self_us, reverse=True)
    total = sum(map(self_us, events)) or 1
    top = [{"op": e.key, "calls": e.count, "self_ms": self_us(e) / 1e3, "share": self_us(e) / total}
           for e in events[: args.top]]

    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    bytes_per = next(model.parameters()).element_size()
    figures = {
        "preset": args.preset, "n": n, "forced_output_tokens": out_tokens,
        "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
        "seconds": round(seconds, 3), "samples_per_s": round(n / seconds, 2),
        "profiled_seconds": round(profiled_seconds, 3),
        "weights_gb": round(sum(p.numel() for p in model.parameters()) * bytes_per / 1e9, 3),
        "kv_mib_per_token": cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * bytes_per / 2**20,
        "prompt_tokens_mean": round(sum(len(judge.encode(p)) for p in prompts) / n, 1),
        "peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "time_measured": "device (CUDA kernels)" if cuda else "CPU",
        "top_ops": top,
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    print(f"{args.preset}: {n} prompts x {out_tokens} tokens, {seconds:.2f} s ({n / seconds:.2f} samples/s); "
          f"profiled run {profiled_seconds:.2f} s; weights {figures['weights_gb']} GB, keys/values "
          f"{figures['kv_mib_per_token']:.4g} MiB per token")
    print(f"\n| operator | calls | self {'device' if cuda else 'CPU'} ms | share |\n| --- | ---: | ---: | ---: |")
    for row in top:
        print(f"| `{row['op'][:80]}` | {row['calls']} | {row['self_ms']:.1f} | {row['share']:.1%} |")


if __name__ == "__main__":
    main()
