"""Greedy decoding without `generate`: continuous batching over a fixed table of KV-cache slots.

Why not `model.generate`: at the batch sizes judging runs at, generate re-concatenates the KV cache of every layer
at every step, runs its logits-processor stack per token, pads every prompt of a batch to the longest, and keeps a
batch's short answers waiting for its longest one. Here:

* **one slot table** is allocated once per call: per layer, keys and values of shape
  ``[rows, kv_heads, window, head_dim]``. A row of the table holds one prompt's own tokens (the shared prefix is
  not copied: it stays in one copy, see below) and its answer so far. Tensors never move or grow: decode steps
  write one column per row in place (``index_put_`` at each row's own next column), so the addresses are fixed
  (what CUDA graphs need);
* the window is **the longest prompt's own tokens + a reserve for the answer**, where the reserve is an estimate
  of answer length (the caller's: p95 of answers seen so far, or a metric's typical length; at least
  ``min_new_tokens``), not ``max_new_tokens``: a 7B GREEN batch fits about twice the rows. A row whose answer
  outgrows the window is **continued**, not cut: its keys/values are set aside and it finishes in a second
  table sized for ``max_new_tokens`` once the first is done;
* **continuous batching**: when rows finish (EOS or ``max_new_tokens``), their slots are refilled with waiting
  prompts: a prefill of the new rows (length-sorted chunks under a token budget, last-position logits only)
  between two decode steps. When nothing is waiting, the live rows are compacted into the first slots: with CUDA
  graphs once half of the table is idle (batch buckets ``rows, rows/2, ...``, each a view with the same
  addresses), without them (CPU) as soon as the live rows, rounded up to 8, fit fewer slots (a step computes no
  finished row's slot: the natural benchmark 1.74 -> 1.66 s);
* every decode step reads the **shared prefix** (a scoring system's instructions, computed once per call by the
  caller) once for the whole batch (`slot_attention`: "cascade" attention, one softmax over prefix + own keys);
* rows that begin alike past the shared prefix (one reference judged against several candidates) are admitted
  together and **prefilled along their radix tree** (`shared_stems`): each shared stretch once, on top of its
  parent's keys/values; each row's slot then holds its whole own part from column 1, as if prefilled alone;
* tokens and the per-row state (next column, position, answer length, finished / overflow flags) stay on the
  device; the host reads them every ``check_every`` steps (one transfer; 1 on CPU where syncs are free). Rows
  that finished between checks are frozen on the device (their tokens are not counted).

* for transformers' own Llama and Mistral models a decode step calls the model's modules directly
  (`lean_decode`), skipping transformers' model-level wrappers, once the first step of its kind gave the model's
  own forward's logits bit for bit.

* on the host-synced path (CPU), a step may also check **prompt-lookup drafts** (`prompt_lookup`): each row's
  next input is followed by up to 4 tokens guessed from its own earlier tokens, and the row keeps the guesses the
  model agrees with plus the model's next token. Used while at most `DRAFT_MAX_ROWS` slots are live and only when
  measured faster (`DraftPolicy`); the answers are the same.

Greedy semantics match `generate(do_sample=False, min_new_tokens=m, max_new_tokens=n)` with one EOS id: the EOS
logit is suppressed until a row has m new tokens, a row stops at EOS, and its remaining tokens are padding.
Token equality with `generate` is tested in fp32 on CPU (with and without drafts) and, where one is present, on
CUDA with the graphs (tests/test_greedy_engine.py; 65 passed on an H100 in session 21). On CUDA in half precision
the own-key part of the decode attention runs cuDNN's fused kernel (`_cudnn_cascade_attention`).
"""
from __future__ import annotations

import copy
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.judge import cpu_attention as compiled_attention
from radmetrics.judge.cpu_attention import CPU_ATTENTION
from radmetrics.judge.lean_decode import LEAN_CHECKS, lean_decoder
from radmetrics.judge.prompt_lookup import DRAFT_MAX_ROWS, DRAFT_TOKENS, AnswerLookup, DraftPolicy, PromptLookup
from radmetrics.judge.shared_stems import StemNode, has_stems, plan_stems, shared_by_neighbours, stem_order

log = logging.getLogger(__name__)

#: row states on the device
FREE, ACTIVE, FINISHED, OVERFLOW = 0, 1, 2, 3
#: a continuation table holds this many times the tokens of the table before it (see run_engine)
CONTINUATION_GROWTH = 4


@dataclass
class SharedPrefix:
    """KV cache (a transformers DynamicCache of batch 1) of the first ``length`` tokens every prompt shares."""

    cache: Any
    length: int


@dataclass
class EnginePlan:
    """How big the slot table is: ``rows`` slots of ``window`` own + answer tokens, prefill chunks of at most
    ``prefill_chunk_tokens`` tokens (own tokens x rows of the chunk, prefix not counted)."""

    rows: int
    window: int
    prefill_chunk_tokens: int
    check_every: int = 1
    cuda_graphs: bool = False
    #: prompt-lookup guesses checked per row and step (0: none); the host-synced path only (see prompt_lookup)
    draft_tokens: int = 0
    #: how a decode step attends to the rows' own keys: "cascade" (a masked product over each slot's whole window
    #: on CUDA, or cuDNN's fused kernel) or "varlen" (length-aware: only each row's filled columns; `DECODE_ATTENTION`)
    decode_attention: str = "cascade"
    #: a CPU fp32 model's decode attention through the compiled kernel ("auto", where it builds) or PyTorch's
    #: products ("torch"); `cpu_attention.CPU_ATTENTION`
    cpu_attention: str = "auto"


#: "cascade": the rows' own keys through one masked product over the slot windows (cuDNN's fused kernel on CUDA in
#: fp16/bf16). "varlen": length-aware, each row's filled columns only, as offsets into a table laid out
#: [rows, window, KV heads, dim] (flash attention in fp16/bf16 on CUDA; the memory-efficient kernel in fp32 on CUDA;
#: a masked product on CPU, for tests). A decode step reads every slot's whole window with "cascade" (CUDA graphs
#: need fixed shapes) though rows have filled ~60% of it (BENCHMARKS.md, session 21); "varlen" reads ~40% less.
#: Not the default until measured faster on a GPU (benchmarks/decode_attention.py, judge_throughput.py gpu-7b).
DECODE_ATTENTION = ("cascade", "varlen")


def supports_engine(model: Any) -> bool:
    """True when this model can run on the engine: a decoder whose attention goes through transformers'
    attention interface and whose generation config alters no logits under greedy decoding."""
    try:
        from transformers import AttentionInterface  # noqa: F401
        from transformers.cache_utils import DynamicCache

        if not hasattr(DynamicCache, "batch_repeat_interleave"):
            return False
    except ImportError:
        return False
    gen = getattr(model, "generation_config", None)
    if gen is not None:
        # Anything that changes greedy logits must go through generate's processors, not be silently ignored.
        altering = [getattr(gen, "repetition_penalty", None) not in (None, 1.0),
                    bool(getattr(gen, "no_repeat_ngram_size", None)), bool(getattr(gen, "bad_words_ids", None)),
                    bool(getattr(gen, "suppress_tokens", None)), bool(getattr(gen, "begin_suppress_tokens", None)),
                    getattr(gen, "forced_bos_token_id", None) is not None,
                    getattr(gen, "forced_eos_token_id", None) is not None,
                    bool(getattr(gen, "sequence_bias", None))]
        if any(altering):
            return False
    # attention-score soft-capping (Gemma 2) is not applied by the engine's attention
    if getattr(model.config.get_text_config(decoder=True), "attn_logit_softcapping", None):
        return False
    return getattr(model.config, "is_encoder_decoder", False) is False


def outgrown_window(model: Any, longest_row: int, max_new_tokens: int) -> int | None:
    """The model's sliding attention window when a row of ``longest_row`` tokens + its answer could outgrow it,
    else None. The engine's attention reads every column of a row, so such rows must go through `generate` (the
    backend checks; `greedy_generate` refuses rather than answer wrongly)."""
    window = attention_window(model)
    return window if window is not None and longest_row + max_new_tokens > window else None


def attention_window(model: Any) -> int | None:
    """The sliding window of a model whose layers (some or all) attend only to the last N tokens, or None."""
    config = model.config.get_text_config(decoder=True)
    window = getattr(config, "sliding_window", None)
    if not window or getattr(config, "use_sliding_window", True) is False:
        return None
    layer_types = getattr(config, "layer_types", None)
    if layer_types and not any("sliding" in str(t) for t in layer_types):
        return None
    return int(window)


# -- sizing ----------------------------------------------------------------------------------------------
def kv_bytes_per_token(model: Any) -> int:
    """Bytes of keys + values one token takes in the cache, all layers."""
    config = model.config.get_text_config(decoder=True)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    dtype_bytes = next(model.parameters()).element_size()
    return 2 * config.num_hidden_layers * kv_heads * head_dim * dtype_bytes


