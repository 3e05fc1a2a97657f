"""The greedy engine (continuous batching over a fixed slot table, slots refilled as rows finish, answers that
outgrow their reserve continued, shared-prefix attention, host checks every k steps) answers exactly as HF
`generate` does, on the tiny trained judge and on random models of both attention shapes; the shared-prefix
attention equals attention over the concatenated keys; the table is sized from memory; models the engine must
not serve (logit-altering generation settings) and sampling go through `generate`."""
from __future__ import annotations

import pytest
from tiny_judge import training_pairs

import radmetrics
from radmetrics.judge import greedy_engine
from radmetrics.judge.greedy_engine import returned_cache


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _random_llama(kv_heads: int, device: str):
    """A tiny random-weight Llama (4 query heads on ``kv_heads``), seeded by ``kv_heads``, fp32 with TF32 off."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(kv_heads)
    torch.backends.cuda.matmul.allow_tf32 = False
    return LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=kv_heads, eos_token_id=2,
                                        pad_token_id=2, bos_token_id=1)).eval().to(device)


def _green_prompts(n_copies: int = 2) -> list[str]:
    system = radmetrics.get_scoring_system("green")
    pairs = training_pairs()
    # vary the candidate so rows differ in length and answer length
    return [system.build_prompt(r, " ".join(c.split()[: len(c.split()) - k]))
            for k in range(n_copies) for r, c, _ in pairs]


def _rows_sharing_a_prefix(model, device: str):
    """Six prompts of 1-60 own tokens after a 40-token shared prefix, and the prefix's KV cache."""
    import torch

    g = torch.Generator().manual_seed(0)
    shared = torch.randint(3, 300, (40,), generator=g).tolist()
    rows = [shared + torch.randint(3, 300, (int(n),), generator=g).tolist() for n in (5, 31, 12, 1, 60, 17)]
    with torch.inference_mode():
        past = returned_cache(model(input_ids=torch.tensor([shared], device=device), use_cache=True))
    return rows, past


def _assert_answers_as_generate(model, rows, answers, device: str, n_tokens: int) -> None:
    """Each answer equals `generate` on that prompt alone (no padding at all: the plainest reference)."""
    import torch

    for row, new in zip(rows, answers):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row], device=device), max_new_tokens=n_tokens,
                                 min_new_tokens=n_tokens, do_sample=False, eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()


@pytest.mark.parametrize("prefix_cache,options", [
    (True, {}),  # shipped defaults: the table sized by the engine
    (False, {}),
    # 4 slots for 12 prompts: finished rows' slots refilled; a 40-token reserve: most answers overflow and are
    # continued in the second table
    (True, {"max_batch_size": 4, "answer_tokens": 40, "prefill_chunk_tokens": 700}),
])
def test_engine_equals_generate_with_natural_stops(tiny_judge, prefix_cache, options):
    """Answers end at EOS at different steps (slots refilled as rows finish); equal to generate. fp32 on every
    device (CUDA would pick bf16 for this fp32 checkpoint, where two kernels' roundings can flip a near-tie)."""
    prompts = _green_prompts()
    config = radmetrics.GenerationConfig(max_new_tokens=400)
    reference = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False,
                                     prefix_cache=prefix_cache, max_batch_size=3)
    engine = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", prefix_cache=prefix_cache,
                                  **options)
    expected = reference.generate(prompts, config, progress=False)
    got = engine.generate(prompts, config, progress=False)
    assert got == expected
    lengths = {len(reference.backend.tokenizer(t)["input_ids"]) for t in expected}
    assert len(lengths) > 2  # really different stopping points
    assert "[Matched Findings]" in got[0]


