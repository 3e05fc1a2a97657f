"""Greedy decoding without `generate`: bucketed prefill into one preallocated KV cache, then a lean decode loop.

Why not `model.generate` for the decode: at the batch sizes judging runs at, generate re-concatenates the KV cache
of every layer at every step (DynamicCache grows by `torch.cat`), runs its logits-processor and stopping-criteria
stack per token, and must pad every prompt of the batch to the longest. Here:

* **prefill** runs in chunks of similar length (prompts sorted by length, a token budget per chunk), so almost no
  padding is computed; the shared prefix (the scoring system's instructions, computed once per call by the
  caller) is never recomputed, and only the last position's logits are taken;
* every chunk's own keys/values are copied into **one static cache** per decode batch, laid out as
  ``[padding][own tokens][generated]`` with explicit position ids, so each row's real tokens keep the positions
  (hence RoPE angles) they would have alone: the same answers as plain left padding;
* the **decode loop** writes one slot per step in place (no re-allocation), reads the shared prefix once per step
  for the whole batch (`shared_prefix_attention`), takes the argmax, and drops rows as they finish, so long
  answers do not keep short ones' slots busy.

Greedy semantics match `generate(do_sample=False, min_new_tokens=m, max_new_tokens=n)` with one EOS id: the EOS
logit is suppressed until m new tokens exist, a row stops at EOS, and its remaining tokens are padding.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass
class SharedPrefix:
    """KV cache (a transformers DynamicCache of batch 1) of the first ``length`` tokens every prompt shares."""

    cache: Any
    length: int


def supports_engine(model: Any) -> bool:
    """True when this model can run on the engine: a decoder whose cache is the modern transformers Cache API
    (static layers filled in place) and whose generation config alters no logits under greedy decoding."""
    try:
        from transformers.cache_utils import StaticCache, StaticLayer
    except ImportError:
        return False
    if not hasattr(StaticLayer(max_cache_len=1), "cumulative_length") or not hasattr(StaticCache, "early_initialization"):
        return False  # older transformers: the cache API differs; use generate
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
    return getattr(model.config, "is_encoder_decoder", False) is False


def greedy_generate(
    model: Any,
    rows: list[list[int]],
    *,
    max_new_tokens: int,
    min_new_tokens: int = 0,
    eos_token_id: int,
    pad_token_id: int,
    prefix: SharedPrefix | None = None,
    prefill_chunk_tokens: int = 2048,
) -> list[list[int]]:
    """New token ids for each row (EOS and what follows it removed), greedy. ``rows`` are full prompts;
    when ``prefix`` is given every row starts with its ``length`` tokens."""
    import torch

    device = next(model.parameters()).device
    n_prefix = prefix.length if prefix else 0
    own = [r[n_prefix:] for r in rows]
    batch, width = len(rows), max(len(o) for o in own)
    # The decode cache holds each row's own slots only, [padding][own tokens][generated]; the shared prefix
    # stays in one copy that the decode attention reads once per step for the whole batch.
    cache = _static_cache(model, batch, width + max_new_tokens, device)
    mask = torch.ones(batch, width + max_new_tokens, dtype=torch.long, device=device)
    for b, o in enumerate(own):
        mask[b, : width - len(o)] = 0
    next_position = torch.tensor([n_prefix + len(o) for o in own], device=device)

    first_logits = torch.empty(batch, _vocab_size(model), dtype=torch.float32, device=device)
    with torch.inference_mode():
        for chunk in _prefill_chunks([len(o) for o in own], prefill_chunk_tokens):
            w = max(len(own[b]) for b in chunk)
            ids, chunk_mask, positions = [], [], []
            for b in chunk:
                pad = w - len(own[b])
                ids.append([pad_token_id] * pad + own[b])
                chunk_mask.append([1] * n_prefix + [0] * pad + [1] * len(own[b]))
                positions.append([n_prefix] * pad + list(range(n_prefix, n_prefix + len(own[b]))))
            past = None
            if prefix:
                past = copy.deepcopy(prefix.cache)
                past.batch_repeat_interleave(len(chunk))
            out = model(input_ids=torch.tensor(ids, device=device),
                        attention_mask=torch.tensor(chunk_mask, device=device),
                        position_ids=torch.tensor(positions, device=device),
                        past_key_values=past, use_cache=True, logits_to_keep=1)
            index = torch.tensor(chunk, device=device)
            for layer, (keys, values) in zip(cache.layers, _layer_tensors(out.past_key_values)):
                # the chunk's own slots land right-aligned before the generated slots
                layer.keys[index, :, width - w : width] = keys[:, :, n_prefix:]
                layer.values[index, :, width - w : width] = values[:, :, n_prefix:]
            first_logits[index] = out.logits[:, -1].float()
            del out, past

        for layer in cache.layers:
            layer.cumulative_length.fill_(width)
        step_kwargs = {}
        if prefix:
            step_kwargs["shared_prefix_kv"] = _layer_tensors(prefix.cache)
        with _shared_prefix_attention(model, enabled=prefix is not None):
            return _decode(model, cache, first_logits, mask, next_position, max_new_tokens, min_new_tokens,
                           eos_token_id, step_kwargs)


def _decode(model, cache, logits, mask, next_position, max_new_tokens, min_new_tokens, eos_token_id, step_kwargs):
    import torch

    first_free = int(cache.layers[0].cumulative_length)
    # With the shared-prefix attention the mask goes in ready-made ([batch, 1, 1, slots], True = attend), so
    # no causal mask is rebuilt per step: that attention reads only filled slots, all before the query.
    step_mask = mask[:, None, None, :].bool() if step_kwargs else mask
    batch = logits.shape[0]
    produced: list[list[int]] = [[] for _ in range(batch)]
    alive = torch.arange(batch, device=logits.device)  # original row of each live batch slot
    for step in range(max_new_tokens):
        if step < min_new_tokens:
            logits[:, eos_token_id] = float("-inf")
        tokens = logits.argmax(dim=-1)
        finished = tokens == eos_token_id
        for row, token in zip(alive.tolist(), tokens.tolist()):
            if token != eos_token_id:
                produced[row].append(token)
        if step == max_new_tokens - 1:
            break
        if bool(finished.any()):
            keep = (~finished).nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            # Finished rows leave the batch now; cheap next to a step once a few have finished.
            alive, tokens, step_mask, next_position = alive[keep], tokens[keep], step_mask[keep], next_position[keep]
            for layer in cache.layers:
                layer.keys = layer.keys.index_select(0, keep)
                layer.values = layer.values.index_select(0, keep)
        if step_kwargs:
            step_kwargs["own_slots"] = first_free + step + 1  # filled after this step's write
        out = model(input_ids=tokens[:, None], attention_mask=step_mask, position_ids=next_position[:, None],
                    past_key_values=cache, use_cache=True, **step_kwargs)
        logits = out.logits[:, -1].float()
        next_position = next_position + 1
    return produced


# -- attention that reads the shared prefix once per step ------------------------------------------------
SHARED_PREFIX_ATTENTION = "radmetrics_shared_prefix"


def shared_prefix_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                            shared_prefix_kv=None, own_slots=None, **kwargs):
    """Decode attention over [shared prefix (one copy for the batch)] + [each row's own cache].

    The scores against the prefix are one matrix product for the whole batch instead of every row re-reading
    the same keys ("cascade" attention); one softmax runs over both parts as if the keys were contiguous.
    Used for single-token steps; anything else goes to PyTorch SDPA unchanged."""
    import torch

    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if shared_prefix_kv is None or query.shape[2] != 1:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    prefix_keys, prefix_values = shared_prefix_kv[module.layer_idx]  # [1, kv_heads, P, d]
    if own_slots is not None:  # a static cache: slots past the current step are empty, skip reading them
        key, value = key[:, :, :own_slots], value[:, :, :own_slots]
        if attention_mask is not None:
            attention_mask = attention_mask[..., :own_slots]
    batch, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    group = heads // kv_heads
    scale = scaling if scaling is not None else dim**-0.5
    # Products run in the model's dtype and the softmax in float32, as transformers' eager attention does (on a
    # GPU, upcasting the whole KV cache each step would triple its memory traffic); fp32 models: all fp32.
    q = query.reshape(batch, kv_heads, group, dim)  # query heads grouped by the KV head they read

    # prefix scores: one [kv_heads, batch*group, d] x [kv_heads, d, P] product for the whole batch
    q_by_head = q.transpose(0, 1).reshape(kv_heads, batch * group, dim)
    s_prefix = torch.matmul(q_by_head, prefix_keys[0].transpose(1, 2))
    n_prefix = s_prefix.shape[-1]
    s_prefix = s_prefix.reshape(kv_heads, batch, group, n_prefix).transpose(0, 1)
    # own scores: [batch, kv_heads, group, d] x [batch, kv_heads, d, S], masked
    s_own = torch.matmul(q, key.transpose(2, 3))
    if attention_mask is not None:
        allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
        s_own = s_own.masked_fill(~allowed[:, :, -1:, :], float("-inf"))  # [batch, 1, 1, S] over all heads
    # one softmax over both parts, as if the keys were contiguous
    p = torch.softmax(torch.cat([s_prefix, s_own], dim=-1) * scale, dim=-1, dtype=torch.float32).to(value.dtype)
    p_prefix = p[..., :n_prefix].transpose(0, 1).reshape(kv_heads, batch * group, n_prefix)
    out = torch.matmul(p_prefix, prefix_values[0]).reshape(kv_heads, batch, group, dim).transpose(0, 1)
    out = out + torch.matmul(p[..., n_prefix:], value)
    # [batch, kv_heads, group, d] -> [batch, 1, heads, d], the layout attention modules expect
    return out.reshape(batch, 1, heads, dim).to(query.dtype), None


class _shared_prefix_attention:
    """Switch the model's attention to `shared_prefix_attention` for the decode steps, then back."""

    def __init__(self, model: Any, enabled: bool):
        self.config = model.config.get_text_config(decoder=True) if enabled else None

    def __enter__(self):
        if self.config is None:
            return
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionInterface.register(SHARED_PREFIX_ATTENTION, shared_prefix_attention)
        AttentionMaskInterface.register(SHARED_PREFIX_ATTENTION, sdpa_mask)
        self.previous = self.config._attn_implementation
        self.config._attn_implementation = SHARED_PREFIX_ATTENTION

    def __exit__(self, *exc):
        if self.config is not None:
            self.config._attn_implementation = self.previous


def _prefill_chunks(lengths: list[int], budget: int) -> list[list[int]]:
    """Row indices sorted by length, grouped so that rows x longest row stays within ``budget`` tokens."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    chunks: list[list[int]] = []
    for i in order:
        if chunks and (len(chunks[-1]) + 1) * lengths[chunks[-1][0]] <= budget:
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def _static_cache(model: Any, batch: int, length: int, device: Any) -> Any:
    from transformers.cache_utils import StaticCache

    config = model.config.get_text_config(decoder=True)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    cache = StaticCache(config=config, max_cache_len=length)
    cache.early_initialization(batch, kv_heads, head_dim, next(model.parameters()).dtype, device)
    return cache


def _layer_tensors(cache: Any) -> list[tuple[Any, Any]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def _vocab_size(model: Any) -> int:
    return model.get_output_embeddings().weight.shape[0]
