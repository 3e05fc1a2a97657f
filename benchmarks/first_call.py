"""Does a process's first full-size engine call pay a one-time cost the next calls do not? The gpu-7b preset's
default judge, warmed on 8 prompts x 4 tokens as judge_throughput.py warms every contender, then the full call
four times: twice on one judge, once on a second default judge over the same model, once more on the first; with
the allocator's new segments (cudaMalloc calls) of each call. ``--no-cudnn-sdp`` turns cuDNN off in PyTorch's
``scaled_dot_product_attention`` (the prefill's passes; the decode steps call cuDNN's kernel directly and keep it):
cuDNN builds an execution plan for each new shape, once per process, and the prefill's passes come in many shapes;
if the first call's extra time goes with it, that is the cost.

    python benchmarks/first_call.py --preset gpu-7b                  # ~1 min on an H200
    python benchmarks/first_call.py --preset gpu-7b --no-cudnn-sdp
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
    parser.add_argument("--json", type=Path, help="also write each call's seconds and new segments here")
    parser.add_argument("--no-cudnn-sdp", action="store_true", help="PyTorch's cuDNN attention off (CUDA)")
    args = parser.parse_args()

    import torch

    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    if args.no_cudnn_sdp:
        torch.backends.cuda.enable_cudnn_sdp(False)
    preset, n, out_tokens, prompts, model, tok = forced_workload(args)
    cuda = preset["device"] == "cuda"
    first, second = (TransformersJudge.from_objects(model, tok, "random-green-judge") for _ in range(2))
    warm = GenerationConfig(max_new_tokens=4, min_new_tokens=4)
    for judge in (first, second):
        judge.generate(prompts[:8], warm, progress=False)
    config = GenerationConfig(max_new_tokens=out_tokens, min_new_tokens=out_tokens)

    def segments() -> int:
        return torch.cuda.memory_stats().get("segment.all.allocated", 0) if cuda else 0

    calls = []
    for label, judge in (("first judge, call 1", first), ("first judge, call 2", first),
                         ("second judge, call 1", second), ("first judge, call 3", first)):
        before = segments()
        _, seconds, _ = timed(lambda judge=judge: judge.generate(prompts, config, progress=False), preset["device"])
        calls.append({"call": label, "seconds": round(seconds, 3), "samples_per_s": round(n / seconds, 2),
                      "new_segments": segments() - before})
        print(f"{label}: {seconds:.2f} s ({n / seconds:.2f} samples/s), new allocator segments "
              f"{calls[-1]['new_segments']}", flush=True)
    if args.json:
        info = {"preset": args.preset, "n": n, "forced_output_tokens": out_tokens, "torch": torch.__version__,
                "device": torch.cuda.get_device_name() if cuda else "cpu",
                "cudnn_sdp": torch.backends.cuda.cudnn_sdp_enabled()}
        args.json.write_text(json.dumps({"info": info, "calls": calls}, indent=1))


if __name__ == "__main__":
    main()