def test_cpu_steps_compute_the_live_rows_rounded_up_to_eight_once_nothing_waits(tiny_judge, monkeypatch):
    """Without CUDA graphs a step's rows shrink with the live rows (rounded up to 8; below 8 exactly), not only
    once half the table is idle: finished rows' slots are not computed (4-5% of the natural benchmark). Answers
    equal generate's. On the CPU also where a GPU is present (on CUDA the graphs' power-of-two buckets apply, and
    fp32 kernels of other batch shapes flip the tiny judge's near-ties: the H200 run of session 29)."""
    prompts = _green_prompts(4)  # 24 prompts, answers of different lengths
    config = radmetrics.GenerationConfig(max_new_tokens=400)
    expected = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, engine=False,
                                    max_batch_size=4, device="cpu").generate(prompts, config, progress=False)
    steps = []
    step = greedy_engine._SlotEngine._step_eager

    def spy(self, b, k, drafts=None):
        live = sum(r is not None for r in self.slot_row)
        assert all(r is None for r in self.slot_row[b:])  # no live row outside the computed slots
        steps.append((b, live))
        return step(self, b, k, drafts)

    monkeypatch.setattr(greedy_engine._SlotEngine, "_step_eager", spy)
    got = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, device="cpu").generate(
        prompts, config, progress=False)
    assert got == expected
    assert steps[0] == (24, 24)  # one table for all: nothing waits after the first admission
    assert all(b == (-(-live // 8) * 8 if live > 8 else live) for b, live in steps), sorted(set(steps))
    assert {b for b, _ in steps} >= {24, 16, 8, 1}  # 16 and 24 are no powers of two; below 8, the live rows


@pytest.mark.parametrize("options,config", [
    ({}, {"max_new_tokens": 400}),
    # refills, and answers continued past a 40-token reserve (drafted tokens written into the slack columns)
    ({"max_batch_size": 4, "answer_tokens": 40}, {"max_new_tokens": 400}),
    ({}, {"max_new_tokens": 7}),
    ({}, {"max_new_tokens": 300, "min_new_tokens": 300}),  # EOS suppressed inside drafted steps too
])
def test_drafted_steps_give_the_same_answers_as_generate(tiny_judge, options, config, monkeypatch, caplog):
    """Every decode step checks prompt-lookup drafts (forced on here; by default only where measured faster):
    the judge's GREEN answers repeat its prompt, so steps keep several tokens, and the answers equal generate's."""
    from radmetrics.judge import prompt_lookup

    tokens_per_step = []
    record = prompt_lookup.DraftPolicy.record

    def counting(self, rows, drafted, seconds, tokens):
        if drafted:
            tokens_per_step.append(tokens / rows)
        record(self, rows, drafted, seconds, tokens)

    monkeypatch.setattr(prompt_lookup.DraftPolicy, "use_drafts", lambda self, rows: True)
    monkeypatch.setattr(prompt_lookup.DraftPolicy, "record", counting)
    monkeypatch.setattr(greedy_engine, "DRAFT_MAX_ROWS", 10**6)
    prompts = _green_prompts()
    generation = radmetrics.GenerationConfig(**config)
    # Drafts are checked on the host-synced path only (on CUDA a step runs in a graph, no host check per step):
    # pinned to the CPU, so a machine with a GPU tests them too.
    reference = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False,
                                     max_batch_size=3, device="cpu")
    engine = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", device="cpu",
                                  **options)
    expected = reference.generate(prompts, generation, progress=False)
    with caplog.at_level("DEBUG", logger="radmetrics.judge.greedy_engine"):
        assert engine.generate(prompts, generation, progress=False) == expected
    assert tokens_per_step
    assert any(r.getMessage().startswith("prompt-lookup drafts: ") for r in caplog.records)  # what drafts did
    if generation.max_new_tokens >= 300:  # (7 tokens: a few steps, drafts from the prompt's start)
        assert sum(tokens_per_step) / len(tokens_per_step) > 1.2  # tokens per row and step: drafts were kept


def test_drafts_from_the_calls_earlier_answers_save_steps_and_keep_the_answers(tiny_judge, monkeypatch):
    """A judge's answers repeat each other (GREEN's sections, the same phrases): a row also drafts from the answers
    rows before it gave (`AnswerLookup`), so the call takes fewer decode steps, and the answers still equal
    generate's. Measured against the same engine with that lookup emptied."""
    from radmetrics.judge import prompt_lookup

    monkeypatch.setattr(prompt_lookup.DraftPolicy, "use_drafts", lambda self, rows: True)
    steps = []
    step = greedy_engine._SlotEngine._step_eager
    monkeypatch.setattr(greedy_engine._SlotEngine, "_step_eager",
                        lambda self, b, k, drafts=None: steps.append(b) or step(self, b, k, drafts))
    prompts = _green_prompts(3)
    generation = radmetrics.GenerationConfig(max_new_tokens=400)
    reference = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False,
                                     max_batch_size=4, device="cpu")
    expected = reference.generate(prompts, generation, progress=False)
    # 4 rows at a time: later prompts are admitted as earlier rows finish, so there are answers to draft from
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", device="cpu",
                                 max_batch_size=4)
    assert judge.generate(prompts, generation, progress=False) == expected
    with_answers, steps[:] = len(steps), []
    monkeypatch.setattr(prompt_lookup.AnswerLookup, "draft", lambda self, tokens, k, longer_than=0: [])
    assert judge.generate(prompts, generation, progress=False) == expected
    own_only = len(steps)
    assert with_answers < 0.9 * own_only, (with_answers, own_only)


def test_a_step_keeps_drafts_up_to_the_first_disagreement_and_stops_at_eos_or_the_limit():
    """`accepted_tokens`, by hand (EOS = 2): the model's own token after the last kept draft is added too; an EOS
    the model picks after a rejected draft is not the answer's; ``max_new_tokens`` caps what a step adds."""
    import torch

    picks = torch.tensor([[5, 6, 7, 8],   # drafts 5 6 9: two kept, then the model's 7
                          [5, 2, 7, 8],   # draft 5 kept, then EOS: finished with one token
                          [4, 2, 2, 2],   # draft 5 rejected: EOS after it is not the answer's
                          [5, 6, 7, 8],   # all drafts kept, but 2 tokens to the limit
                          [5, 6, 7, 8]])  # inactive
    drafts = torch.tensor([[5, 6, 9], [5, 2, -1], [5, -1, -1], [5, 6, 7], [5, 6, 7]])
    active = torch.tensor([True, True, True, True, False])
    generated = torch.tensor([0, 0, 0, 8, 0])
    kept, counted, finished = greedy_engine.accepted_tokens(picks, drafts, active, generated, max_new=10, eos=2)
    assert kept.tolist() == [2, 2, 0, 3, 3]
    assert counted.tolist() == [3, 1, 1, 2, 0]
    assert finished.tolist() == [False, True, False, True, False]
    kept, counted, finished = greedy_engine.accepted_tokens(picks[:, :1], None, active, generated, max_new=10, eos=2)
    assert kept.tolist() == [0] * 5 and counted.tolist() == [1, 1, 1, 1, 0] and not finished.any()


