"""The engine's decode-step forward without transformers' model-level wrappers, for Llama-shaped decoders.

Why: a small judge's decode step on a CPU is mostly per-call overhead, not arithmetic (BENCHMARKS.md, sessions 9
and 13). ``model(...)`` adds, every step, the output-capturing and kwargs-checking decorators, the mask
interface, config attribute lookups and two output dataclasses. Calling the model's own modules in the order
its ``forward`` does skips those: the natural benchmark's default run took 1.29 s against 1.40 s (best of 5,
interleaved, answers identical; session 15).

What it runs is what ``LlamaForCausalLM.forward`` -> ``LlamaModel.forward`` -> ``LlamaDecoderLayer.forward`` ->
``LlamaAttention.forward`` run (transformers ``models/llama/modeling_llama.py``), with the engine's attention
(`greedy_engine.shared_prefix_attention`, what the model's attention interface is switched to for decode
steps) called directly. The modules themselves are called (embedding, norms, projections, MLP, rotary
embedding), so adapters or quantised linear layers inside them still apply.

It is an optimisation, never a second model: only for transformers' own Llama and Mistral classes with nothing
added around the modules it skips (`lean_decoder`, asked at every engine start), and the engine compares its
logits with the model's own forward bit for bit on the first decode step of each kind (one input per row; drafts
after it) it serves for a model (`LeanCheck`); any difference or error and that model's steps go through
``model(...)`` from then on.
"""
from __future__ import annotations

import logging
import sys
import weakref
from types import SimpleNamespace
from typing import Any

log = logging.getLogger(__name__)

#: ``config.model_type`` of the decoders whose layer is Llama's (pre-norm, q/k/v projections, rotary embedding,
#: attention, o projection, residual, post-attention norm, MLP, residual; Mistral's modeling file is Llama's) ->
#: the prefix of their classes' names in transformers
LEAN_MODEL_TYPES = {"llama": "Llama", "mistral": "Mistral"}


class LeanDecoder:
    """``__call__`` takes the keyword arguments the engine gives ``model(...)`` for a decode step and returns an
    object with ``.logits``, as ``model(...)`` does."""

    def __init__(self, model: Any, attention: Any):
        self.model = model
        self.body = model.model
        self.attention = attention
        # the rotary function the attention module's own forward calls (a module global)
        self.rotate = sys.modules[type(self.body.layers[0].self_attn).__module__].apply_rotary_pos_emb

    def __call__(self, *, input_ids, attention_mask, position_ids, shared_prefix_kv=None, slot_columns=None,
                 **kwargs: Any):
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        body = self.body
        hidden = body.embed_tokens(input_ids)
        cos, sin = body.rotary_emb(hidden, position_ids)
        for layer in body.layers:
            attn = layer.self_attn
            residual = hidden
            x = layer.input_layernorm(hidden)
            shape = (*x.shape[:-1], -1, attn.head_dim)
            query = attn.q_proj(x).view(shape).transpose(1, 2)
            key = attn.k_proj(x).view(shape).transpose(1, 2)
            value = attn.v_proj(x).view(shape).transpose(1, 2)
            query, key = self.rotate(query, key, cos, sin)
            key, value = cache.update(key, value, attn.layer_idx)
            out, _ = self.attention(attn, query, key, value, attention_mask, scaling=attn.scaling,
                                    shared_prefix_kv=shared_prefix_kv, slot_columns=slot_columns)
            hidden = residual + attn.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())
            residual = hidden
            hidden = residual + layer.mlp(layer.post_attention_layernorm(hidden))
        return SimpleNamespace(logits=self.model.lm_head(body.norm(hidden)))


def lean_decoder(model: Any, attention: Any) -> LeanDecoder | None:
    """A `LeanDecoder` for ``model`` when it is, as it stands now, transformers' own Llama or Mistral: the stock
    classes for the model, its body, every layer and attention (not a subclass, not remote code), with nothing
    the lean forward would skip: no forward replaced on those modules (accelerate's hooks replace it), no hooks on
    them or global ones, every configured layer present. Asked at every engine start, so a hook added after a
    first run is seen. None otherwise: the model's own forward is used."""
    import torch

    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in LEAN_MODEL_TYPES:
        return None
    classes = _stock_classes(model_type)
    body = getattr(model, "model", None)
    if classes is None or type(model) is not classes[0] or type(body) is not classes[1]:
        return None
    layers = list(body.layers)
    if not layers or len(layers) != config.num_hidden_layers:
        return None
    skipped = [model, body, *layers, *(layer.self_attn for layer in layers)]
    if any(type(layer) is not classes[2] or type(layer.self_attn) is not classes[3] for layer in layers):
        return None
    if any("forward" in vars(m) or m._forward_hooks or m._forward_pre_hooks for m in skipped):
        return None
    hooks = torch.nn.modules.module
    if hooks._global_forward_hooks or hooks._global_forward_pre_hooks:
        return None
    return LeanDecoder(model, attention)


def _stock_classes(model_type: str) -> tuple | None:
    """transformers' (ForCausalLM, Model, DecoderLayer, Attention) classes for ``model_type``."""
    import importlib

    prefix = LEAN_MODEL_TYPES[model_type]
    try:
        module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
        return tuple(getattr(module, prefix + name) for name in ("ForCausalLM", "Model", "DecoderLayer", "Attention"))
    except (ImportError, AttributeError):
        return None


class LeanCheck:
    """Per model (weakly held) and kind of step (one input per row, or drafts after it): None until its lean
    forward was compared with its own, then whether they agreed. One disagreement and the model is not offered
    the lean forward again."""

    def __init__(self):
        self._verdicts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def verdict(self, model: Any, drafted: bool) -> bool | None:
        return self._verdicts.get(model, {}).get(drafted)

    def refused(self, model: Any) -> bool:
        return False in self._verdicts.get(model, {}).values()

    def record(self, model: Any, drafted: bool, agreed: bool, why: str = "") -> None:
        self._verdicts.setdefault(model, {})[drafted] = agreed
        if not agreed:
            log.info("decode steps go through the model's own forward (%s)", why)


#: the verdicts for the process: a check costs one extra forward, once per model and kind of step
LEAN_CHECKS = LeanCheck()
