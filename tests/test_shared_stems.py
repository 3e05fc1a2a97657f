"""The radix-tree plan of prefix sharing between rows (`radmetrics.judge.shared_stems`): every row is rebuilt
exactly from its path, each leaf keeps a token, parents come before children, a stem is kept only when it spares
enough work, and odd inputs (duplicates, rows that are prefixes of others, a long chain) plan correctly."""
from __future__ import annotations

import random
import time

import pytest

from radmetrics.judge.shared_stems import (
    MAX_LEVELS,
    has_stems,
    plan_stems,
    saved_tokens,
    shared_by_neighbours,
    stem_order,
)


def _check_plan(owns, nodes):
    """Each row = its ancestors' tokens + its leaf's; one leaf per row, at least one token; parents first."""
    leaves = {}
    for i, node in enumerate(nodes):
        if node.parent is not None:
            assert node.parent < i and nodes[node.parent].row is None
            assert node.level == nodes[node.parent].level + 1
        else:
            assert node.level == 0
        if node.row is not None:
            assert node.row not in leaves and node.tokens
            leaves[node.row] = i
    assert sorted(leaves) == list(range(len(owns)))
    for row, i in leaves.items():
        tokens, at = [], i
        while at is not None:
            tokens[:0] = nodes[at].tokens
            at = nodes[at].parent
        assert tokens == owns[row]
    for i, node in enumerate(nodes):  # a stem is shared: two or more rows pass through it
        if node.row is None:
            assert sum(1 for n in nodes if n.parent == i) >= 2


def test_one_reference_several_candidates_shares_the_reference():
    reference = list(range(100, 160))  # 60 tokens
    owns = [reference + [1, 2, 3], reference + [4, 5], reference + [6], list(range(500, 520))]
    nodes = plan_stems(owns)
    _check_plan(owns, nodes)
    stems = [n for n in nodes if n.row is None]
    assert [n.tokens for n in stems] == [reference]
    assert saved_tokens(owns, nodes) == 2 * 60  # three rows, the reference computed once


def test_nested_stems_give_levels():
    ref, cand = list(range(100, 150)), list(range(200, 250))
    owns = [ref + cand + [7], ref + cand + [8, 9], ref + [3] * 40, ref + [4] * 40]
    nodes = plan_stems(owns)
    _check_plan(owns, nodes)
    stems = {tuple(n.tokens): n.level for n in nodes if n.row is None}
    assert stems == {tuple(ref): 0, tuple(cand): 1}
    assert saved_tokens(owns, nodes) == 3 * 50 + 50


def test_short_shared_stretches_are_not_worth_a_pass():
    owns = [[1, 2, 3, 4, 10 + i] for i in range(5)]  # 4 shared tokens x 4 rows spared = 16 < 32
    nodes = plan_stems(owns)
    _check_plan(owns, nodes)
    assert not has_stems(nodes) and saved_tokens(owns, nodes) == 0
    assert has_stems(plan_stems(owns, min_saved=16))


def test_duplicates_and_rows_that_are_prefixes_of_others():
    base = list(range(10, 60))
    owns = [base, base, base + [1], base[:40], base + list(range(70, 100)), [5]]
    nodes = plan_stems(owns)
    _check_plan(owns, nodes)
    assert has_stems(nodes)
    # every row keeps a token for its leaf: identical rows share all but their last one
    assert saved_tokens(owns, nodes) > 3 * 39


def test_distinct_rows_plan_flat_and_sort_apart():
    rng = random.Random(0)
    owns = [[rng.randrange(3, 1000) for _ in range(rng.randrange(1, 40))] for _ in range(50)]
    nodes = plan_stems(owns)
    _check_plan(owns, nodes)
    assert not has_stems(nodes)
    assert shared_by_neighbours(owns, stem_order(owns)) < 0.1 * sum(map(len, owns))


def test_random_trees_rebuild_every_row():
    rng = random.Random(1)
    for _ in range(30):
        stems = [[rng.randrange(3, 9) for _ in range(rng.randrange(0, 60))] for _ in range(4)]
        owns = [rng.choice(stems) + [rng.randrange(3, 9) for _ in range(rng.randrange(1, 30))]
                for _ in range(rng.randrange(1, 40))]
        nodes = plan_stems(owns, min_saved=rng.choice([1, 8, 32]))
        _check_plan(owns, nodes)
        assert saved_tokens(owns, nodes) >= 0


