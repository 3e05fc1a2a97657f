"""Prefix sharing *between* rows: the prompts of one engine call that begin alike past the call's shared prefix.

Judging often asks about several texts against one reference: a GRPO group's completions (one reward call scores
G completions of the same prompt), systems compared on one test set, a report and its edits. A GREEN prompt puts
the reference before the candidate, so such prompts share their first few hundred tokens after the instructions.
The engine already computes the instructions once per call (`greedy_engine.SharedPrefix`); this module plans how
to compute each further shared stretch once too, as vLLM's automatic prefix caching or SGLang's radix cache do:
a radix tree over the rows' own tokens whose inner nodes ("stems") are prefilled once, on top of their parent,
and whose leaves are each row's remaining tokens.

Pure token-list logic (no torch): `plan_stems` returns the nodes, parents before children.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: a stem is kept only if it spares at least this many token computations ((rows - 1) x its length): shorter
#: ones cost an extra prefill pass for little
MIN_SAVED_TOKENS = 32
#: levels of the tree at most (each is one more prefill pass); deeper stems are left in their rows' leaves
MAX_LEVELS = 8


@dataclass
class StemNode:
    """One prefill item: ``tokens`` computed on top of the keys/values of ``parent`` (an index into the plan;
    None: the call's shared prefix) and its ancestors. ``row`` is the row a leaf completes; None for a stem
    (shared by two or more rows). ``level``: 0 for the parent-less nodes, parent's + 1 otherwise."""

    tokens: list[int]
    parent: int | None
    row: int | None
    level: int


def plan_stems(owns: list[list[int]], min_saved: int = MIN_SAVED_TOKENS, max_levels: int = MAX_LEVELS) -> list[StemNode]:
    """The radix tree of ``owns`` (each row's tokens after the shared prefix, at least one each) with only the
    stems worth an extra pass kept: each row is the concatenation of its ancestors' ``tokens`` and its leaf's,
    and every leaf keeps at least one token (the row's next-token logits come from it). With nothing worth
    sharing, every node is a parent-less leaf (``has_stems`` is False)."""
    if any(not own for own in owns):
        raise ValueError("every row needs at least one token of its own")
    order = stem_order(owns)
    # lcp[k]: tokens rows order[k] and order[k + 1] share
    lcp = [_common_length(owns[a], owns[b]) for a, b in zip(order, order[1:])]
    nodes: list[StemNode] = []
    # work items: (first, last) positions in ``order`` (inclusive), the parent node, where its tokens end
    todo: deque[tuple[int, int, int | None, int]] = deque([(0, len(order) - 1, None, 0)] if order else [])
    while todo:
        first, last, parent, start = todo.popleft()  # breadth first: parents before children
        level = 0 if parent is None else nodes[parent].level + 1
        if first == last:
            row = order[first]
            nodes.append(StemNode(owns[row][start:], parent, row, level))
            continue
        # what all rows of the range share, leaving each at least one token
        common = min(min(lcp[first:last]), min(len(owns[order[k]]) for k in range(first, last + 1)) - 1)
        if level < max_levels - 1 and common > start and (last - first) * (common - start) >= min_saved:
            nodes.append(StemNode(owns[order[first]][start:common], parent, None, level))
            parent, start = len(nodes) - 1, common
        # split where two neighbours share no more than ``common``, and around a row with one token past it
        # (all it has left is its leaf; it sorts before the rows it is a prefix of): each run then shares more
        # than ``common``, or is one row
        run_first = first
        for k in range(first, last + 1):
            if len(owns[order[k]]) <= common + 1:
                if run_first < k:
                    todo.append((run_first, k - 1, parent, start))
                todo.append((k, k, parent, start))
                run_first = k + 1
            elif k == last or lcp[k] <= common:
                todo.append((run_first, k, parent, start))
                run_first = k + 1
    return nodes


def has_stems(nodes: list[StemNode]) -> bool:
    return any(node.row is None for node in nodes)


def saved_tokens(owns: list[list[int]], nodes: list[StemNode]) -> int:
    """Token computations the plan spares against prefilling each row's own tokens."""
    return sum(map(len, owns)) - sum(len(node.tokens) for node in nodes)


def stem_order(owns: list[list[int]]) -> list[int]:
    """Row indices with rows that share stems next to each other (admitted to the table together)."""
    return sorted(range(len(owns)), key=lambda i: owns[i])


def shared_by_neighbours(owns: list[list[int]], order: list[int]) -> int:
    """Tokens each row shares with the next in ``order`` (`stem_order`), summed: how much sharing there is."""
    return sum(_common_length(owns[a], owns[b]) for a, b in zip(order, order[1:]))


def _common_length(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