def test_a_huge_token_limit_costs_memory_only_as_answers_use_it(tiny_judge, caplog):
    """max_new_tokens=2**31 sized the continuation table for 2**31 more tokens per row (a 206 GB allocation, a
    traceback); 10**20 was an OverflowError (past int64). Answers that outgrow their reserve are now continued in
    tables that grow 4x each round, and the answers are the same as with any limit they stay under."""
    from radmetrics.types import CutAnswer

    prompts = _green_prompts(1)[:2]
    reference = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False)
    expected = reference.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=2048), progress=False)
    assert not any(isinstance(a, CutAnswer) for a in expected)  # every answer ends by itself
    # an 8-token reserve: longer answers go round again (8 -> 32 -> 128 -> ... more tokens each time)
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", answer_tokens=8)
    for limit in (2**31, 10**20):
        with caplog.at_level("INFO", logger="radmetrics.judge.greedy_engine"):
            caplog.clear()
            assert judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=limit), progress=False) == expected
        assert sum("continuing them" in r.getMessage() for r in caplog.records) >= 2  # went round more than once


def test_engine_min_and_max_new_tokens(tiny_judge):
    prompts = _green_prompts(1)
    for config in (radmetrics.GenerationConfig(max_new_tokens=7),
                   radmetrics.GenerationConfig(max_new_tokens=300, min_new_tokens=300)):
        reference = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False)
        engine = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32")
        assert engine.generate(prompts, config, progress=False) == reference.generate(prompts, config, progress=False)


@pytest.mark.parametrize("kv_heads,prefix,options", [
    (1, True, {}), (4, True, {}), (1, False, {}),
    (4, True, {"max_rows": 2}),  # slots refilled (continuous batching)
    (1, True, {"max_rows": 2, "reserve": 5}),  # every answer outgrows its 5-token reserve: continued
    (4, False, {"max_rows": 4, "reserve": 3, "check_every": 4}),  # host reads the device state every 4 steps
    (1, True, {"max_rows": 16, "check_every": 3}),  # a table larger than the work: the tail buckets shrink
])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not _cuda(), reason="no CUDA device: the CUDA path (graphs, checks every 8 steps) runs where one is"))])
def test_engine_equals_generate_on_random_models(kv_heads, prefix, options, device, caplog):
    """GQA (1 KV head for 4 query heads) and multi-head KV, prompts sharing a long prefix, forced length. On CUDA
    (fp32, TF32 off) the engine runs as shipped there: decode steps replayed from CUDA graphs, host checks every
    8 steps; a graph that fails to capture would fall back to eager steps, so the test also requires none did."""
    model = _random_llama(kv_heads, device)
    rows, past = _rows_sharing_a_prefix(model, device)
    finished, plans = [], []
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=24, min_new_tokens=24, eos_token_id=2,
                                        pad_token_id=2, prefix=greedy_engine.SharedPrefix(past, 40) if prefix else None,
                                        prefill_chunk_tokens=64, on_row_done=lambda i, ids: finished.append(i),
                                        on_plan=plans.append, **options)
    assert sorted(finished) == list(range(len(rows)))
    _assert_answers_as_generate(model, rows, got, device, 24)
    if device == "cuda":
        assert plans[0].cuda_graphs and "capture failed" not in caplog.text


@pytest.mark.parametrize("kv_heads,prefix,options", [
    (1, True, {}), (4, False, {}),
    (4, True, {"max_rows": 2}),  # slots refilled (continuous batching)
    (1, True, {"max_rows": 2, "reserve": 5}),  # continued in a second table
    (4, True, {"max_rows": 16, "check_every": 3}),  # the tail buckets shrink: slots move
    (1, True, {"draft_tokens": 2}),  # drafted steps (several inputs a row) attend over the masked windows
])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not _cuda(), reason="no CUDA device: the CUDA kernels run where one is"))])
def test_length_aware_decode_attention_answers_as_generate(kv_heads, prefix, options, device, caplog, monkeypatch):
    """decode_attention="varlen": the table is laid out [rows, width, KV heads, dim] and each row's own keys are
    given to the attention as offsets and lengths into the flattened table (what the flash and memory-efficient
    kernels take on CUDA; a masked product over the same offsets on CPU). Every answer equals generate's, through
    refills, continuation, slot moves and drafted steps, and the varlen path really served the steps."""
    model = _random_llama(kv_heads, device)
    rows, past = _rows_sharing_a_prefix(model, device)
    served = []
    varlen = greedy_engine._varlen_cascade_attention

    def counted(*args):
        served.append(args[4].used.shape[0])
        return varlen(*args)

    monkeypatch.setattr(greedy_engine, "_varlen_cascade_attention", counted)
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=24, min_new_tokens=24, eos_token_id=2,
                                        pad_token_id=2, prefill_chunk_tokens=64, decode_attention="varlen",
                                        prefix=greedy_engine.SharedPrefix(past, 40) if prefix else None, **options)
    assert served and "unavailable" not in caplog.text and "capture failed" not in caplog.text
    _assert_answers_as_generate(model, rows, got, device, 24)