#: CPU: rows per table. On the cpu-tiny benchmark 96 rows ran 1.44x faster than 32 (weights read once per step
#: for more rows); past ~128 the per-row attention over the window and the logits rows outweigh that gain.
CPU_MAX_ROWS = 128
#: without CUDA graphs (CPU), the table's live part shrinks in steps of this many rows as rows finish
SHRINK_ROWS = 8
CPU_PREFILL_CHUNK_TOKENS = 2048
#: CUDA: rows per table (batch buckets are powers of two below), and the prefill chunk
CUDA_MAX_ROWS = 256
CUDA_PREFILL_CHUNK_TOKENS = 8192
#: what one more prefill pass costs, in padding tokens: a forward of the model whatever its size, building its
#: past, copying its keys to the slots. CPU: 64 was as fast as 32-256 on the cpu-tiny presets (prefill 9-10%
#: faster than filling passes greedily). CUDA (an estimate, not measured): a pass reads all the weights, e.g.
#: 13.5 GB for a 7B model, ~5 ms on an H100, the compute of a few hundred tokens.
CPU_PASS_COST_TOKENS = 64
CUDA_PASS_COST_TOKENS = 256
#: rows of one prefill pass at most (bounds the search for the cuts at n x 512 steps: ~0.1 s for 1,000 rows)
MAX_PASS_ROWS = 512


