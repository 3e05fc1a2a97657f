"""One decode step's attention, one layer, at the engine's shapes: the shipped kernels against length-aware ones.

The engine's decode attention (`radmetrics/judge/greedy_engine.py`, `shared_prefix_attention`) reads the shared
prefix once for the batch and each slot's **whole fixed window** (CUDA graphs need fixed shapes), though a row has
filled only part of it. Session 21 measured a 128-row gpu-7b decode step at ~50 ms on an H100 against a ~20 ms floor
for reading the weights and every window; a kernel that reads only each row's filled columns would lower that floor
by ~40% (BENCHMARKS.md). This script times, for one layer and one step:

- ``matmul``: the engine's matrix-product cascade (what CPU and fp32 runs use);
- ``cudnn``: the engine's cuDNN cascade (its CUDA default in fp16/bf16 when every query head has its own KV head);
- ``varlen``: the engine's length-aware attention (``decode_attention="varlen"``, `_varlen_cascade_attention`):
  the table laid out ``[rows, window, heads, dim]``, each row's own columns given as offsets and a count of filled
  columns to PyTorch's flash-attention kernel (fp16/bf16; the memory-efficient kernel in fp32), merged with the
  prefix part by log-sum-exp: reads only filled columns, fixed shapes (graph-capturable);
- ``flex``: ``torch.compile``d FlexAttention with a block mask of each row's columns (engine layout), its
  log-sum-exp merged with the prefix part; timed with the mask built beforehand and (``flex+mask``) within the step;

each checked against a float64 reference (max abs error), timed eagerly and, on CUDA, replayed from a CUDA graph
(median of ``--iters``), with the bytes each must read (filled columns only, or whole windows) and the rate that
gives. A candidate the installed torch or device cannot run is listed with the reason, not left out.

    python benchmarks/decode_attention.py --preset gpu-7b --json attention.json   # ~1 min on one GPU
    python benchmarks/decode_attention.py --preset gpu-7b --dtype float32 --only varlen   # the fp32 kernel
    python benchmarks/decode_attention.py --preset cpu-tiny     # checks each candidate's output; CPU kernels only
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: gpu-7b: Llama-2-7B's attention (32 heads, one KV head each, 128 dims), the judge_throughput gpu-7b preset's
#: table (128 rows; 565-token prompts on average of which 223 are the shared prefix; 300 forced answer tokens, so
#: a window of 531 own + 300 answer columns + the scratch column), mid-answer (150 tokens generated).
PRESETS = {
    "gpu-7b": dict(device="cuda", dtype="bfloat16", rows=128, heads=32, kv_heads=32, head_dim=128, prefix=223,
                   own_min=150, own_max=531, reserve=300, generated=150, iters=50),
    "cpu-tiny": dict(device="cpu", dtype="float32", rows=96, heads=8, kv_heads=1, head_dim=64, prefix=223,
                     own_min=180, own_max=368, reserve=128, generated=64, iters=20),
}
DTYPES = ("float16", "bfloat16", "float32")


def build_case(torch, preset: dict, seed: int = 0) -> SimpleNamespace:
    """Random queries, keys and values of the preset's shapes, each row's own columns ``start..end`` (right-aligned
    own tokens in a window, as the engine's prefill leaves them, then ``generated`` answer columns)."""
    g = torch.Generator().manual_seed(seed)
    dev, dtype = torch.device(preset["device"]), getattr(torch, preset["dtype"])
    rows, heads, kv, dim = preset["rows"], preset["heads"], preset["kv_heads"], preset["head_dim"]
    width = 1 + preset["own_max"] + preset["reserve"]  # column 0 is the engine's scratch column
    own = torch.randint(preset["own_min"], preset["own_max"] + 1, (rows,), generator=g)
    start = 1 + preset["own_max"] - own  # right-aligned prompts
    end = start + own + preset["generated"] - 1  # the column this step writes (inclusive)

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(dev, dtype)

    # one storage per layout: the engine's [rows, kv_heads, width, dim], and [rows, width, kv_heads, dim] for the
    # varlen kernels (which need a row's columns contiguous across heads); the same numbers in both
    keys, values = rand(rows, kv, width, dim), rand(rows, kv, width, dim)
    return SimpleNamespace(
        rows=rows, heads=heads, kv_heads=kv, dim=dim, width=width, dtype=dtype, device=dev,
        query=rand(rows, heads, 1, dim), keys=keys, values=values,
        keys_by_column=keys.transpose(1, 2).contiguous(), values_by_column=values.transpose(1, 2).contiguous(),
        prefix_keys=rand(1, kv, preset["prefix"], dim), prefix_values=rand(1, kv, preset["prefix"], dim),
        start=start.to(dev), end=end.to(dev), scale=dim**-0.5,
        filled=int((end - start + 1).sum()), columns=torch.arange(width, device=dev))


def reference(torch, case) -> object:
    """Float64 attention of each row over [shared prefix] + its own columns start..end: ``[rows, 1, heads, dim]``."""
    group = case.heads // case.kv_heads
    out = torch.empty(case.rows, 1, case.heads, case.dim, dtype=torch.float64)
    q = case.query.double().cpu()
    for b in range(case.rows):
        s, e = int(case.start[b]), int(case.end[b])
        k = torch.cat([case.prefix_keys[0], case.keys[b, :, s: e + 1]], dim=1).double().cpu()  # [kv, n, d]
        v = torch.cat([case.prefix_values[0], case.values[b, :, s: e + 1]], dim=1).double().cpu()
        k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
        p = torch.softmax(q[b] @ k.transpose(1, 2) * case.scale, dim=-1)  # [heads, 1, n]
        out[b] = (p @ v).transpose(0, 1)
    return out


def _mask(case):
    """The engine's decode mask: ``[rows, 1, 1, width]`` booleans, each row's own filled columns."""
    cols = case.columns
    return ((cols >= case.start[:, None]) & (cols <= case.end[:, None]))[:, None, None]


def _slot_columns(torch, case):
    """Each row's own columns as the engine gives them to its varlen attention (`greedy_engine.SlotColumns`): row
    b's keys start at b * width + start[b] of the flattened table; end - start + 1 of them are filled."""
    from radmetrics.judge.greedy_engine import SlotColumns

    i32 = dict(dtype=torch.int32, device=case.device)
    key_starts = torch.cat([torch.arange(case.rows, **i32) * case.width + case.start.to(torch.int32),
                            torch.tensor([case.rows * case.width], **i32)])
    return SlotColumns(torch.arange(case.rows + 1, **i32), key_starts, (case.end - case.start + 1).to(torch.int32),
                       case.width)


def candidates(torch) -> dict:
    """name -> builder(case) returning a step function (no arguments, returns ``[rows, 1, heads, dim]``), or raising
    with the reason it cannot run here."""
    from radmetrics.judge import greedy_engine as engine

    def matmul(case):
        mask, layer = _mask(case), SimpleNamespace(layer_idx=0)
        prefix = [(case.prefix_keys, case.prefix_values)]

        def step():
            previous, engine._CUDNN_CASCADE = engine._CUDNN_CASCADE, False  # the matmul path, also on CUDA
            try:
                return engine.shared_prefix_attention(layer, case.query, case.keys, case.values, mask,
                                                      scaling=case.scale, shared_prefix_kv=prefix)[0]
            finally:
                engine._CUDNN_CASCADE = previous
        return step

    def cudnn(case):
        if not engine._use_cudnn_cascade(case.query, case.keys, _mask(case)):
            raise RuntimeError("the engine uses cuDNN only on CUDA, in fp16/bf16, with one KV head per query head")
        mask, prefix = _mask(case), (case.prefix_keys, case.prefix_values)
        return lambda: engine._cudnn_cascade_attention(case.query, case.keys, case.values, mask, prefix, case.scale)

    def varlen(case):
        # on CPU no kernel takes the offsets: the engine's masked stand-in (checks the offsets, times nothing useful)
        columns = _slot_columns(torch, case)
        # the table as the engine stores it for "varlen": [rows, width, kv_heads, dim], viewed [rows, kv_heads, ...]
        keys, values = case.keys_by_column.transpose(1, 2), case.values_by_column.transpose(1, 2)
        prefix = (case.prefix_keys, case.prefix_values)
        return lambda: engine._varlen_cascade_attention(case.query, keys, values, prefix, columns, case.scale)

    def flex(case, build_mask_in_step: bool = False):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        start, end = case.start, case.end

        def own_columns(b, h, q_idx, kv_idx):
            return (kv_idx >= start[b]) & (kv_idx <= end[b])

        compiled = torch.compile(flex_attention, dynamic=False) if case.device.type == "cuda" else flex_attention
        def make_mask():
            return create_block_mask(own_columns, case.rows, None, 1, case.width, device=case.device,
                                     _compile=case.device.type == "cuda")

        prebuilt = make_mask()
        prefix = (case.prefix_keys, case.prefix_values)

        def step():
            mask = make_mask() if build_mask_in_step else prebuilt
            out_own, lse_own = compiled(case.query, case.keys, case.values, block_mask=mask, scale=case.scale,
                                        enable_gqa=case.heads != case.kv_heads, return_lse=True)
            out = engine._merged(out_own.float(), lse_own[..., None].float(),
                                 *engine._prefix_part(case.query, prefix, case.scale))
            return out.transpose(1, 2).to(case.dtype)
        return step

    return {"matmul": matmul, "cudnn": cudnn, "varlen": varlen, "flex": flex, "flex+mask": lambda case: flex(case, build_mask_in_step=True)}


def timed(torch, step, case, iters: int) -> dict:
    """Median seconds of ``step`` eagerly and, on CUDA, replayed from a CUDA graph (None where capture fails)."""
    cuda = case.device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def median(call) -> float:
        seconds = []
        for _ in range(iters):
            sync()
            t = time.perf_counter()
            call()
            sync()
            seconds.append(time.perf_counter() - t)
        return statistics.median(seconds)

    for _ in range(3):
        step()
    result = {"eager_ms": median(step) * 1e3, "graph_ms": None}
    if cuda:
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            result["graph_ms"] = median(graph.replay) * 1e3
        except Exception as e:  # noqa: BLE001 - a kernel that cannot be captured: its eager time stands
            result["graph_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--generated", type=int, help="answer tokens already generated (how far into the answer)")
    parser.add_argument("--dtype", choices=DTYPES)
    parser.add_argument("--iters", type=int)
    parser.add_argument("--only", nargs="+", help="candidates to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    preset = dict(PRESETS[args.preset])
    for key in ("rows", "generated", "dtype", "iters"):
        if getattr(args, key) is not None:
            preset[key] = getattr(args, key)

    import torch

    case = build_case(torch, preset)
    expected = reference(torch, case)
    element = case.keys.element_size()
    per_column = 2 * case.kv_heads * case.dim * element  # a key and a value
    filled_bytes = (case.filled + preset["prefix"]) * per_column
    window_bytes = (case.rows * case.width + preset["prefix"]) * per_column
    rows = []
    for name, build in candidates(torch).items():
        if args.only and name not in args.only:
            continue
        row = {"candidate": name}
        try:
            compile_start = time.perf_counter()
            step = build(case)
            got = step()
            row["first_call_s"] = round(time.perf_counter() - compile_start, 2)  # includes torch.compile
            row["max_abs_error"] = float((got.double().cpu() - expected).abs().max())
            row.update(timed(torch, step, case, preset["iters"]))
            best = min(t for t in (row["eager_ms"], row["graph_ms"]) if t is not None)
            row["useful_gb_per_s"] = round(filled_bytes / (best / 1e3) / 1e9, 1)
        except Exception as e:  # noqa: BLE001 - a candidate this torch or device cannot run: say why
            row["unavailable"] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]
        rows.append(row)

    result = {"preset": args.preset, "settings": preset, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if case.device.type == "cuda" else "cpu",
              "filled_columns": case.filled, "window_columns": case.rows * case.width,
              "bytes_filled_mb": round(filled_bytes / 1e6, 1), "bytes_windows_mb": round(window_bytes / 1e6, 1),
              "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print(f"{args.preset} ({result['device']}, torch {torch.__version__}): {case.rows} rows, window {case.width}, "
          f"{case.filled / case.rows:.0f} filled columns a row on average, {preset['prefix']} prefix; one layer "
          f"reads {result['bytes_filled_mb']} MB (filled columns) or {result['bytes_windows_mb']} MB (windows)")
    print("\n| candidate | eager ms | graph ms | GB/s of filled columns | max abs error | first call s |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        if "unavailable" in row:
            print(f"| {row['candidate']} | unavailable: {row['unavailable']} | | | | |")
            continue
        graph = f"{row['graph_ms']:.3f}" if row["graph_ms"] is not None else "–"
        print(f"| {row['candidate']} | {row['eager_ms']:.3f} | {graph} | {row['useful_gb_per_s']} | "
              f"{row['max_abs_error']:.2e} | {row['first_call_s']} |")


if __name__ == "__main__":
    main()