@pytest.mark.parametrize("kv_heads", [1, 4])
@pytest.mark.parametrize("with_prefix", [True, False])
@pytest.mark.parametrize("device,dtype", [("cpu", "float32"), *[pytest.param("cuda", d, marks=pytest.mark.skipif(
    not _cuda(), reason="the flash (fp16/bf16) and memory-efficient (fp32) kernels: CUDA only"))
    for d in ("float32", "bfloat16", "float16")]])
def test_varlen_attention_equals_attention_over_each_rows_filled_columns(kv_heads, with_prefix, device, dtype):
    """The length-aware attention reads row b's ``used[b]`` columns from ``key_starts[b]`` of the flattened
    [rows * width, KV heads, dim] table (a free slot: its scratch column alone) and merges them with the shared
    prefix by log-sum-exp: equal to attention over the prefix and exactly those columns (float32 reference)."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    torch.manual_seed(kv_heads)
    batch, heads, dim, width, n_prefix = 4, 4, 64, 40, 7 if with_prefix else 0
    low = getattr(torch, dtype)
    table_k = torch.randn(batch, width, kv_heads, dim, device=device)  # stored as the engine stores it
    table_v = torch.randn(batch, width, kv_heads, dim, device=device)
    query = torch.randn(batch, heads, 1, dim, device=device)
    first, used = torch.tensor([3, 1, 0, 26]), torch.tensor([25, 39, 1, 2])  # row 2: a free slot (column 0)
    columns = greedy_engine.SlotColumns(
        torch.arange(batch + 1, dtype=torch.int32, device=device),
        torch.cat([torch.arange(batch) * width + first, torch.tensor([batch * width])]).to(torch.int32).to(device),
        used.to(torch.int32).to(device), width)
    prefix = (torch.randn(1, kv_heads, n_prefix, dim, device=device), torch.randn(1, kv_heads, n_prefix, dim,
                                                                                  device=device))
    out = greedy_engine._varlen_cascade_attention(
        query.to(low), table_k.to(low).transpose(1, 2), table_v.to(low).transpose(1, 2),
        tuple(t.to(low) for t in prefix) if with_prefix else None, columns, dim**-0.5)
    assert out.shape == (batch, 1, heads, dim) and out.dtype == low
    tolerance = 1e-5 if dtype == "float32" else 3e-2
    for b in range(batch):
        own = slice(int(first[b]), int(first[b] + used[b]))
        keys = torch.cat([prefix[0][0], table_k[b, own].transpose(0, 1)], 1).repeat_interleave(heads // kv_heads, 0)
        values = torch.cat([prefix[1][0], table_v[b, own].transpose(0, 1)], 1).repeat_interleave(heads // kv_heads,
                                                                                                   0)
        expected = scaled_dot_product_attention(query[b:b + 1], keys[None], values[None])  # [1, heads, 1, d]
        torch.testing.assert_close(out[b].float(), expected[0].transpose(0, 1), rtol=tolerance, atol=tolerance)


def test_varlen_attention_on_a_table_of_another_layout_falls_back_to_the_masked_product(caplog):
    """A table not laid out [rows, width, KV heads, dim] (no view gives the kernels a row's columns in one run):
    one warning, and this and later steps attend over the masked windows, with the same answers."""
    import torch

    class Module:
        layer_idx = 0

    torch.manual_seed(0)
    batch, heads, dim, width = 2, 4, 8, 6
    keys, values, query = torch.randn(batch, heads, width, dim), torch.randn(batch, heads, width, dim), torch.randn(
        batch, heads, 1, dim)
    allowed = torch.zeros(batch, 1, 1, width, dtype=torch.bool)
    allowed[0, ..., 1:4] = True
    allowed[1, ..., 2:6] = True
    columns = greedy_engine.SlotColumns(torch.arange(3, dtype=torch.int32), torch.tensor([1, 8, 12], dtype=torch.int32),
                                        torch.tensor([3, 4], dtype=torch.int32), width)
    previous = greedy_engine._VARLEN_ATTENTION
    try:
        out, _ = greedy_engine.shared_prefix_attention(Module(), query, keys, values, allowed, slot_columns=columns)
        assert greedy_engine._VARLEN_ATTENTION is False and "length-aware decode attention unavailable" in caplog.text
    finally:
        greedy_engine._VARLEN_ATTENTION = previous
    masked, _ = greedy_engine.shared_prefix_attention(Module(), query, keys, values, allowed)
    torch.testing.assert_close(out, masked)


@pytest.mark.parametrize("kv_heads,prefix,options", [
    (1, True, {}), (4, False, {}),
    (4, True, {"max_rows": 3}),  # waves of 3: stems shared within each wave, slots refilled
    (1, True, {"max_rows": 4, "reserve": 4}),  # answers outgrow the reserve: continued from left-aligned slots
    (1, False, {"max_rows": 16, "check_every": 3, "draft_tokens": 2}),
])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not _cuda(), reason="no CUDA device: the CUDA path runs where one is"))])
def test_rows_sharing_stems_answer_as_generate(kv_heads, prefix, options, device, monkeypatch):
    """Several candidates per reference (a GRPO group; systems compared on one test set): the rows' common
    stretches past the shared prefix are prefilled once, on up to three levels (reference, then a candidate
    that others extend), one row is a prefix of another and two are identical; every answer equals generate's
    for that prompt alone, and the same as without stem sharing."""
    import torch

    model = _random_llama(kv_heads, device)
    g = torch.Generator().manual_seed(0)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 300, (n,), generator=g).tolist()

    shared, ref_a, ref_b, cand = tokens(40), tokens(50), tokens(35), tokens(30)
    rows = [shared + ref_a + cand, shared + ref_a + cand[:20], shared + ref_a + tokens(7), shared + ref_b + tokens(12),
            shared + ref_b + tokens(3), shared + tokens(9), shared + ref_a + cand[:20] + tokens(4), shared + ref_a,
            shared + ref_b + tokens(12)]
    rows.append(list(rows[3]))  # a duplicate
    with torch.inference_mode():
        past = returned_cache(model(input_ids=torch.tensor([shared], device=device), use_cache=True))
    levels = []
    prefill_stems = greedy_engine._SlotEngine._prefill_stems
    monkeypatch.setattr(greedy_engine._SlotEngine, "_prefill_stems", lambda self, stems, fresh: (
        levels.append(1 + max(n.level for n in stems)), prefill_stems(self, stems, fresh))[1])
    # On CUDA the stems' keys/values must fit in one prefill chunk's memory (`_SlotEngine._stems_fit`; ~200 tokens
    # here), else rows are prefilled whole: 64-token chunks (many passes, on CPU) would turn sharing off there.
    common = dict(max_new_tokens=16, min_new_tokens=16, eos_token_id=2, pad_token_id=2,
                  prefill_chunk_tokens=64 if device == "cpu" else 512,
                  prefix=greedy_engine.SharedPrefix(past, 40) if prefix else None, **options)
    got = greedy_engine.greedy_generate(model, rows, **common)
    assert levels and (max(levels) >= 3 or options.get("max_rows", 99) < 5)  # stems really shared
    for row, new in zip(rows, got):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row], device=device), max_new_tokens=16, min_new_tokens=16,
                                 do_sample=False, eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()
    calls = len(levels)
    assert greedy_engine.greedy_generate(model, rows, share_stems=False, **common) == got
    assert len(levels) == calls  # off means off


def test_sliding_window_and_softcapped_models_are_answered_by_generate(tiny_judge):
    """The engine attends to every column of a row and applies no score soft-capping: a sliding-window model whose
    window a prompt + answer outgrows, or a soft-capped one, is answered by generate (same answers as the
    reference path), and the engine itself refuses such rows rather than answer wrongly."""
    import torch
    from transformers import AutoTokenizer, Gemma2Config, Gemma2ForCausalLM, MistralConfig, MistralForCausalLM
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from radmetrics.judge.transformers_backend import TransformersJudge

    tok = AutoTokenizer.from_pretrained(tiny_judge)
    common = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    torch.manual_seed(0)
    narrow = MistralForCausalLM(MistralConfig(**common, sliding_window=16)).eval()
    assert greedy_engine.attention_window(narrow) == 16
    assert greedy_engine.attention_window(Qwen2ForCausalLM(Qwen2Config(**common, sliding_window=16))) is None
    capped = Gemma2ForCausalLM(Gemma2Config(**common, head_dim=16, sliding_window=4096,
                                            attn_logit_softcapping=1.0)).eval()
    assert not greedy_engine.supports_engine(capped)
    prompts = _green_prompts(1)[:3]
    config = radmetrics.GenerationConfig(max_new_tokens=12, min_new_tokens=12)
    for model in (narrow, capped):
        engine = TransformersJudge.from_objects(model, tok, "m", chat_template="green")
        reference = TransformersJudge.from_objects(model, tok, "m", chat_template="green", engine=False)
        assert engine.generate(prompts, config, progress=False) == reference.generate(prompts, config, progress=False)
    with pytest.raises(ValueError, match="16-token sliding attention window"):
        greedy_engine.greedy_generate(narrow, [[5] * 20], max_new_tokens=4, eos_token_id=2, pad_token_id=2)


def test_a_model_the_stem_prefill_fails_on_is_prefilled_row_by_row(monkeypatch, caplog):
    """If the tree prefill fails part-way (an architecture whose cache it cannot feed), the wave's rows are
    prefilled whole instead, with a warning, and the answers are still generate's; sharing stays off after."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=200, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=1, eos_token_id=2,
                                         pad_token_id=2, bos_token_id=1)).eval()
    g = torch.Generator().manual_seed(4)
    ref = torch.randint(3, 200, (60,), generator=g).tolist()
    rows = [ref + torch.randint(3, 200, (k,), generator=g).tolist() for k in (3, 8, 5, 1)] + [ref[:30]]
    real, calls = greedy_engine._SlotEngine._prefill_nodes, []

    def fails_on_the_third_pass(self, *args):  # the second completed a row: its first token is picked again
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("this cache cannot be fed\nsecond line")
        return real(self, *args)

    monkeypatch.setattr(greedy_engine._SlotEngine, "_prefill_nodes", fails_on_the_third_pass)
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=12, min_new_tokens=12, eos_token_id=2,
                                        pad_token_id=2, max_rows=5)
    assert len(calls) == 3 and "prefix sharing between rows failed for this model (this cache cannot be fed)" in caplog.text
    for row, new in zip(rows, got):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row]), max_new_tokens=12, min_new_tokens=12, do_sample=False,
                                 eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()


