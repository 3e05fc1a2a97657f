"""Batch planning for in-process backends: which prompts go together, and what to do after an out-of-memory.

Pure functions over token lengths (no torch): prompts sorted longest first and packed under a size cap and a
token budget (each batch is as wide as its longest prompt plus the new tokens); after a CUDA out-of-memory the
failed batch and every later one are cut into batches of at most half the failed size, and that ceiling is
kept for later calls. The transformers backend drives its loop with `BatchPlan`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


def plan_batches(lengths: Sequence[int], max_new_tokens: int, max_batch_size: int,
                 max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped longest-first into batches of at most `max_batch_size` rows whose padded size
    (rows x (longest prompt + max_new_tokens)) stays within `max_batch_tokens`; a single prompt over the
    budget still gets a batch of its own."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = (lengths[current[0]] if current else lengths[i]) + max_new_tokens
        if current and (len(current) + 1 > max_batch_size or (len(current) + 1) * width > max_batch_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def replan_after_oom(failed: Sequence[int], pending: Sequence[Sequence[int]]) -> tuple[int, list[list[int]]]:
    """(new size ceiling, batches) after `failed` ran out of memory: the failed batch and every pending one,
    in their order, cut into batches of at most len(failed) // 2. Raises ValueError for a batch of one,
    which cannot be split."""
    if len(failed) < 2:
        raise ValueError("a batch of one prompt cannot be split further")
    cap = len(failed) // 2
    rest = [i for batch in [failed, *pending] for i in batch]
    return cap, [rest[k : k + cap] for k in range(0, len(rest), cap)]


@dataclass
class BatchPlan:
    """The batches of one generate call, with the size ceiling learned from out-of-memory errors (shared by
    the backend's later calls through `oom_cap`)."""

    pending: list[list[int]]
    oom_cap: int | None = None
    history: list[int] = field(default_factory=list)  # the sizes of the batches handed out, in order

    @classmethod
    def make(cls, lengths: Sequence[int], max_new_tokens: int, max_batch_size: int, max_batch_tokens: int,
             oom_cap: int | None = None) -> BatchPlan:
        cap = min(max_batch_size, oom_cap or max_batch_size)
        return cls(plan_batches(lengths, max_new_tokens, cap, max_batch_tokens), oom_cap)

    def __bool__(self) -> bool:
        return bool(self.pending)

    def next(self) -> list[int]:
        batch = self.pending.pop(0)
        self.history.append(len(batch))
        return batch

    def out_of_memory(self, failed: Sequence[int]) -> int:
        """Re-plan after `failed` ran out of memory; returns the new ceiling."""
        self.oom_cap, self.pending = replan_after_oom(failed, self.pending)
        return self.oom_cap
