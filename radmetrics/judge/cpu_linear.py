"""oneDNN's matrix product for a CPU judge's large fp32 linear layers, during the judge's own calls.

Why: PyTorch's fp32 ``linear`` on a CPU is MKL's sgemm. PyTorch also ships oneDNN (it already runs bf16 linears
on a CPU through it), whose fp32 product was much faster on the AMD EPYC (AVX-512, 2 cores) this project is built
on (`benchmarks/linear_rates.py`, session 28, best of 5): a Llama-2-7B layer (4,096 x 4,096) at 1 row 2.95 -> 1.15 ms,
at 96 rows 29.4 -> 16.5 ms; the cpu-tiny benchmark's MLP layer (1,376 x 512) at 96 rows 1.01 -> 0.69 ms; the
whole forced cpu-tiny run 4.46 -> 4.12 s with the same 96 answers as the official loop. Small layers are left to
PyTorch: oneDNN's ~16 us more per call costs more than its faster product saves there (the natural benchmark's
128-wide judge: 2.22 -> 2.36 s with every layer through oneDNN), so "auto" takes only layers of at least
`AUTO_MIN_WEIGHTS` weights (512 x 512, where both are about even at one row and oneDNN is ahead from 4 rows).

How: while a judge call runs (`onednn_linears`), each eligible ``nn.Linear`` gets an instance ``forward`` that calls
``torch.ops.mkldnn._linear_pointwise`` (the op PyTorch's compiler emits for CPU linears) with the module's own
weight (packed into oneDNN's layout for the call while the layers' weights take at most 1 GiB and an eighth of
the free memory, `_packs`, in calls of at least 16 prompts) and bias; the instance attribute is removed afterwards, so the model is as it was. Its
hooks still run (they are called around ``forward``). Eligible: a plain ``torch.nn.Linear`` (not a subclass such
as a LoRA or quantised layer), no ``forward`` of its own already (accelerate's offloading hooks set one), a
float32 weight on the CPU. The model's forward and the engine's lean decode step both call the modules, so they
still agree bit for bit (`lean_decode.LeanCheck`).

Answers: equal up to the kernels' rounding, as with any kernel change (a layer's output differed from MKL's by
~5e-6 relative; the forced and natural benchmarks' answers stayed equal to the official loop's). oneDNN's
result for a row does not depend on the other rows of the batch (MKL's does), so a row's logits no longer depend
on how the engine batched it. Any error from the op and every layer goes back to PyTorch's product for the rest
of the process, with a warning.
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

#: the `cpu_linear` option: "auto" (oneDNN for layers of at least AUTO_MIN_WEIGHTS weights), "onednn" (every
#: eligible layer), "torch" (PyTorch's own product everywhere)
CPU_LINEAR = ("auto", "onednn", "torch")
#: 512 x 512: below it oneDNN's per-call cost outweighs its faster product (module docstring)
AUTO_MIN_WEIGHTS = 1 << 18
#: the weights are packed into oneDNN's layout for the call when they take at most this much (`_packs`)
PACK_MAX_BYTES = 1 << 30
PACK_ROWS_HINT = 96
#: ... and when the call judges at least this many prompts: packing costs ~8 ms per 22 MB of weights each call, more
#: than it saves on a few prompts (a reward function called for one GRPO group at a time still gets it at 16)
PACK_MIN_PROMPTS = 16

#: True once the oneDNN op failed in this process: PyTorch's product from then on
_ONEDNN_FAILED = False
_lock = threading.Lock()
#: id(model) -> [entered calls, patched layers]: nested or concurrent calls on one model patch it once
_active: dict[int, list] = {}


def eligible_linears(model: Any, mode: str) -> list[Any]:
    """The layers ``mode`` puts through oneDNN (empty on a GPU, for "torch", or where oneDNN is unavailable)."""
    import torch

    if mode == "torch" or _ONEDNN_FAILED or not _onednn_available(torch):
        return []
    least = AUTO_MIN_WEIGHTS if mode == "auto" else 0
    return [m for m in model.modules()
            if type(m) is torch.nn.Linear and "forward" not in m.__dict__
            and m.weight.device.type == "cpu" and m.weight.dtype == torch.float32
            and m.weight.layout == torch.strided and m.weight.numel() >= least]


@contextmanager
def onednn_linears(model: Any, mode: str = "auto", prompts: int = PACK_MIN_PROMPTS):
    """Run the block with ``model``'s eligible linear layers on oneDNN (`eligible_linears`), then restore them.
    ``prompts``: how many the call judges (a call of fewer than `PACK_MIN_PROMPTS` does not pack the weights)."""
    key = id(model)
    with _lock:
        entry = _active.get(key)
        if entry is None:
            layers = eligible_linears(model, mode)
            pack = prompts >= PACK_MIN_PROMPTS and _packs(layers)
            for layer in layers:
                layer.forward = _onednn_forward(layer, pack)
            entry = _active[key] = [0, layers]
        entry[0] += 1
    try:
        yield entry[1]
    finally:
        with _lock:
            entry[0] -= 1
            if entry[0] == 0:
                for layer in entry[1]:
                    layer.__dict__.pop("forward", None)
                del _active[key]


def _onednn_available(torch: Any) -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _packs(layers: list[Any]) -> bool:
    """Whether the call packs the layers' weights into oneDNN's own layout: 3-4.5% of the forced cpu-tiny run
    (3.55 -> 3.44 s; a layer at 96 rows 690 -> 628 us, at 1,900 rows 13.1 -> 12.1 ms) for a copy of the weights
    held during the call (8 ms to make for 22 MB). Only while that copy is small: at most `PACK_MAX_BYTES` and an
    eighth of the memory available."""
    from radmetrics.judge.greedy_engine import _available_ram

    size = sum(layer.weight.numel() * layer.weight.element_size() for layer in layers)
    return 0 < size <= min(PACK_MAX_BYTES, _available_ram() // 8)


def _onednn_forward(layer: Any, pack: bool):
    import torch

    op = torch.ops.mkldnn._linear_pointwise
    linear = torch.nn.functional.linear
    weight, bias = layer.weight, layer.bias
    packed = None
    if pack:
        try:
            # the row count is a hint for the layout; any other count is served (the same results, as fast)
            packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACK_ROWS_HINT)
        except (AttributeError, RuntimeError) as e:  # a build without it: the plain weight, which the op takes
            log.info("oneDNN weight packing unavailable (%s)", str(e).splitlines()[0])

    def forward(x):
        global _ONEDNN_FAILED
        # the op has no backward: with gradients wanted (a training loop calling the judge), PyTorch's product
        # (and an input of another dtype or device than the weight's: PyTorch's product, as it would be)
        if (_ONEDNN_FAILED or x.dtype != weight.dtype or x.device != weight.device
                or (torch.is_grad_enabled() and (weight.requires_grad or x.requires_grad))):
            return linear(x, weight, bias)
        try:
            return op(x, weight if packed is None else packed, bias, "none", [], "")
        except RuntimeError as e:  # a build or input the op does not take: PyTorch's product from now on
            _ONEDNN_FAILED = True
            log.warning("oneDNN linear unavailable (%s); using PyTorch's product", str(e).splitlines()[0])
            return linear(x, weight, bias)

    return forward