@pytest.mark.parametrize("prefix", [True, False])
def test_stem_prefill_puts_each_rows_own_keys_in_its_slot(prefix):
    """After the tree prefill, each slot holds exactly the keys/values a plain forward of that whole row gives
    for its own tokens (positions, ancestors' keys, padding masks all right), and the row's first answer token and
    position are that forward's. Tighter than answer equality: a tiny random model's answers survive small
    errors in the keys."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, eos_token_id=2,
                                         pad_token_id=2, bos_token_id=1)).eval()
    g = torch.Generator().manual_seed(1)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 300, (n,), generator=g).tolist()

    shared, ref, cand = tokens(20), tokens(40), tokens(25)
    rows = [shared + ref + cand + tokens(3), shared + ref + cand + tokens(9), shared + ref + tokens(5),
            shared + tokens(30), shared + ref + cand]
    n_prefix = 20 if prefix else 0
    with torch.inference_mode():
        past = returned_cache(model(input_ids=torch.tensor([shared]), use_cache=True))
        plan = greedy_engine.EnginePlan(rows=len(rows), window=200, prefill_chunk_tokens=64)
        engine = greedy_engine._SlotEngine(model, plan, greedy_engine.SharedPrefix(past, 20) if prefix else None,
                                           8, 0, 2, 2)
        engine._admit([greedy_engine._Pending(i, r[n_prefix:]) for i, r in enumerate(rows)], list(range(len(rows))))
        for slot, row in enumerate(rows):
            full = model(input_ids=torch.tensor([row]), use_cache=True)
            start, end = int(engine.start[slot]), int(engine.end[slot])
            assert (start, end) == (1, 1 + len(row) - n_prefix)  # the tree path was taken: rows from column 1
            for (keys, values), layer in zip(engine.cache.layers, returned_cache(full).layers):
                torch.testing.assert_close(keys[slot, :, start:end], layer.keys[0, :, n_prefix:], atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(values[slot, :, start:end], layer.values[0, :, n_prefix:], atol=1e-5,
                                           rtol=1e-5)
            assert int(engine.tokens[slot]) == int(full.logits[0, -1].argmax())
            assert int(engine.position[slot]) == len(row)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("n_q", [1, 3])  # a row's next input alone, or with two drafted tokens
@pytest.mark.parametrize("with_prefix", [True, False])
def test_shared_prefix_attention_equals_attention_over_all_keys(dtype, n_q, with_prefix):
    """Decode attention (GQA: 8 query heads on 2 KV heads) over a shared prefix + each row's own keys, for a row's
    next input alone or with drafted tokens after it, equals PyTorch's attention over the concatenated keys."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    class Module:
        layer_idx = 0

    torch.manual_seed(0)
    batch, heads, kv_heads, dim, n_prefix, own = 3, 8, 2, 16, 11 if with_prefix else 0, 9
    query = torch.randn(batch, heads, n_q, dim)
    prefix_k, prefix_v = torch.randn(1, kv_heads, n_prefix, dim), torch.randn(1, kv_heads, n_prefix, dim)
    own_k, own_v = torch.randn(batch, kv_heads, own, dim), torch.randn(batch, kv_heads, own, dim)
    low = getattr(torch, dtype)
    allowed = torch.rand(batch, 1, n_q, own) > 0.3
    allowed[..., -1] = True
    prefix = [(prefix_k.to(low), prefix_v.to(low))] if with_prefix else None
    out, _ = greedy_engine.shared_prefix_attention(Module(), query.to(low), own_k.to(low), own_v.to(low), allowed,
                                                   shared_prefix_kv=prefix)
    assert out.dtype == low and out.shape == (batch, n_q, heads, dim)
    keys = torch.cat([prefix_k.expand(batch, -1, -1, -1), own_k], 2).repeat_interleave(heads // kv_heads, 1)
    values = torch.cat([prefix_v.expand(batch, -1, -1, -1), own_v], 2).repeat_interleave(heads // kv_heads, 1)
    mask = torch.cat([torch.ones(batch, 1, n_q, n_prefix, dtype=torch.bool), allowed], -1)
    expected = scaled_dot_product_attention(query, keys, values, attn_mask=mask).transpose(1, 2)
    tolerance = 1e-5 if dtype == "float32" else 3e-2  # bf16: eager-attention numerics
    torch.testing.assert_close(out.float(), expected, rtol=tolerance, atol=tolerance)


def test_attention_without_a_mask_is_causal():
    """No mask (transformers' convention for causal alone): each own token attends to the whole shared prefix and
    to the own tokens up to itself."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    class Module:
        layer_idx = 0

    torch.manual_seed(2)
    batch, heads, kv_heads, dim, n_prefix, own = 2, 4, 2, 8, 5, 6
    query = torch.randn(batch, heads, own, dim)
    prefix = [(torch.randn(1, kv_heads, n_prefix, dim), torch.randn(1, kv_heads, n_prefix, dim))]
    own_k, own_v = torch.randn(batch, kv_heads, own, dim), torch.randn(batch, kv_heads, own, dim)
    out, _ = greedy_engine.shared_prefix_attention(Module(), query, own_k, own_v, None, shared_prefix_kv=prefix)
    keys = torch.cat([prefix[0][0].expand(batch, -1, -1, -1), own_k], 2).repeat_interleave(2, 1)
    values = torch.cat([prefix[0][1].expand(batch, -1, -1, -1), own_v], 2).repeat_interleave(2, 1)
    mask = torch.ones(own, n_prefix + own, dtype=torch.bool).tril(diagonal=n_prefix)
    expected = scaled_dot_product_attention(query, keys, values, attn_mask=mask).transpose(1, 2)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not _cuda(), reason="cuDNN attention: CUDA only")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cudnn_cascade_attention_equals_attention_over_all_keys(dtype, monkeypatch):
    """On CUDA in half precision with one KV head per query head, decode attention runs cuDNN's fused kernel on
    the own keys and merges it with the prefix part through the log-sum-exp; equal to attention over the
    concatenated keys (float32 reference)."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    class Module:
        layer_idx = 0

    torch.manual_seed(0)
    batch, heads, dim, n_prefix, own = 5, 8, 64, 37, 45  # odd sizes: the mask's row padding is exercised
    query = torch.randn(batch, heads, 1, dim, device="cuda")
    prefix_k, prefix_v = torch.randn(2, 1, heads, n_prefix, dim, device="cuda")
    own_k, own_v = torch.randn(2, batch, heads, own, dim, device="cuda")
    allowed = torch.rand(batch, 1, 1, own, device="cuda") > 0.3
    allowed[..., -1] = True
    low = getattr(torch, dtype)
    served = []
    fused = greedy_engine._cudnn_cascade_attention

    def counted(*args):
        out = fused(*args)
        served.append(1)  # after it returned: a call cuDNN rejected (then the matmul path) is not counted
        return out

    monkeypatch.setattr(greedy_engine, "_cudnn_cascade_attention", counted)
    out, _ = greedy_engine.shared_prefix_attention(Module(), query.to(low), own_k.to(low), own_v.to(low), allowed,
                                                   shared_prefix_kv=[(prefix_k.to(low), prefix_v.to(low))])
    assert served == [1]  # the fused kernel served it (it returned, no fallback)
    keys = torch.cat([prefix_k.expand(batch, -1, -1, -1), own_k], 2)
    values = torch.cat([prefix_v.expand(batch, -1, -1, -1), own_v], 2)
    mask = torch.cat([torch.ones(batch, 1, 1, n_prefix, dtype=torch.bool, device="cuda"), allowed], -1)
    expected = scaled_dot_product_attention(query, keys, values, attn_mask=mask).transpose(1, 2)
    torch.testing.assert_close(out.float(), expected, rtol=3e-2, atol=3e-2)


def test_logit_altering_settings_and_sampling_use_generate(tiny_judge, monkeypatch):
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32")
    backend = judge.backend
    backend.load()
    calls = []
    real = greedy_engine.greedy_generate
    monkeypatch.setattr(greedy_engine, "greedy_generate", lambda *a, **k: calls.append(1) or real(*a, **k))
    prompts = _green_prompts(1)[:2]
    judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=5), progress=False)
    assert calls == [1]
    judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=5, temperature=0.7, seed=1), progress=False)
    assert calls == [1]  # sampling: generate
    assert greedy_engine.supports_engine(backend._model)
    backend._model.generation_config.repetition_penalty = 1.3
    try:
        assert not greedy_engine.supports_engine(backend._model)
        judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=6), progress=False)
        assert calls == [1] and backend.engine is False
    finally:
        backend._model.generation_config.repetition_penalty = 1.0


