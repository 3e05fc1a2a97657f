"""Tests written to kill mutants that survived tools/mutation.py (see TESTING.md, "Mutation testing")."""
from __future__ import annotations

import hashlib
import json

from radmetrics.judge.cache import cache_key

IDENTITY = {"backend": "replay", "model": "r.jsonl", "revision": "abc"}
CONFIG = {"max_new_tokens": 8, "stop": []}


def test_cache_key_is_stable_across_versions():
    """Users' caches are keyed by this hash: a change to its layout silently drops every cached answer, so it
    is pinned (sha256 of the sorted JSON of identity, prompt and settings, computed here by hand)."""
    payload = json.dumps({"config": CONFIG, "identity": IDENTITY, "prompt": "Objective: x"}, sort_keys=True)
    assert cache_key(IDENTITY, "Objective: x", CONFIG) == hashlib.sha256(payload.encode()).hexdigest() == (
        "1c18a120e36f55a2da7e0f38d87de80fc7d22185d0fd6b36406e8ddc88db1a37")


def test_cache_key_ignores_dict_order_and_sees_every_part():
    reordered = dict(reversed(list(IDENTITY.items())))
    assert cache_key(reordered, "p", dict(reversed(list(CONFIG.items())))) == cache_key(IDENTITY, "p", CONFIG)
    base = cache_key(IDENTITY, "p", CONFIG)
    assert cache_key({**IDENTITY, "revision": "def"}, "p", CONFIG) != base
    assert cache_key(IDENTITY, "p ", CONFIG) != base
    assert cache_key(IDENTITY, "p", {**CONFIG, "max_new_tokens": 9}) != base