def test_a_long_chain_plans_quickly():
    """Rows each one token longer than the last (a table's worth): the tree would be one level per row; the plan
    stops at MAX_LEVELS (one prefill pass each) and still spares the common start, quickly."""
    chain = list(range(3, 3 + 300))
    owns = [chain[: 44 + k] for k in range(256)]
    started = time.perf_counter()
    nodes = plan_stems(owns)
    assert time.perf_counter() - started < 2.0
    _check_plan(owns, nodes)
    assert max(n.level for n in nodes) == MAX_LEVELS - 1
    assert saved_tokens(owns, nodes) > 255 * 43


def test_a_row_without_tokens_is_refused():
    with pytest.raises(ValueError, match="at least one token"):
        plan_stems([[1, 2], []])


def test_tree_prefill_passes_stay_within_the_keys_and_values_of_a_plain_chunk():
    """On CUDA the plan sets memory aside for a plain prefill chunk; a tree pass's items each carry the prefix and
    their ancestors, so 128 short leaves under one long stem are split into passes that hold no more keys/values
    than a plain chunk would (without the bound they made one pass 6.6x larger)."""
    from radmetrics.judge.greedy_engine import _least_padding

    lengths, depths = [8] * 128, [120] * 128  # GRPO: one 120-token reference, 128 short candidates
    prefix, tokens = 300, 2048
    kv = (tokens // 140) * (prefix + 140)  # a plain chunk of the longest rows (140 own tokens)
    passes = _least_padding(lengths, depths, tokens, kv, prefix)
    assert sorted(i for p in passes for i in p) == list(range(128))
    assert all(len(p) * (prefix + 120 + 8) <= kv for p in passes) and len(passes) > 1
    assert _least_padding(lengths, depths, tokens, 10**12, prefix) == [list(range(128))]  # CPU: one pass


def _pass_cost(passes, lengths, pass_cost):
    return sum(pass_cost + len(p) * max(lengths[i] for i in p) for p in passes)


def test_prefill_passes_are_cut_where_padding_costs_more_than_a_pass():
    """Passes are runs of the items sorted longest first; filled greedily, a 4-token leaf was padded to 208
    beside long ones. The cuts now minimise padding plus a cost per pass: equal to an exhaustive search over
    every set of cuts, within the token and keys/values bounds, every item exactly once."""
    import itertools
    import sys

    from radmetrics.judge.greedy_engine import _least_padding, _prefill_chunks

    lengths = [208, 4, 208, 113, 4, 207, 91, 4, 3]
    passes = _prefill_chunks(lengths, 2048, pass_cost=64)
    assert [[lengths[i] for i in p] for p in passes] == [[208, 208, 207], [113, 91], [4, 4, 4, 3]]
    assert _prefill_chunks(lengths, 2048, pass_cost=10**6) == [[0, 2, 5, 3, 6, 1, 4, 7, 8]]  # one pass
    rng = random.Random(0)
    for _ in range(400):
        n = rng.randint(1, 8)
        lengths = [rng.choice([1, 2, rng.randint(1, 60)]) for _ in range(n)]
        depths = [rng.randint(0, 40) for _ in range(n)]
        tokens, prefix, cost = rng.randint(60, 300), rng.randint(0, 50), rng.choice([0, 16, 64])
        kv = rng.choice([sys.maxsize, rng.randint(100, 2000)])

        bounds = (lengths, depths, tokens, kv, prefix)
        passes = _least_padding(lengths, depths, tokens, kv, prefix, cost)
        assert sorted(i for p in passes for i in p) == list(range(n))
        assert all(_fits(p, *bounds) for p in passes)
        order = [i for p in passes for i in p]  # longest first
        assert [lengths[i] for i in order] == sorted(lengths, reverse=True)
        best = min(_pass_cost(split, lengths, cost)
                   for cuts in itertools.product([False, True], repeat=n - 1)
                   for split in [_split(order, cuts)] if all(_fits(p, *bounds) for p in split))
        assert _pass_cost(passes, lengths, cost) == best


def _fits(items, lengths, depths, tokens, kv, prefix):
    width, deepest = max(lengths[i] for i in items), max(depths[i] for i in items)
    return len(items) == 1 or (len(items) * width <= tokens and len(items) * (prefix + deepest + width) <= kv)


def _split(order, cuts):
    passes, run = [], [order[0]]
    for item, cut in zip(order[1:], cuts):
        if cut:
            passes.append(run)
            run = []
        run.append(item)
    return passes + [run]