def test_table_sized_from_memory():
    """CUDA: free memory less prefill temporaries shared out as rows x window; the reserve, not max_new_tokens,
    sizes the window; CPU: the measured row cap."""
    from transformers import LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    per_token = greedy_engine.kv_bytes_per_token(model)
    assert per_token == 2 * 2 * 2 * 16 * 4  # k+v, layers, kv heads, head dim, fp32
    plan = greedy_engine.plan_engine(model, max_own=300, prefix_length=200, reserve=100, max_new_tokens=1024,
                                     n_rows=10_000)
    assert plan.window == 400 and plan.rows == greedy_engine.CPU_MAX_ROWS and plan.check_every == 1
    budget = 50 * (400 * per_token + 300 * 4)
    small = greedy_engine.plan_engine(model, max_own=300, prefix_length=200, reserve=100, max_new_tokens=1024,
                                      n_rows=10_000, memory_budget_bytes=budget)
    assert small.rows == 50
    assert greedy_engine.plan_engine(model, max_own=300, prefix_length=200, reserve=100, max_new_tokens=1024,
                                     n_rows=7).rows == 7
    # reserve: p95 of answers so far, the metric's typical length before 16 are known, within [min, max]
    assert greedy_engine.answer_reserve([], 1024, 0, typical=300) == 300
    assert greedy_engine.answer_reserve(list(range(100)), 1024, 0) == 96
    assert greedy_engine.answer_reserve(list(range(100)), 50, 0) == 50
    assert greedy_engine.answer_reserve([], 1024, 700, typical=300) == 700