def plan_engine(model: Any, *, max_own: int, prefix_length: int, reserve: int, max_new_tokens: int,
                n_rows: int, max_rows: int | None = None, memory_budget_bytes: int | None = None,
                prefill_chunk_tokens: int | None = None, free_bytes: int | None = None) -> EnginePlan:
    """Rows and window of the slot table, from the memory there is.

    CUDA: the free device memory (``torch.cuda.mem_get_info``, or ``free_bytes``), less 10% headroom, less the
    prefill's temporaries (the chunk's copy of the shared prefix and the layer activations of its tokens, the
    logits rows), is shared out as ``rows x window`` KV tokens. CPU: the measured default row cap, under a quarter
    of the memory available. ``max_rows`` / ``memory_budget_bytes`` override."""

    device = next(model.parameters()).device
    on_cuda = device.type == "cuda"
    window = max_own + max(1, min(reserve, max_new_tokens))
    chunk = prefill_chunk_tokens or (CUDA_PREFILL_CHUNK_TOKENS if on_cuda else CPU_PREFILL_CHUNK_TOKENS)
    per_token = kv_bytes_per_token(model)
    config = model.config.get_text_config(decoder=True)
    dtype_bytes = next(model.parameters()).element_size()
    if memory_budget_bytes is None:
        if on_cuda:
            free = free_bytes if free_bytes is not None else cuda_free_bytes(device)
            chunk_rows = max(1, chunk // max(1, max_own))
            prefill_temporaries = (
                2 * chunk_rows * (prefix_length + max_own) * per_token  # prefix copy + the chunk's own cache
                + 6 * chunk * max(config.hidden_size * 4, config.intermediate_size * 3) * dtype_bytes  # activations
                + chunk_rows * _vocab(model) * 4)
            memory_budget_bytes = int(free * 0.9) - prefill_temporaries
        else:
            memory_budget_bytes = _available_ram() // 4
    # each row also holds a float32 logits row
    per_row = window * per_token + _vocab(model) * 4
    rows_fit = max(1, memory_budget_bytes // per_row)
    cap = max_rows or (CUDA_MAX_ROWS if on_cuda else CPU_MAX_ROWS)
    rows = int(max(1, min(rows_fit, cap, n_rows)))
    return EnginePlan(rows=rows, window=window, prefill_chunk_tokens=chunk, check_every=8 if on_cuda else 1,
                      cuda_graphs=on_cuda, draft_tokens=0 if on_cuda else DRAFT_TOKENS)


def cuda_free_bytes(device: Any) -> int:
    """Device memory this process can still use: the driver's free memory plus what PyTorch's caching allocator
    holds but no tensor uses (a previous call's slot table, freed but cached). Without the second part a second
    call in the same process saw ~45 GB less on an H100 and planned a third of the rows."""
    import torch

    cached_unused = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return torch.cuda.mem_get_info(device)[0] + max(0, cached_unused)


def _available_ram() -> int:
    import os

    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def answer_reserve(history: list[int], max_new_tokens: int, min_new_tokens: int, typical: int = 512) -> int:
    """KV slots to reserve per row for its answer: the 95th percentile of answers seen so far (``typical``
    until 16 are known), never below ``min_new_tokens``, never above ``max_new_tokens``."""
    if len(history) >= 16:
        ordered = sorted(history)
        estimate = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] + 1
    else:
        estimate = typical
    return max(1, min(max_new_tokens, max(min_new_tokens, estimate)))


# -- the engine ------------------------------------------------------------------------------------------
def greedy_generate(
    model: Any,
    rows: list[list[int]],
    *,
    max_new_tokens: int,
    min_new_tokens: int = 0,
    eos_token_id: int | Sequence[int],
    pad_token_id: int,
    prefix: SharedPrefix | None = None,
    prefill_chunk_tokens: int | None = None,
    max_rows: int | None = None,
    reserve: int | None = None,
    check_every: int | None = None,
    cuda_graphs: bool | None = None,
    draft_tokens: int | None = None,
    memory_budget_bytes: int | None = None,
    share_stems: bool = True,
    decode_attention: str = "cascade",
    cpu_attention: str = "auto",
    on_row_done: Callable[[int, list[int]], None] | None = None,
    on_plan: Callable[[EnginePlan], None] | None = None,
    limits: Sequence[int] | None = None,
) -> list[list[int]]:
    """New token ids for each row (EOS and what follows it removed), greedy. ``rows`` are full prompts;
    when ``prefix`` is given every row starts with its ``length`` tokens. ``reserve``: answer tokens to hold a
    slot for (default ``max_new_tokens``); longer answers are continued in a second table. ``on_row_done(i,
    ids)`` is called as each row finishes (any order); ``on_plan(plan)`` with the table's size before it is
    allocated. ``share_stems``: rows that begin alike past the prefix (one reference, several candidates) are
    admitted together and their common tokens computed once (`shared_stems`). ``decode_attention``: one of
    `DECODE_ATTENTION`. ``cpu_attention``: one of `cpu_attention.CPU_ATTENTION`. ``limits``: a row's own cap on
    answer tokens where it is below ``max_new_tokens`` (the room its prompt leaves in the model's context): the row
    stops there as at ``max_new_tokens``, and no input of it is placed at a position past its prompt + limit (drafts
    included)."""
    if decode_attention not in DECODE_ATTENTION:
        raise ValueError(f"decode_attention must be one of {', '.join(DECODE_ATTENTION)}, not {decode_attention!r}")
    if cpu_attention not in CPU_ATTENTION:
        raise ValueError(f"cpu_attention must be one of {', '.join(CPU_ATTENTION)}, not {cpu_attention!r}")
    n_prefix = prefix.length if prefix else 0
    own = [r[n_prefix:] for r in rows]
    if not rows:
        return []
    longest = max(map(len, rows))
    window = outgrown_window(model, longest, max_new_tokens)
    if window is not None:
        raise ValueError(f"rows of up to {longest + max_new_tokens} tokens exceed the model's {window}-token "
                         "sliding attention window, which the engine does not apply: use generate")
    reserve = max_new_tokens if reserve is None else max(1, min(reserve, max_new_tokens))
    max_own = max(map(len, own))
    plan = plan_engine(model, max_own=max_own, prefix_length=n_prefix, reserve=reserve,
                       max_new_tokens=max_new_tokens, n_rows=len(rows), max_rows=max_rows,
                       memory_budget_bytes=memory_budget_bytes, prefill_chunk_tokens=prefill_chunk_tokens)
    if check_every:
        plan.check_every = check_every
    if cuda_graphs is not None:
        plan.cuda_graphs = cuda_graphs and next(model.parameters()).device.type == "cuda"
    if draft_tokens is not None:
        plan.draft_tokens = draft_tokens
    if plan.cuda_graphs or plan.check_every != 1:
        plan.draft_tokens = 0  # drafts are looked up on the host: only where it reads the rows every step
    plan.decode_attention, plan.cpu_attention = decode_attention, cpu_attention
    if on_plan:
        on_plan(plan)
    results: list[list[int] | None] = [None] * len(rows)

    def done(i: int, ids: list[int]) -> None:
        results[i] = ids
        if on_row_done:
            on_row_done(i, ids)

    prefix_ids = rows[0][:n_prefix]
    answers = AnswerLookup()  # shared by every table: continued rows draft from every finished answer
    engine = _SlotEngine(model, plan, prefix, max_new_tokens, min_new_tokens, eos_token_id, pad_token_id, prefix_ids,
                         share_stems=share_stems, max_own=max_own, answers=answers)
    # longest first: the first chunks fill the table with little padding; shorter prompts refill it. Rows that
    # share stems (a tenth of their tokens or more) go in token order instead: admitted together, they share.
    order = stem_order(own) if share_stems else []
    if not share_stems or shared_by_neighbours(own, order) < 0.1 * sum(map(len, own)):
        order = sorted(range(len(own)), key=lambda i: -len(own[i]))
    caps = [max_new_tokens] * len(rows) if limits is None else [max(1, min(n, max_new_tokens)) for n in limits]
    waiting = [_Pending(i, own[i], limit=caps[i]) for i in order]
    overflow = engine.run(waiting, done)
    room = reserve
    while overflow:
        # Answers that outgrew their reserve: another table with room for CONTINUATION_GROWTH times as many more
        # tokens each (up to max_new_tokens; at the shipped 1,024 and a 512 reserve, one table with room for all).
        # Rows that outgrow it again go round again: a huge max_new_tokens costs memory only as answers use it.
        del engine
        _free_device_cache(model)
        room *= CONTINUATION_GROWTH
        longest = max(o.columns + min(room, o.limit - len(o.produced)) for o in overflow)
        plan2 = EnginePlan(rows=max(1, min(plan.rows, len(overflow))), window=longest,
                           prefill_chunk_tokens=plan.prefill_chunk_tokens, check_every=plan.check_every,
                           cuda_graphs=False, draft_tokens=plan.draft_tokens, decode_attention=decode_attention,
                           cpu_attention=cpu_attention)
        log.info("%d answers outgrew the %d-token reserve; continuing them", len(overflow), reserve)
        engine = _SlotEngine(model, plan2, prefix, max_new_tokens, min_new_tokens, eos_token_id, pad_token_id,
                             prefix_ids, share_stems=share_stems, answers=answers)
        overflow = engine.run(overflow, done)
    return results  # type: ignore[return-value]


@dataclass
class _Pending:
    """A row waiting for a slot: a prompt to prefill, or an answer to continue (its keys/values set aside)."""

    index: int
    own: list[int]
    limit: int = 2**62  # answer tokens at most (max_new_tokens, or less: the room in the model's context)
    produced: list[int] = field(default_factory=list)
    kv: list[tuple[Any, Any]] | None = None  # per layer [kv_heads, columns, head_dim], continuation only
    position: int = 0
    columns: int = 0
    pending_token: int = 0
    lookup: PromptLookup | None = None  # drafts from the row's tokens (host-synced path)
    looked_up: int = 0  # answer tokens already in ``lookup``


class _SlotEngine:
    def __init__(self, model, plan: EnginePlan, prefix, max_new_tokens, min_new_tokens, eos, pad,
                 prefix_ids: list[int] | None = None, share_stems: bool = True, max_own: int = 0,
                 answers: AnswerLookup | None = None):
        import torch

        self.torch = torch
        self.model, self.plan, self.prefix, self.share_stems = model, plan, prefix, share_stems
        self.max_own = max_own  # the longest prompt's own tokens (sizes a stem chunk's keys/values)
        # compared with long tensors: a limit past int64 (max_new_tokens=10**20) is no limit, as 2**62 is
        self.max_new, self.min_new, self.pad = min(max_new_tokens, 2**62), min(min_new_tokens, 2**62), pad
        self.device = next(model.parameters()).device
        # the end token, or several (a generation config's list, e.g. a chat turn's end beside the text's end):
        # an int keeps the one-id path as it was; a tensor of ids is compared with isin
        ends = [eos] if isinstance(eos, int) else list(dict.fromkeys(eos))
        self.eos = ends[0] if len(ends) == 1 else torch.tensor(ends, device=self.device)
        self.cache_name = cache_argument(model)
        # decode steps without transformers' model wrappers (stock Llama/Mistral, no hooks; checked on first use)
        self.lean = None if LEAN_CHECKS.refused(model) else lean_decoder(model, shared_prefix_attention)
        config = model.config.get_text_config(decoder=True)
        self.config = config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        dtype = next(model.parameters()).dtype
        B, W, dev = plan.rows, plan.window, self.device
        # column 0 is scratch: where inactive slots write (see _step_eager); rows use columns 1..W, and a step
        # that checks drafts writes up to draft_tokens columns past a row's next one
        width = W + 1 + plan.draft_tokens
        self.varlen = plan.decode_attention == "varlen"
        # CPU fp32, the slot table's [rows, kv_heads, width, dim] layout: decode steps (drafted ones too) through the
        # compiled kernel (built on first use; PyTorch's products where it does not build)
        self.cpu_kernel = (plan.cpu_attention == "auto" and not self.varlen and dev.type == "cpu"
                           and dtype == torch.float32 and compiled_attention.available())

        def table():
            if self.varlen:  # stored [rows, width, kv_heads, dim]: a row's columns one run in memory (see
                # `_varlen_cascade_attention`); indexed everywhere as the [rows, kv_heads, width, dim] view
                return torch.zeros(B, width, kv_heads, head_dim, dtype=dtype, device=dev).transpose(1, 2)
            return torch.zeros(B, kv_heads, width, head_dim, dtype=dtype, device=dev)

        self.cache = SlotCache([(table(), table()) for _ in range(config.num_hidden_layers)])
        long = dict(dtype=torch.long, device=dev)
        self.tokens = torch.full((B,), pad, **long)  # next input token of each slot
        self.start = torch.zeros(B, **long)  # first own column (right-aligned in a chunk, or from column 1)
        self.end = torch.zeros(B, **long)  # the column this step writes
        self.position = torch.zeros(B, **long)
        self.generated = torch.zeros(B, **long)  # answer tokens counted so far
        self.state = torch.zeros(B, **long)  # FREE / ACTIVE / FINISHED / OVERFLOW
        self.limit = torch.full((B,), self.max_new, **long)  # answer tokens at most, per slot (`_Pending.limit`)
        self.columns = torch.arange(width, device=dev)
        self.offsets = torch.arange(1 + plan.draft_tokens, device=dev)  # a step's inputs: next token + drafts
        # varlen attention: row b's columns start at b * width in the flattened table; one query per row
        self.row_base = torch.arange(B + 1, device=dev) * width
        self.query_starts = torch.arange(B + 1, dtype=torch.int32, device=dev)
        # counted tokens since the last check: [step, input of the step, slot]
        self.history = torch.full((max(1, plan.check_every), 1 + plan.draft_tokens, B), -1, **long)
        self.lookup = PromptLookup(prefix_ids or []) if plan.draft_tokens else None  # the shared prefix's index
        self.drafting = DraftPolicy() if plan.draft_tokens else None
        self.answers = answers if plan.draft_tokens else None  # the call's finished answers, drafts for the others
        self.slot_row: list[_Pending | None] = [None] * B
        self.prefix_kv = _layer_tensors(prefix.cache) if prefix else None
        self.bucket = B
        self.graphs: dict[int, Any] = {}
        self.pass_cost = CUDA_PASS_COST_TOKENS if dev.type == "cuda" else CPU_PASS_COST_TOKENS

    # -- host side -------------------------------------------------------------------------------------
    def run(self, waiting: list[_Pending], done: Callable[[int, list[int]], None]) -> list[_Pending]:
        torch = self.torch
        overflow: list[_Pending] = []
        B = self.plan.rows
        refill_at = max(1, B // 8)  # refill once this many slots are free (a prefill per few rows, not per row)
        with torch.inference_mode():
            while True:
                free = [s for s in range(B) if self.slot_row[s] is None]
                active = B - len(free)
                if waiting and (len(free) >= min(refill_at, len(waiting)) or active == 0):
                    if any(s >= self.bucket for s in free[: len(waiting)]):
                        self.bucket = B  # refilling: the whole table again
                    take, waiting = waiting[: len(free)], waiting[len(free):]
                    self._admit(take, free[: len(take)])
                    active += len(take)
                if active == 0:
                    if self.drafting is not None and self.drafting.steps[True]:
                        log.debug("prompt-lookup drafts: %d drafted steps gave %d tokens, %d plain steps %d",
                                  self.drafting.steps[True], self.drafting.tokens[True],
                                  self.drafting.steps[False], self.drafting.tokens[False])
                    return overflow
                if not waiting:
                    self._maybe_shrink()
                with _slot_attention(self.model):
                    if self.drafting is not None:
                        self._step_with_drafts()
                    else:
                        for k in range(self.plan.check_every):
                            self._step(k)
                self._collect(done, overflow)

    def _admit(self, rows: list[_Pending], slots: list[int]) -> None:
        """Put rows into free slots: prefill new prompts in length-sorted chunks, copy continued rows' keys."""
        fresh = [(r, s) for r, s in zip(rows, slots) if r.kv is None]
        for r, s in zip(rows, slots):
            if r.kv is not None:
                self._restore(r, s)
        stems = plan_stems([r.own for r, _ in fresh]) if self.share_stems and len(fresh) > 1 else []
        if has_stems(stems) and self._stems_fit(stems):
            try:
                self._prefill_stems(stems, fresh)
                fresh = []
            except Exception as e:  # noqa: BLE001 - a model whose cache the tree cannot feed: prefill rows whole
                if is_out_of_memory(e):
                    raise  # the backend halves the table
                log.warning("prefix sharing between rows failed for this model (%s); prefilling each row whole",
                            _first_line(e))
                self.share_stems = False
                for r, _ in fresh:
                    r.produced.clear()  # a leaf done before the failure picked its first token: picked again
        for chunk in _prefill_chunks([len(r.own) for r, _ in fresh], self.plan.prefill_chunk_tokens, self.pass_cost):
            self._prefill([fresh[c][0] for c in chunk], [fresh[c][1] for c in chunk])
        for r, s in zip(rows, slots):
            self.slot_row[s] = r
        self.history.fill_(-1)

    def _prefill(self, rows: list[_Pending], slots: list[int]) -> None:
        torch = self.torch
        n_prefix = self.prefix.length if self.prefix else 0
        w = max(len(r.own) for r in rows)
        ids, mask, positions = [], [], []
        for r in rows:
            pad = w - len(r.own)
            ids.append([self.pad] * pad + r.own)
            mask.append([1] * n_prefix + [0] * pad + [1] * len(r.own))
            positions.append([n_prefix] * pad + list(range(n_prefix, n_prefix + len(r.own))))
        past = None
        if self.prefix:
            past = copy.deepcopy(self.prefix.cache)
            past.batch_repeat_interleave(len(rows))
        out = self.model(input_ids=self._long(ids), attention_mask=self._long(mask),
                         position_ids=self._long(positions), use_cache=True, logits_to_keep=1, **{self.cache_name: past})
        index = torch.tensor(slots, device=self.device)
        for (keys, values), (k, v) in zip(self.cache.layers, _layer_tensors(returned_cache(out))):
            # the chunk's own tokens, right-aligned in columns [1, 1 + w); the padding columns stay masked
            keys[index, :, 1 : 1 + w] = k[:, :, n_prefix:]
            values[index, :, 1 : 1 + w] = v[:, :, n_prefix:]
        logits = out.logits[:, -1].float()
        del out, past
        lengths = torch.tensor([len(r.own) for r in rows], device=self.device)
        self._start_rows(rows, index, 1 + w - lengths, logits)

    def _long(self, values: list):
        """A long tensor on the device from (nested, rectangular) lists of ints: through numpy, ~6x faster than
        ``torch.tensor`` for a prefill pass's ids, mask and positions (96 x 300: 0.7 against 4.4 ms)."""
        import numpy as np

        return self.torch.from_numpy(np.asarray(values, dtype=np.int64)).to(self.device)

    def _start_rows(self, rows: list[_Pending], index, start, logits) -> None:
        """Rows whose own tokens are in their slots' columns ``start .. start + len(own)``: their state, and
        the first answer token from ``logits`` (the last prompt position's)."""
        torch = self.torch
        n_prefix = self.prefix.length if self.prefix else 0
        lengths = torch.tensor([len(r.own) for r in rows], device=self.device)
        self.start[index] = start
        self.end[index] = start + lengths
        self.position[index] = n_prefix + lengths
        self.generated[index] = 0
        self.limit[index] = torch.tensor([min(r.limit, self.max_new) for r in rows], device=self.device)
        self.state[index] = ACTIVE
        first = self._pick(logits, self.generated[index])
        counted = ~is_end(first, self.eos)
        self.tokens[index] = first
        self.generated[index] += counted.long()
        # a first token that ends the answer (EOS, or a limit of 1) finishes the row at once
        ends = ~counted | (self.generated[index] >= self.limit[index])
        self.state[index] = torch.where(ends, torch.full_like(first, FINISHED), torch.full_like(first, ACTIVE))
        for r, t, c in zip(rows, first.tolist(), counted.tolist()):
            if c:
                r.produced.append(t)

    def _stems_fit(self, stems: list[StemNode]) -> bool:
        """On CUDA the stems' keys/values (each with its ancestors'), held until the wave's rows are in their
        slots, must fit in what the plan set aside for one prefill chunk; on CPU memory is not the limit."""
        if self.device.type != "cuda":
            return True
        held = sum(_depth(stems, i) + len(node.tokens) for i, node in enumerate(stems) if node.row is None)
        return held <= self.plan.prefill_chunk_tokens

    def _prefill_stems(self, stems: list[StemNode], fresh: list[tuple[_Pending, int]]) -> None:
        """Prefill along the rows' radix tree (`shared_stems`): a level at a time, each node's tokens on top of
        its ancestors' keys/values, so a stem several rows share is computed once; a leaf completes its row,
        whose slot gets its ancestors' keys/values and its own, from column 1."""
        stem_kv: dict[int, list[tuple[Any, Any]]] = {}  # stem -> per layer [kv_heads, depth, head_dim], ancestors'
        budgets = self._stem_chunk_budgets()
        for level in range(max(n.level for n in stems) + 1):
            items = [i for i, n in enumerate(stems) if n.level == level]
            depths = [_depth(stems, i) for i in items]
            for chunk in _least_padding([len(stems[i].tokens) for i in items], depths, *budgets, self.pass_cost):
                self._prefill_nodes([items[c] for c in chunk], [depths[c] for c in chunk], stems, stem_kv, fresh)

    def _stem_chunk_budgets(self) -> tuple[int, int, int]:
        """(new tokens, keys/values, prefix) for a tree-prefill pass: the tokens of a plain chunk, and the
        keys/values of one (its rows each with the prefix and their own tokens), which `plan_engine` set memory
        aside for on CUDA. A pass's items each carry the prefix and their ancestors: counted, short leaves under a
        long stem cannot fill a pass with copies. On CPU memory is not the limit and fewer, larger passes are
        faster: no keys/values bound."""
        n_prefix = self.prefix.length if self.prefix else 0
        chunk = self.plan.prefill_chunk_tokens
        if self.device.type != "cuda":
            return chunk, sys.maxsize, n_prefix
        longest = max(1, self.max_own)
        return chunk, max(1, chunk // longest) * (n_prefix + longest), n_prefix

    def _prefill_nodes(self, items: list[int], depths: list[int], stems: list[StemNode], stem_kv: dict,
                       fresh) -> None:
        """One tree-prefill pass over nodes ``items`` (``depths``: their ancestors' tokens, `_depth`)."""
        torch = self.torch
        n_prefix = self.prefix.length if self.prefix else 0
        parents = [stems[i].parent for i in items]
        a_max, w = max(depths), max(len(stems[i].tokens) for i in items)
        ids, mask, positions = [], [], []
        for i, a in zip(items, depths):
            tokens = stems[i].tokens
            pad = w - len(tokens)
            ids.append([self.pad] * pad + tokens)
            mask.append([1] * n_prefix + [0] * (a_max - a) + [1] * a + [0] * pad + [1] * len(tokens))
            positions.append([n_prefix + a] * pad + list(range(n_prefix + a, n_prefix + a + len(tokens))))
        past = self._stem_past(parents, depths, a_max, stem_kv)
        out = self.model(input_ids=self._long(ids), attention_mask=self._long(mask),
                         position_ids=self._long(positions), use_cache=True, logits_to_keep=1, **{self.cache_name: past})
        layers = _layer_tensors(returned_cache(out))
        if layers[0][0].shape[2] != n_prefix + a_max + w:  # e.g. a sliding-window cache kept only the last N
            raise RuntimeError(f"the model's cache kept {layers[0][0].shape[2]} of {n_prefix + a_max + w} columns")
        done_rows, done_slots, done_items = [], [], []
        # where each finished row's own keys are in this pass's cache (its ancestors', then its leaf's) and where
        # they go in its slot (columns 1, 2, ...): one gather and one scatter per layer for the whole chunk
        src_item, src_col, dst_slot, dst_col = [], [], [], []
        total = n_prefix + a_max + w
        for j, (i, a) in enumerate(zip(items, depths)):
            n = len(stems[i].tokens)
            ancestors = slice(n_prefix + a_max - a, n_prefix + a_max)
            if stems[i].row is None:  # a stem: its ancestors' keys/values and its own, for the nodes below it
                stem_kv[i] = [(torch.cat([k[j, :, ancestors], k[j, :, -n:]], dim=1),
                               torch.cat([v[j, :, ancestors], v[j, :, -n:]], dim=1)) for k, v in layers]
                continue
            r, slot = fresh[stems[i].row]
            columns = [*range(ancestors.start, ancestors.stop), *range(total - n, total)]
            src_item += [j] * len(columns)
            src_col += columns
            dst_slot += [slot] * len(columns)
            dst_col += range(1, 1 + len(columns))
            done_rows.append(r)
            done_slots.append(slot)
            done_items.append(j)
        if done_rows:
            index = [self._long(x) for x in (src_item, src_col, dst_slot, dst_col)]
            for (keys, values), (k, v) in zip(self.cache.layers, layers):
                keys[index[2], :, index[3]] = k[index[0], :, index[1]]
                values[index[2], :, index[3]] = v[index[0], :, index[1]]
            logits = out.logits[done_items, -1].float()
            slots = torch.tensor(done_slots, device=self.device)
            self._start_rows(done_rows, slots, torch.ones_like(slots), logits)

    def _stem_past(self, parents: list[int | None], depths: list[int], a_max: int, stem_kv: dict):
        """The past of a chunk of tree nodes: the shared prefix, then each node's ancestors' keys/values,
        left-padded to the longest (the padding is zeros, masked)."""
        from transformers import DynamicCache

        n_prefix = self.prefix.length if self.prefix else 0
        if not n_prefix and not a_max:
            return None
        past = DynamicCache()
        for layer in range(self.config.num_hidden_layers):
            kv = []
            for which in (0, 1):  # keys, values
                like = self.cache.layers[layer][which]
                tensor = like.new_zeros(len(parents), like.shape[1], n_prefix + a_max, like.shape[3])
                if n_prefix:
                    tensor[:, :, :n_prefix] = self.prefix_kv[layer][which]  # [1, kv_heads, P, head_dim]
                for j, (parent, a) in enumerate(zip(parents, depths)):
                    if a:
                        tensor[j, :, n_prefix + a_max - a :] = stem_kv[parent][layer][which]
                kv.append(tensor)
            past.update(kv[0], kv[1], layer)
        return past

    def _restore(self, r: _Pending, slot: int) -> None:
        """A continued row: its keys/values into columns [1, 1 + n), its last token as the next input."""
        n = r.columns
        for (keys, values), (k, v) in zip(self.cache.layers, r.kv):
            keys[slot, :, 1 : 1 + n] = k
            values[slot, :, 1 : 1 + n] = v
        r.kv = None
        self.start[slot], self.end[slot], self.position[slot] = 1, 1 + n, r.position
        self.generated[slot], self.tokens[slot], self.state[slot] = len(r.produced), r.pending_token, ACTIVE
        self.limit[slot] = min(r.limit, self.max_new)

    def _pick(self, logits, generated):
        """Greedy tokens; EOS suppressed where the answer has fewer than ``min_new_tokens`` (``generated``: the
        answer's length before each logits row)."""
        torch = self.torch
        if self.min_new:
            early = generated < self.min_new
            logits[..., self.eos] = torch.where(early if isinstance(self.eos, int) else early[..., None],
                                                float("-inf"), logits[..., self.eos])
        # max, not argmax: the same first index of the largest value, ~1.7x faster on CPU at [rows, q, vocab]
        return logits.max(dim=-1).indices

    def _collect(self, done, overflow: list[_Pending]) -> None:
        """One host transfer: the tokens counted since the last check, and which rows finished or overflowed."""
        history = self.history[..., : self.bucket].reshape(-1, self.bucket).T.tolist()  # per slot, in order
        states = self.state[: self.bucket].tolist()
        self.history.fill_(-1)
        for s, (tokens, state) in enumerate(zip(history, states)):
            r = self.slot_row[s]
            if r is None:
                continue
            r.produced.extend(t for t in tokens if t >= 0)
            if state == FINISHED:
                done(r.index, r.produced)
                if self.answers is not None:
                    self.answers.add(r.produced)
                self._release(s)
            elif state == OVERFLOW:
                first, n = int(self.start[s]), int(self.end[s]) + 1  # columns start..end are filled
                r.kv = [(k[s, :, first:n].clone(), v[s, :, first:n].clone()) for k, v in self.cache.layers]
                r.columns = n - first
                r.position, r.pending_token = int(self.position[s]), int(self.tokens[s])
                overflow.append(r)
                self._release(s)

    def _release(self, slot: int) -> None:
        self.slot_row[slot] = None
        self.state[slot] = FREE
        self.tokens[slot], self.start[slot], self.end[slot] = self.pad, 0, 0

    def _maybe_shrink(self) -> None:
        """Nothing waiting: move live rows into the first slots, so that steps stop computing finished rows' slots.
        CUDA graphs: halve the table while at most half is live (a graph per power-of-two bucket). Without them
        (CPU): down to the live rows rounded up to `SHRINK_ROWS` (below that many, to the live rows), as soon as
        that is smaller."""
        live = sum(r is not None for r in self.slot_row[: self.bucket])
        if self.plan.cuda_graphs:
            target = self.bucket
            while target > 8 and live <= target // 2:
                target //= 2
        else:
            step = SHRINK_ROWS if live > SHRINK_ROWS else 1
            target = -(-live // step) * step
        if target < self.bucket:
            self._compact(target)

    def _compact(self, target: int) -> None:
        """Move the live rows of slots ``target..bucket`` into free slots below ``target``; the bucket is then
        ``target``."""
        torch = self.torch
        src = [s for s in range(target, self.bucket) if self.slot_row[s] is not None]
        dst = [s for s in range(target) if self.slot_row[s] is None][: len(src)]
        if src:
            si, di = torch.tensor(src, device=self.device), torch.tensor(dst, device=self.device)
            for keys, values in self.cache.layers:
                keys[di] = keys[si]
                values[di] = values[si]
            for t in (self.tokens, self.start, self.end, self.position, self.generated, self.limit, self.state):
                t[di] = t[si]
            for s, d in zip(src, dst):
                self.slot_row[d], self.slot_row[s] = self.slot_row[s], None
                self.state[s] = FREE
        self.bucket = target

    # -- device side -----------------------------------------------------------------------------------
    def _step(self, k: int) -> None:
        """One decode step for the current bucket, no host sync (graph-capturable on CUDA)."""
        b = self.bucket
        if self.plan.cuda_graphs:
            if self.lean is not None and LEAN_CHECKS.verdict(self.model, False) is None:
                self._step_eager(b, k)  # the lean forward's check reads the logits on the host: before any capture
                return
            graph = self.graphs.get(b)
            if graph is None:
                graph = self.graphs[b] = self._capture(b)
            if graph is not False:
                self.graph_k.fill_(k)
                graph.replay()
                return
        self._step_eager(b, k)

    def _step_eager(self, b: int, k: Any, drafts: Any = None) -> None:
        """One decode step of the first ``b`` slots. ``drafts`` (``[b, q]`` guessed tokens, -1 for none; host-synced
        path only): each row's next input is followed by its guesses, the model's own choice after each input is
        read, and the row keeps the guesses that match it plus the model's token after the last one kept (greedy:
        the same tokens as one per step). Every tensor op, no host sync: graph-capturable when ``drafts`` is None."""
        torch = self.torch
        state, end = self.state[:b], self.end[:b]
        active = state == ACTIVE
        inputs = self.tokens[:b, None]
        if drafts is not None:
            inputs = torch.cat([inputs, torch.where(drafts >= 0, drafts, self.pad)], dim=1)
        steps = self.offsets[: inputs.shape[1]]  # [q]: input j goes to column end + j, position + j
        # inactive slots (free, finished, set aside) write into scratch column 0 and read only it: their output is
        # never used, and a set-aside row's last column stays intact until it is copied
        write = torch.where(active[:, None], end[:, None] + steps, 0)  # [b, q]
        varlen = self.varlen and drafts is None
        if self.plan.check_every == 1 and not self.plan.cuda_graphs and not varlen:
            # CPU (a host check every step anyway): read only the columns some row has filled
            cols = int(write.max()) + 1
        else:
            cols = self.cache.layers[0][0].shape[2]  # CUDA graphs: fixed shapes; varlen: offsets into whole rows
        columns = self.columns[:cols]

        def mask():  # [b, 1, q, cols]: own columns up to each input's, causal among inputs
            return (((columns >= self.start[:b, None, None]) & (columns <= write[:, :, None]) & active[:, None, None])
                    | (columns == write[:, :, None]))[:, None]

        self.cache.bind(b, write if drafts is not None else write[:, 0], cols)
        extra = {"slot_columns": self._slot_columns(b, active, write[:, 0], cols)} if varlen else {}
        if self.cpu_kernel:  # the compiled kernel reads each input's columns as the mask allows them
            first, used = self._own_columns(b, active, write)
            extra = {"slot_columns": SlotColumns(None, None, used.to(torch.int32), cols, first=first.to(torch.int32))}
        positions = self.position[:b, None] + steps
        if drafts is not None:  # a row's missing guesses (-1) sit at its next input's position: never past its limit
            positions[:, 1:] = torch.where(drafts >= 0, positions[:, 1:], self.position[:b, None])
        logits = self._decode_logits(dict(input_ids=inputs, attention_mask=None, position_ids=positions,
                                          shared_prefix_kv=self.prefix_kv, **extra, **{self.cache_name: self.cache}),
                                     mask)
        picks = self._pick(logits.float(), self.generated[:b, None] + steps)  # [b, q]
        kept, counted, finished = accepted_tokens(picks, drafts, active, self.generated[:b], self.limit[:b],
                                                  self.eos)
        valid = kept + 1
        generated = self.generated[:b] + counted
        # the next step would write past the window: set the row aside (columns start..end + kept are filled)
        overflow = active & ~finished & (end + valid > self.plan.window)
        row = torch.where(steps < counted[:, None], picks, -1).T  # [q, b]
        if isinstance(k, int):
            self.history[k, : len(steps), :b] = row
        else:  # a step inside a CUDA graph: k is a device scalar; indexing with it would sync (`.item()`)
            self.history[:, :1, :b].index_copy_(0, k.view(1), row[None])
        going = active & ~finished
        self.tokens[:b] = torch.where(going, picks.gather(1, kept[:, None])[:, 0], self.tokens[:b])
        self.generated[:b] = generated
        self.end[:b] = torch.where(going, end + torch.where(overflow, kept, valid), end)
        self.position[:b] += torch.where(active, valid, 0)
        self.state[:b] = torch.where(finished, FINISHED, torch.where(overflow, OVERFLOW, state))

    def _slot_columns(self, b: int, active, write, width: int) -> SlotColumns:
        """Each row's own columns as the varlen kernels take them: where the row starts in the flattened table and
        how many columns it has filled (its start..this step's column; an inactive slot: its scratch column 0).
        Tensor ops only (graph-capturable)."""
        torch = self.torch
        first, used = self._own_columns(b, active, write)
        key_starts = self.row_base[: b + 1] + torch.nn.functional.pad(first, (0, 1))  # the last: the table's end
        return SlotColumns(self.query_starts[: b + 1], key_starts.to(torch.int32), used.to(torch.int32), width)

    def _own_columns(self, b: int, active, write):
        """Each row's first own column and how many columns from there each input reads: start..its column
        (``write``: ``[b]``, or ``[b, q]`` for a row's inputs); an inactive slot: its scratch column 0 alone. Tensor
        ops only (graph-capturable)."""
        torch = self.torch
        first = torch.where(active, self.start[:b], 0)
        per_input = (-1,) + (1,) * (write.dim() - 1)
        return first, torch.where(active.view(per_input), write - first.view(per_input) + 1, 1)

    def _decode_logits(self, inputs: dict, mask: Callable[[], Any]):
        """A decode step's logits: through the lean forward (`lean_decode`) once it has matched the model's own
        forward for this model, else through ``model(...)``. ``mask()``: the step's attention mask, built only
        where something reads it: not for a lean step through the compiled CPU kernel, which reads the rows'
        columns (``slot_columns``), as `shared_prefix_attention` does if the kernel fails then."""
        drafted = inputs["input_ids"].shape[1] > 1
        kernel_step = (self.cpu_kernel and self.lean is not None and LEAN_CHECKS.verdict(self.model, drafted)
                       and compiled_attention.available())
        if not kernel_step:
            inputs["attention_mask"] = mask()
        if self.lean is not None:
            if not LEAN_CHECKS.verdict(self.model, drafted):
                return self._check_lean(inputs, drafted)
            try:
                return self.lean(**inputs).logits
            except Exception as e:  # noqa: BLE001 - the model changed under it since its check
                if is_out_of_memory(e):
                    raise
                # this step again (its cache columns rewritten) and the rest through the model's own forward
                LEAN_CHECKS.record(self.model, drafted, False, f"the lean forward failed: {_first_line(e)}")
                self.lean = None
        if inputs["attention_mask"] is None:
            inputs["attention_mask"] = mask()
        return self.model(use_cache=True, **inputs).logits

    def _check_lean(self, inputs: dict, drafted: bool):
        """The first decode step of its kind (``drafted`` or not) served for a model: its lean forward and its own,
        compared bit for bit. The model's own runs second, so the cache holds its keys/values and this step its
        logits whatever the verdict."""
        try:
            lean, why = self.lean(**inputs).logits, "its logits differ from the model's own forward"
        except Exception as e:  # noqa: BLE001 - a module the lean forward cannot drive: the model's forward
            if is_out_of_memory(e):
                raise
            lean, why = None, f"the lean forward failed: {_first_line(e)}"
        logits = self.model(use_cache=True, **inputs).logits
        agreed = lean is not None and lean.shape == logits.shape and bool(self.torch.equal(lean, logits))
        LEAN_CHECKS.record(self.model, drafted, agreed, why)
        if not agreed:
            self.lean = None
        return logits

    def _step_with_drafts(self) -> None:
        """Host-synced path: one step, with each row's prompt-lookup guesses when `DraftPolicy` says they pay."""
        import time

        torch, b = self.torch, self.bucket
        if b > DRAFT_MAX_ROWS:  # too many rows for drafts to pay: a plain step, nothing to time
            self._step_eager(b, 0)
            return
        drafts = None
        if self.drafting.use_drafts(b):
            guesses = []
            for s in range(b):
                r = self.slot_row[s]
                if r is None:
                    guesses.append([])
                    continue
                if r.lookup is None:
                    r.lookup = PromptLookup.after(self.lookup, r.own)
                r.lookup.extend(r.produced[r.looked_up :])  # the row's last token is its next input
                r.looked_up = len(r.produced)
                # no guess past what the row may still add: it could not be kept, and its input would sit at a
                # position past the row's limit (past the model's context, for a row limited by it)
                room = r.limit - len(r.produced) - 1
                guesses.append(r.lookup.draft(min(self.plan.draft_tokens, room), self.answers) if room > 0 else [])
            width = max(map(len, guesses))
            if width:
                drafts = torch.tensor([g + [-1] * (width - len(g)) for g in guesses], device=self.device)
        before = int(self.generated[:b].sum())
        started = time.perf_counter()
        self._step_eager(b, 0, drafts)
        self.drafting.record(b, drafts is not None, time.perf_counter() - started,
                             int(self.generated[:b].sum()) - before)

    def _capture(self, b: int):
        """A CUDA graph of one decode step at bucket ``b`` (static inputs: the engine's own tensors); False when
        capture fails (the step then runs eagerly)."""
        torch = self.torch
        state = (self.tokens, self.end, self.position, self.generated, self.state, self.history)
        saved = [t.clone() for t in state]  # warm-up and capture run the step for real: put the state back after

        def restore() -> None:
            for t, s in zip(state, saved):
                t.copy_(s)

        try:
            if not hasattr(self, "graph_k"):
                self.graph_k = torch.zeros((), dtype=torch.long, device=self.device)
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            # Warm-up outside the graph (lazy inits, autotuning), with any host sync an error: a sync inside a
            # capture invalidates it and can leave CUDA state (the RNG's capture hooks) broken for later work, so
            # a step that syncs is found here and decoded eagerly instead.
            previous = torch.cuda.get_sync_debug_mode()
            with warnings.catch_warnings():  # "a prototype feature": said once per capture, to users, otherwise
                warnings.simplefilter("ignore", UserWarning)
                torch.cuda.set_sync_debug_mode("error")
            try:
                with torch.cuda.stream(stream):
                    for _ in range(2):
                        self._step_eager(b, self.graph_k)
            finally:
                torch.cuda.set_sync_debug_mode(previous)
            torch.cuda.current_stream().wait_stream(stream)
            restore()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._step_eager(b, self.graph_k)
            restore()
            return graph
        except Exception as e:  # noqa: BLE001 - an op that cannot be captured: eager steps, same results
            restore()  # a warm-up step that failed half-way leaves no trace
            import traceback

            where = "; ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}"
                              for f in traceback.extract_tb(e.__traceback__)[-4:])
            log.warning("CUDA graph capture failed at batch %d (%s; at %s); decoding eagerly", b,
                        _first_line(e), where)
            self.plan.cuda_graphs = False
            return False


def is_end(tokens, eos):
    """Where ``tokens`` are an end token: ``eos`` one id (int) or several (a tensor)."""
    import torch

    return tokens == eos if isinstance(eos, int) else torch.isin(tokens, eos)


def accepted_tokens(picks, drafts, active, generated, max_new, eos):
    """What one decode step adds to each row. ``picks``: ``[rows, q]`` the model's token after each input (the
    row's next token, then its ``drafts`` ``[rows, q - 1]``, -1 where none; None when q = 1). Returns ``kept``
    (leading drafts equal to the model's own choice: inputs 0..kept were the true answer, so picks 0..kept are
    valid), ``counted`` (answer tokens added: the valid picks up to the first EOS or ``max_new`` in all) and
    ``finished`` (EOS among the valid picks, or ``max_new`` reached; an int, or a tensor of each row's limit).
    Inactive rows add nothing."""
    import torch

    steps = torch.arange(picks.shape[1], device=picks.device)
    if drafts is None:
        kept = torch.zeros_like(generated)
    else:
        kept = (drafts == picks[:, :-1]).long().cumprod(dim=1).sum(dim=1)
    valid = kept + 1
    # an EOS past the valid picks (after a rejected draft) is not the answer's: both uses below compare with valid
    first_eos = torch.where(is_end(picks, eos), steps, picks.shape[1]).amin(dim=1)
    counted = torch.minimum(torch.minimum(first_eos, valid), max_new - generated)
    counted = torch.where(active, counted, 0)  # EOS is not an answer token
    finished = active & ((first_eos < valid) | (generated + counted >= max_new))
    return kept, counted, finished


@dataclass
class SlotColumns:
    """Where each row's own keys are for a length-aware (varlen) decode attention: the flattened table's rows
    ``[rows * width, kv_heads, dim]``; row b's queries are ``query_starts[b]:query_starts[b + 1]`` (one each), its
    keys the ``used[b]`` columns from ``key_starts[b]`` (int32, as the kernels take them)."""

    query_starts: Any
    key_starts: Any
    used: Any
    width: int
    #: the compiled CPU kernel's form (`cpu_attention`): input i of row b reads columns ``first[b]`` ..
    #: ``first[b] + used[b, i]`` of its own slot; ``width``: the columns the step reads at most (query/key_starts
    #: unused)
    first: Any = None


class SlotCache:
    """The cache object the model's attention layers update during a decode step: each row's new key/value go
    to that row's own column (``end``) of a preallocated table; the whole current bucket is returned."""

    def __init__(self, layers: list[tuple[Any, Any]]):
        self.layers = layers
        self.is_compileable = True
        self._bucket = len(layers[0][0]) if layers else 0
        self._cols = layers[0][0].shape[2] if layers else 0
        self._end = None
        self._rows = None
        self._rows_by_bucket: dict[int, Any] = {}  # fixed per bucket: CUDA graphs keep their addresses

    def bind(self, bucket: int, end: Any, cols: int) -> None:
        import torch

        if bucket not in self._rows_by_bucket:
            self._rows_by_bucket[bucket] = torch.arange(bucket, device=end.device)
        self._rows = self._rows_by_bucket[bucket]
        self._bucket, self._end, self._cols = bucket, end, cols

    def update(self, key_states, value_states, layer_idx: int, *_: Any, **__: Any):
        # the extra arguments (cache_kwargs before transformers 5.24, kwargs= from it) carry nothing this cache uses
        keys, values = self.layers[layer_idx]
        keys, values = keys[: self._bucket], values[: self._bucket]
        if self._end.dim() == 1:  # one input per row
            keys[self._rows, :, self._end] = key_states[:, :, 0]
            values[self._rows, :, self._end] = value_states[:, :, 0]
        else:  # [rows, q] columns: a row's next input and its drafts
            keys[self._rows[:, None], :, self._end] = key_states.transpose(1, 2)
            values[self._rows[:, None], :, self._end] = value_states.transpose(1, 2)
        return keys[:, :, : self._cols], values[:, :, : self._cols]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0

    def __len__(self) -> int:
        return len(self.layers)


def _free_device_cache(model: Any) -> None:
    import torch

    if next(model.parameters()).device.type == "cuda":
        torch.cuda.empty_cache()


# -- attention that reads the shared prefix once per step ------------------------------------------------
SLOT_ATTENTION = "radmetrics_slot_attention"


def shared_prefix_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                            shared_prefix_kv=None, slot_columns=None, **kwargs):
    """Decode attention over [shared prefix (one copy for the batch)] + [each row's own slots].

    The scores against the prefix are one matrix product for the whole batch instead of every row re-reading
    the same keys ("cascade" attention); one softmax runs over both parts as if the keys were contiguous.
    ``query``: ``[batch, heads, q, d]``, a row's next input and its drafts (q >= 1); ``attention_mask``:
    ``[batch, 1, q, slots]`` booleans (True = attend) over the own slots. The query heads that share a KV head
    run as that head's query "positions" (no GQA expansion copy of the keys). ``slot_columns``
    (`SlotColumns`, the engine's "varlen" decode attention, or the compiled CPU kernel's when its ``first`` is
    set): each row's own filled columns, read alone."""
    global _CUDNN_CASCADE, _VARLEN_ATTENTION
    import torch

    batch, heads, n_q, dim = query.shape
    kv_heads = key.shape[1]
    group = heads // kv_heads
    scale = scaling if scaling is not None else dim**-0.5
    prefix_kv = shared_prefix_kv[module.layer_idx] if shared_prefix_kv is not None else None
    if slot_columns is not None and slot_columns.first is not None:
        if compiled_attention.available():
            try:  # the compiled CPU kernel: each row's columns as the engine's mask allows them (`cpu_attention`)
                out = compiled_attention.cascade_decode_attention(query, key, value, prefix_kv, slot_columns.first,
                                                                  slot_columns.used, slot_columns.width, scale)
                return out.to(query.dtype), None
            except RuntimeError as e:  # shapes or a build it does not take: PyTorch's products, from now on
                compiled_attention.disable(_first_line(e))
        if attention_mask is None:  # a lean step builds no mask for the kernel: the same columns as one
            first = slot_columns.first.long()[:, None, None]
            counts = slot_columns.used.long().reshape(batch, n_q)[:, :, None]
            cols = torch.arange(key.shape[2], device=key.device)
            attention_mask = ((cols >= first) & (cols < first + counts))[:, None]  # [batch, 1, q, S]
    if attention_mask is None:  # no mask: causal (transformers' convention)
        cols = key.shape[2]
        causal = torch.ones(n_q, cols, dtype=torch.bool, device=query.device).tril(diagonal=cols - n_q)
        attention_mask = causal.expand(batch, 1, n_q, cols)
    allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
    allowed = allowed[:, :, -n_q:]  # [batch, 1, q, S]
    if slot_columns is not None and slot_columns.first is None and n_q == 1 and _VARLEN_ATTENTION is not False:
        try:
            return _varlen_cascade_attention(query, key, value, prefix_kv, slot_columns, scale), None
        except RuntimeError as e:  # a kernel this build or shape does not have: the masked paths, from now on
            _VARLEN_ATTENTION = False
            log.warning("length-aware decode attention unavailable (%s); attending over whole slot windows",
                        _first_line(e))
    if prefix_kv is not None and n_q == 1 and _use_cudnn_cascade(query, key, attention_mask):
        try:
            return _cudnn_cascade_attention(query, key, value, attention_mask, prefix_kv, scale), None
        except RuntimeError as e:  # a cuDNN build or shape it does not take: the matmul path below, from now on
            _CUDNN_CASCADE = False
            log.info("cuDNN attention unavailable for decode steps (%s); using matmul attention",
                     _first_line(e))
    # Products run in the model's dtype (on a GPU they accumulate in float32 inside the matmul; upcasting the
    # KV cache each step would triple its memory traffic); the query is scaled first so fp16 scores cannot
    # overflow; the softmax and the sum of the two value products run in float32.
    q = _grouped_query(query * scale, kv_heads)  # [batch, kv_heads, group*q, d]
    s_own = torch.matmul(q, key.transpose(2, 3)).float().masked_fill(~_grouped_mask(allowed, group), float("-inf"))
    if prefix_kv is None:
        out = torch.matmul(torch.softmax(s_own, dim=-1).to(value.dtype), value)
        return _ungrouped(out, heads, n_q).to(query.dtype), None
    prefix_keys, prefix_values = prefix_kv  # [1, kv_heads, P, d]
    rows_q = q.shape[2]
    # prefix scores: one [kv_heads, batch*group*q, d] x [kv_heads, d, P] product for the whole batch
    q_by_head = q.transpose(0, 1).reshape(kv_heads, batch * rows_q, dim)
    s_prefix = torch.matmul(q_by_head, prefix_keys[0].transpose(1, 2)).float()
    n_prefix = s_prefix.shape[-1]
    s_prefix = s_prefix.reshape(kv_heads, batch, rows_q, n_prefix).transpose(0, 1)
    # one softmax over both parts, as if the keys were contiguous
    p = torch.softmax(torch.cat([s_prefix, s_own], dim=-1), dim=-1).to(value.dtype)
    p_prefix = p[..., :n_prefix].transpose(0, 1).reshape(kv_heads, batch * rows_q, n_prefix)
    out = torch.matmul(p_prefix, prefix_values[0]).reshape(kv_heads, batch, rows_q, dim).transpose(0, 1)
    out = out.float() + torch.matmul(p[..., n_prefix:], value).float()
    return _ungrouped(out, heads, n_q).to(query.dtype), None


def _grouped_query(query, kv_heads: int):
    """``[batch, heads, q, d]`` -> ``[batch, kv_heads, group*q, d]``: each KV head's query heads and inputs as one
    run of queries (head h reads KV head h // group, as transformers' ``repeat_kv`` lays them out)."""
    batch, heads, n_q, dim = query.shape
    return query.reshape(batch, kv_heads, (heads // kv_heads) * n_q, dim)


def _grouped_mask(allowed, group: int):
    """``[batch, 1, q, S]`` -> the mask of `_grouped_query`'s layout (the same for every query head)."""
    batch, _, n_q, cols = allowed.shape
    if n_q == 1 or group == 1:
        return allowed
    return allowed[:, :, None].expand(batch, 1, group, n_q, cols).reshape(batch, 1, group * n_q, cols)


def _ungrouped(out, heads: int, n_q: int):
    """``[batch, kv_heads, group*q, d]`` -> ``[batch, q, heads, d]``, the layout attention modules expect."""
    batch, kv_heads, _, dim = out.shape
    return out.reshape(batch, heads, n_q, dim).transpose(1, 2)


#: None until tried; False once cuDNN attention failed in this process
_CUDNN_CASCADE: bool | None = None


def _use_cudnn_cascade(query, key, attention_mask) -> bool:
    """cuDNN's fused attention for the rows' own keys: CUDA, half precision, one KV head per query head (no GQA
    expansion copy), a boolean mask."""
    import torch

    return (_CUDNN_CASCADE is not False and query.is_cuda and query.dtype in (torch.float16, torch.bfloat16)
            and key.shape[1] == query.shape[1] and attention_mask is not None
            and attention_mask.dtype == torch.bool)


def _cudnn_cascade_attention(query, key, value, attention_mask, prefix_kv, scale):
    """Cascade attention with cuDNN's fused kernel for the own part: it returns the log-sum-exp of its scores, so
    its output merges exactly with the prefix part's (one matrix product for the whole batch) as one softmax over
    both. On an H100 (Llama-2-7B shape, 80 rows, 831 own + 223 prefix keys, bf16) one layer took 0.49 ms against
    0.70 ms for the matmul path; the kernel accumulates scores and the softmax in float32."""
    import torch

    batch, heads, _, dim = query.shape
    n_own = key.shape[2]
    # additive mask; the kernel wants its rows' stride a multiple of 16 elements, so the tensor is padded
    bias = torch.zeros(batch, 1, 1, (n_own + 15) // 16 * 16, dtype=query.dtype, device=query.device)[..., :n_own]
    bias.masked_fill_(~attention_mask[:, :, -1:, :], float("-inf"))
    result = torch.ops.aten._scaled_dot_product_cudnn_attention(
        query, key, value, bias.expand(batch, heads, 1, n_own), True, 0.0, False, False, scale=scale)
    out_own, lse_own = result[0].float(), result[1].reshape(batch, heads, -1)[..., :1, None].float()
    out = _merged(out_own, lse_own, *_prefix_part(query, prefix_kv, scale))
    return out.transpose(1, 2).to(query.dtype)  # [batch, 1, heads, d]


def _prefix_part(query, prefix_kv, scale):
    """The shared prefix's part of one decode step's attention: one product for the whole batch (each KV head's
    query heads of every row as one run of queries). Output ``[batch, heads, 1, d]`` and log-sum-exp
    ``[batch, heads, 1, 1]``, float32."""
    import torch

    batch, heads, _, dim = query.shape
    prefix_keys, prefix_values = prefix_kv  # [1, kv_heads, P, d]
    kv_heads = prefix_keys.shape[1]
    group = heads // kv_heads
    q = (query * scale).reshape(batch, kv_heads, group, dim).transpose(0, 1).reshape(kv_heads, batch * group, dim)
    s_prefix = torch.matmul(q, prefix_keys[0].transpose(1, 2)).float()  # [kv_heads, batch*group, P]
    lse = torch.logsumexp(s_prefix, -1)
    out = torch.matmul(torch.softmax(s_prefix, -1).to(prefix_values.dtype), prefix_values[0]).float()
    out = out.reshape(kv_heads, batch, group, dim).transpose(0, 1).reshape(batch, heads, 1, dim)
    return out, lse.reshape(kv_heads, batch, group).transpose(0, 1).reshape(batch, heads, 1, 1)


def _merged(out_own, lse_own, out_prefix, lse_prefix):
    """Two parts' attention outputs as one softmax over both parts' keys, from each part's log-sum-exp."""
    import torch

    top = torch.maximum(lse_own, lse_prefix)
    w_own, w_prefix = torch.exp(lse_own - top), torch.exp(lse_prefix - top)
    return (w_own * out_own + w_prefix * out_prefix) / (w_own + w_prefix)


#: None until tried; False once a length-aware kernel failed in this process
_VARLEN_ATTENTION: bool | None = None


def _varlen_cascade_attention(query, key, value, prefix_kv, columns: SlotColumns, scale):
    """Length-aware decode attention: each row's own keys are only its filled columns (``columns``), read by a
    kernel that takes per-row offsets and lengths into the flattened table, then merged with the prefix part by
    log-sum-exp. ``key``/``value``: the ``[batch, kv_heads, width, d]`` view of a table stored ``[rows, width,
    kv_heads, d]`` (`_SlotEngine`), so ``[batch * width, kv_heads, d]`` is a view, not a copy.

    CUDA fp16/bf16: PyTorch's flash attention (varlen, ``seqused_k``: only that many keys of a row are read).
    CUDA fp32: the memory-efficient kernel (``seqlen_k``; one KV head per query head). Elsewhere (CPU; fp32 with
    grouped KV heads): a masked product over the same offsets (no kernel takes them; it reads whole windows)."""
    import torch

    batch, heads, _, dim = query.shape
    kv_heads, width = key.shape[1], columns.width
    rows_k, rows_v = key.transpose(1, 2), value.transpose(1, 2)  # [batch, width, kv_heads, d]
    if not (rows_k.is_contiguous() and rows_v.is_contiguous()):
        raise RuntimeError("the slot table is not laid out [rows, width, kv_heads, dim]")
    flat_k, flat_v = rows_k.reshape(batch * width, kv_heads, dim), rows_v.reshape(batch * width, kv_heads, dim)
    q = query.reshape(batch, heads, dim)
    if query.is_cuda and query.dtype in (torch.float16, torch.bfloat16):
        result = torch.ops.aten._flash_attention_forward(
            q, flat_k, flat_v, columns.query_starts, columns.key_starts, 1, width, 0.0, False, False, scale=scale,
            seqused_k=columns.used)
        out, lse = result[0], result[1]  # [batch, heads, d]; [heads, batch]
    elif query.is_cuda and kv_heads == heads:  # the memory-efficient kernel has no grouped KV heads
        result = torch.ops.aten._efficient_attention_forward(
            q[None], flat_k[None], flat_v[None], None, columns.query_starts, columns.key_starts, 1, width, 0.0, 0,
            True, scale=scale, seqlen_k=columns.used)
        out, lse = result[0][0], result[1][:, :, 0].T  # [1, batch, heads, d]; [batch, heads, 32 (padded)]
    else:
        out, lse = _varlen_reference(q, flat_k, flat_v, columns, scale)
    out_own = out.float().reshape(batch, heads, 1, dim)
    lse_own = lse.float().T.reshape(batch, heads, 1, 1)
    if prefix_kv is not None:
        out_own = _merged(out_own, lse_own, *_prefix_part(query, prefix_kv, scale))
    return out_own.transpose(1, 2).to(query.dtype)  # [batch, 1, heads, d]


def _varlen_reference(q, flat_k, flat_v, columns: SlotColumns, scale):
    """What the varlen kernels compute, as masked products over the rows the offsets name: output ``[batch,
    heads, d]``, log-sum-exp ``[heads, batch]``."""
    import torch

    batch, heads, dim = q.shape
    kv_heads, width = flat_k.shape[1], columns.width
    keys = flat_k.reshape(batch, width, kv_heads, dim).transpose(1, 2)  # [batch, kv_heads, width, d]
    values = flat_v.reshape(batch, width, kv_heads, dim).transpose(1, 2)
    first = (columns.key_starts[:-1] - torch.arange(batch, device=q.device) * width)[:, None, None, None]
    cols = torch.arange(width, device=q.device)
    allowed = (cols >= first) & (cols < first + columns.used[:, None, None, None])  # [batch, 1, 1, width]
    grouped = (q * scale).reshape(batch, kv_heads, heads // kv_heads, dim)
    scores = torch.matmul(grouped, keys.transpose(2, 3)).float().masked_fill(~allowed, float("-inf"))
    out = torch.matmul(torch.softmax(scores, -1).to(values.dtype), values)  # [batch, kv_heads, group, d]
    return out.reshape(batch, heads, dim), torch.logsumexp(scores, -1).reshape(batch, heads).T


class _slot_attention:
    """Switch the model's attention to `shared_prefix_attention` for the decode steps, then back."""

    def __init__(self, model: Any):
        self.config = model.config.get_text_config(decoder=True)

    def __enter__(self):
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionInterface.register(SLOT_ATTENTION, shared_prefix_attention)
        AttentionMaskInterface.register(SLOT_ATTENTION, sdpa_mask)
        self.previous = self.config._attn_implementation
        self.config._attn_implementation = SLOT_ATTENTION

    def __exit__(self, *exc):
        self.config._attn_implementation = self.previous


def _prefill_chunks(lengths: list[int], budget: int, pass_cost: int = CPU_PASS_COST_TOKENS) -> list[list[int]]:
    """Row indices, longest first, in passes of at most ``budget`` tokens (rows x longest row): `_least_padding`."""
    return _least_padding(lengths, [0] * len(lengths), budget, sys.maxsize, pass_cost=pass_cost)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def is_out_of_memory(error: BaseException) -> bool:
    """A device out-of-memory (torch's OutOfMemoryError, or an error that says so), without importing torch."""
    return type(error).__name__ == "OutOfMemoryError" or "out of memory" in str(error).lower()


def _least_padding(lengths: list[int], depths: list[int], tokens: int, kv: int, prefix: int = 0,
                   pass_cost: int = CPU_PASS_COST_TOKENS) -> list[list[int]]:
    """Items (each ``lengths[i]`` new tokens on ``depths[i]`` ancestors' keys) in prefill passes: runs of the
    items sorted longest first, each padded to its first's length, cut where the fewest padding tokens plus
    ``pass_cost`` per pass results (dynamic programming over the cuts), each pass within ``tokens`` (rows x
    longest), ``kv`` (rows x (prefix + deepest + longest)) and `MAX_PASS_ROWS` rows; an item alone is always a
    pass. Filling passes greedily instead padded a 4-token leaf to 208 beside long ones (14% of a GREEN prefill
    was padding)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], -depths[i]))
    n = len(order)
    best = [0] + [float("inf")] * n  # best[j]: the cost of passes over the first j items of ``order``
    start = [0] * (n + 1)  # where the last pass of best[j] starts
    for j in range(1, n + 1):
        deepest = 0
        for i in range(j - 1, -1, -1):  # the last pass is order[i:j]; it widens as i falls
            width, rows = lengths[order[i]], j - i
            deepest = max(deepest, depths[order[i]])
            too_big = rows * width > tokens or rows * (prefix + deepest + width) > kv or rows > MAX_PASS_ROWS
            if rows > 1 and too_big:
                break
            cost = best[i] + pass_cost + rows * width
            if cost < best[j]:
                best[j], start[j] = cost, i
    passes: list[list[int]] = []
    while n:
        passes.append(order[start[n]:n])
        n = start[n]
    return passes[::-1]


def _depth(stems: list[StemNode], i: int) -> int:
    """Tokens of node ``i``'s ancestors."""
    total, parent = 0, stems[i].parent
    while parent is not None:
        total += len(stems[parent].tokens)
        parent = stems[parent].parent
    return total


def _layer_tensors(cache: Any) -> list[tuple[Any, Any]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def cache_argument(model: Any) -> str:
    """The name under which the model takes and returns its KV cache: transformers 5.24 renamed
    ``past_key_values`` to ``cache`` (the old name still works there, with a warning, until 5.40)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def returned_cache(output: Any) -> Any:
    """The KV cache a forward pass returned, under either name (see ``cache_argument``)."""
    return output["cache"] if "cache" in output.keys() else output.past_key_values


def _vocab(model: Any) -> int:
    return model.get_output_embeddings().weight.shape[0]
