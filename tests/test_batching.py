"""Batch planning (radmetrics/judge/batching.py): pure functions over token lengths, checked by hand."""
from __future__ import annotations

import pytest

from radmetrics.judge.batching import BatchPlan, plan_batches, replan_after_oom


def test_longest_first_under_the_size_cap():
    lengths = [10, 50, 30, 20, 40]
    # order by length: 1 (50), 4 (40), 2 (30), 3 (20), 0 (10); cap 2
    assert plan_batches(lengths, max_new_tokens=0, max_batch_size=2, max_batch_tokens=10**6) == [[1, 4], [2, 3], [0]]


def test_token_budget_counts_the_widest_row_plus_new_tokens():
    lengths = [100, 90, 80, 10]
    # width of a batch = its first (longest) prompt + 20 new tokens: 120; 2 rows = 240 <= 250, 3 rows = 360 > 250
    assert plan_batches(lengths, 20, max_batch_size=8, max_batch_tokens=250) == [[0, 1], [2, 3]]


def test_a_prompt_over_the_budget_still_gets_its_own_batch():
    assert plan_batches([1000, 5], 10, max_batch_size=8, max_batch_tokens=100) == [[0], [1]]
    assert plan_batches([], 10, 8, 100) == []


def test_out_of_memory_halves_the_failed_batch_and_every_later_one():
    cap, batches = replan_after_oom([5, 6, 7, 8, 9, 10], [[1, 2], [3]])
    assert cap == 3 and batches == [[5, 6, 7], [8, 9, 10], [1, 2, 3]]
    with pytest.raises(ValueError, match="cannot be split"):
        replan_after_oom([4], [])


def test_batch_plan_keeps_the_ceiling_it_learned():
    plan = BatchPlan.make([5] * 8, max_new_tokens=1, max_batch_size=8, max_batch_tokens=10**6)
    first = plan.next()
    assert first == list(range(8)) and plan.out_of_memory(first) == 4
    sizes = []
    while plan:
        sizes.append(len(plan.next()))
    assert sizes == [4, 4] and plan.history == [8, 4, 4]
    # a later call starts under the learned ceiling
    later = BatchPlan.make([5] * 6, 1, max_batch_size=8, max_batch_tokens=10**6, oom_cap=plan.oom_cap)
    assert [len(b) for b in later.pending] == [4, 2]