def test_free_memory_counts_what_the_allocator_caches_unused(monkeypatch):
    """A second call in the same process sees the first call's freed slot table (held by PyTorch's caching
    allocator, not returned to the driver) as free: on an H100 it had planned a third of the rows without it."""
    import torch

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 << 30, 80 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 50 << 30)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 14 << 30)
    assert greedy_engine.cuda_free_bytes("cuda") == (10 + 36) << 30
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 14 << 30)
    assert greedy_engine.cuda_free_bytes("cuda") == 10 << 30


def test_graph_step_with_the_step_index_on_the_device_equals_eager_steps(monkeypatch):
    """Inside a CUDA graph the step index is a device scalar (indexing with it would sync the host, which a
    capture forbids); the same step run that way on CPU, with host checks every 4 steps, gives generate's tokens."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=4, eos_token_id=2,
                                         pad_token_id=2, bos_token_id=1)).eval()
    steps = []
    real = greedy_engine._SlotEngine._step_eager

    def step_on_device(self, b, k):
        steps.append(k)
        return real(self, b, torch.tensor(k) if isinstance(k, int) else k)

    monkeypatch.setattr(greedy_engine._SlotEngine, "_step_eager", step_on_device)
    g = torch.Generator().manual_seed(1)
    rows = [torch.randint(3, 300, (int(n),), generator=g).tolist() for n in (9, 23, 4)]
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=13, min_new_tokens=13, eos_token_id=2,
                                        pad_token_id=2, check_every=4)
    assert len(steps) >= 12 and set(steps) == {0, 1, 2, 3}
    for row, new in zip(rows, got):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row]), max_new_tokens=13, min_new_tokens=13, do_sample=False,
                                 eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()


def test_cudnn_attention_failure_falls_back_to_matmul_attention(monkeypatch):
    """A cuDNN build that rejects the call: the same answer from the matmul path, and no further tries."""
    import torch

    class Module:
        layer_idx = 0

    def rejects(*args, **kwargs):
        raise RuntimeError("cuDNN Frontend error: no valid execution plan")

    monkeypatch.setattr(greedy_engine, "_CUDNN_CASCADE", None)
    monkeypatch.setattr(greedy_engine, "_cudnn_cascade_attention", rejects)
    monkeypatch.setattr(greedy_engine, "_use_cudnn_cascade",
                        lambda *a: greedy_engine._CUDNN_CASCADE is not False)  # as if on CUDA in half precision
    torch.manual_seed(0)
    query, keys, values = torch.randn(2, 4, 1, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    prefix = [(torch.randn(1, 4, 3, 8), torch.randn(1, 4, 3, 8))]
    allowed = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    out, _ = greedy_engine.shared_prefix_attention(Module(), query, keys, values, allowed, shared_prefix_kv=prefix)
    assert greedy_engine._CUDNN_CASCADE is False
    monkeypatch.setattr(greedy_engine, "_use_cudnn_cascade", lambda *a: False)
    expected, _ = greedy_engine.shared_prefix_attention(Module(), query, keys, values, allowed,
                                                        shared_prefix_kv=prefix)
    torch.testing.assert_close(out, expected)


def test_failed_graph_capture_leaves_the_rows_as_they_were(monkeypatch, caplog):
    """Capture runs two real warm-up steps first; when it then fails (here: the warm-up reports a host sync),
    the rows' state is put back and the step runs eagerly: the same tokens as generate, and a warning naming
    where it failed."""
    import contextlib

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    class Stream:
        def wait_stream(self, other):
            pass

    @contextlib.contextmanager
    def stream_that_syncs(stream):
        yield
        raise RuntimeError("called a synchronizing CUDA operation")  # as sync-debug mode "error" reports it

    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: Stream())
    monkeypatch.setattr(torch.cuda, "stream", stream_that_syncs)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda mode: None)
    torch.manual_seed(5)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, eos_token_id=2,
                                         pad_token_id=2, bos_token_id=1)).eval()
    g = torch.Generator().manual_seed(2)
    rows = [torch.randint(3, 300, (int(n),), generator=g).tolist() for n in (7, 19, 11)]

    def graphs_on(plan):  # as on a CUDA device
        plan.cuda_graphs = True

    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=9, min_new_tokens=9, eos_token_id=2,
                                        pad_token_id=2, check_every=3, on_plan=graphs_on)
    assert "CUDA graph capture failed" in caplog.text and "synchronizing" in caplog.text
    for row, new in zip(rows, got):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row]), max_new_tokens=9, min_new_tokens=9, do_sample=False,
                                 eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()


def test_every_end_token_of_the_generation_config_ends_an_answer(tiny_judge):
    """A chat model may end its turn with a token other than the tokenizer's end token (Gemma's <end_of_turn>,
    listed in its generation config beside <eos>). The engine and generate stopped only at the tokenizer's, ran on
    to max_new_tokens and the answer was marked cut. Now every listed end token ends an answer, in both paths."""
    from radmetrics.types import CutAnswer

    prompts = _green_prompts(1)[:4]
    config = radmetrics.GenerationConfig(max_new_tokens=400)
    engine = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32")
    generate = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32", engine=False)
    whole = engine.generate(prompts, config, progress=False)
    tok = engine.backend.tokenizer
    ids = tok(whole[0], add_special_tokens=False)["input_ids"]
    turn_end = ids[len(ids) // 2]  # a token the first answer reaches half-way: stands in for <end_of_turn>
    for judge in (engine, generate):
        judge.backend.load()
        judge.backend._model.generation_config.eos_token_id = [tok.eos_token_id, turn_end]
    got = engine.generate(prompts, config, progress=False)
    assert got == generate.generate(prompts, config, progress=False)
    assert len(got[0]) < len(whole[0]) and whole[0].startswith(got[0])
    assert not any(isinstance(a, CutAnswer) for a in got)
    # min_new_tokens holds back every end token, the turn's too
    held = engine.generate(prompts[:1], radmetrics.GenerationConfig(max_new_tokens=400, min_new_tokens=len(ids) - 2),
                           progress=False)
    assert len(held[0]) > len(got[0])
