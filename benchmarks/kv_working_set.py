"""How fast a CPU decode step reads its keys and values, by how much of them there are: the natural cpu-tiny step's
own-key attention (96 rows, 2 query heads on one KV head, 64 dims, 2 layers: q·Kᵀ, softmax, P·V per layer) over a
growing number of filled columns, each timed over ``--steps`` consecutive steps, as a decode loop reads them.

Why: the natural preset's 96-row steps spend half their time in these products (BENCHMARKS.md, sessions 9 and 30).
While the step's keys and values fit the CPU's last-level cache, consecutive steps read them from there; past it,
from memory. Session 30 (AMD EPYC, 32 MiB L3): ~30 GB/s up to ~20 MB, 18-19 GB/s from ~35 MB, where a 96-row step
of the natural preset sits (~42 MB at 430 columns). Beside each, a plain read of the same bytes (a reduction): session
31 measured ~50 GB/s at 42 MB, so there the batched products, not the memory, set the rate.

Other formulations of the same step, measured beside it (``--variants``; session 33, none faster here):
``flipped``, q·Kᵀ computed as (K·qᵀ)ᵀ; ``compiled``, the step as ``torch.compile`` (inductor, ``dynamic=True``)
builds it from a multiply-and-reduce that reads each key once for both query heads (its compile time is printed);
``kernel`` (session 38), the engine's compiled C kernel (`radmetrics.judge.cpu_attention`), which reads each row's
keys and values once for both query heads (its first call includes building it when no built copy is cached).

    python benchmarks/kv_working_set.py                      # the natural preset's shape
    python benchmarks/kv_working_set.py --rows 48 --layers 4 --columns 200 400 800
    python benchmarks/kv_working_set.py --columns 430 --variants flipped compiled
    python benchmarks/kv_working_set.py --columns 430 --variants kernel
"""
from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=96)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--query-heads", type=int, default=2, help="query heads per KV head")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--columns", type=int, nargs="+", default=[150, 200, 250, 300, 350, 430, 500])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--variants", nargs="*", default=[], choices=["flipped", "compiled", "kernel"],
                        help="other formulations of the step, timed beside it")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()

    import torch

    window = max(args.columns) + 64
    # one table per layer for keys and one for values, allocated once as the engine's slot table is
    tables = [torch.randn(args.rows, 1, window, args.dim) for _ in range(2 * args.layers)]
    query = torch.randn(args.rows, 1, args.query_heads, args.dim)
    rows = []
    forms = {"flipped": _flipped, "compiled": _compiled(torch), "kernel": _kernel}

    def timed(step) -> float:
        for _ in range(20):  # warm-up: the tensors' pages, the kernels' first calls
            step()
        started = time.perf_counter()
        for _ in range(args.steps):
            step()
        return (time.perf_counter() - started) / args.steps

    for cols in args.columns:
        def attention(cols: int = cols) -> None:
            for layer in range(args.layers):
                keys, values = tables[2 * layer][:, :, :cols], tables[2 * layer + 1][:, :, :cols]
                torch.matmul(torch.matmul(query, keys.transpose(2, 3)).softmax(-1), values)

        def plain_read(cols: int = cols) -> None:  # the same bytes streamed by a reduction: what the memory gives
            for table in tables:
                table[:, :, :cols].sum()

        def variant(form, cols: int = cols) -> None:
            for layer in range(args.layers):
                form(query, tables[2 * layer][:, :, :cols], tables[2 * layer + 1][:, :, :cols])

        seconds, read_seconds = timed(attention), timed(plain_read)
        megabytes = 2 * args.layers * args.rows * cols * args.dim * 4 / 1e6
        row = {"columns": cols, "working_set_mb": round(megabytes, 1), "ms_per_step": round(seconds * 1e3, 3),
               "gb_per_s": round(megabytes / 1e3 / seconds, 1),
               "plain_read_gb_per_s": round(megabytes / 1e3 / read_seconds, 1)}
        for name in args.variants:
            started = time.perf_counter()
            variant(forms[name])  # the first call: a compile, for the compiled form
            first_call = time.perf_counter() - started
            row[f"{name}_ms_per_step"] = round(timed(lambda form=forms[name]: variant(form)) * 1e3, 3)
            row[f"{name}_first_call_s"] = round(first_call, 2)
        rows.append(row)
        others = "".join(f"; {name} {row[f'{name}_ms_per_step']:.3f} ms (first call {row[f'{name}_first_call_s']} s)"
                         for name in args.variants)
        print(f"{cols:5d} columns  {megabytes:6.1f} MB  {seconds * 1e3:7.3f} ms a step  "
              f"{megabytes / 1e3 / seconds:5.1f} GB/s  (a plain read of the same bytes: "
              f"{megabytes / 1e3 / read_seconds:5.1f} GB/s){others}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "layers": args.layers, "threads": torch.get_num_threads(),
                       "torch": torch.__version__, "results": rows}, f, indent=1)


def _flipped(query, keys, values):
    """q·Kᵀ as (K·qᵀ)ᵀ: the product with 2 columns instead of 2 rows (session 10: faster on another CPU)."""
    import torch

    scores = torch.matmul(keys, query.transpose(2, 3)).transpose(2, 3)
    return torch.matmul(scores.softmax(-1), values)


def _kernel(query, keys, values):
    """The engine's compiled kernel over the same columns (no shared prefix), one query per row."""
    import torch

    from radmetrics.judge import cpu_attention

    rows, _, heads, _ = query.shape
    first = torch.zeros(rows, dtype=torch.int32)
    used = torch.full((rows, 1), keys.shape[2], dtype=torch.int32)
    return cpu_attention.cascade_decode_attention(query.transpose(1, 2), keys, values, None, first, used,
                                                  keys.shape[2], 1.0)


def _compiled(torch):
    """The step as one multiply-and-reduce per product, which a compiler can fuse into one pass over the keys."""
    def fused(query, keys, values):
        scores = (query.unsqueeze(-2) * keys.unsqueeze(2)).sum(-1)  # [rows, 1, heads, columns]
        return (scores.softmax(-1).unsqueeze(-1) * values.unsqueeze(2)).sum(-2)

    return torch.compile(fused, dynamic=True)


if __name__ == "__main__":
    main()
