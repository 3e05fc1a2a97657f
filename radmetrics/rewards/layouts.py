"""Where the judge runs during RL training: in the trainer's process, sharing the policy's GPU under a memory
cap, or behind an OpenAI-compatible server (vLLM on another GPU) reached with bounded concurrency and retries.

The cap is turned into the judge's own batch budget: in-process judges otherwise size their batches for a GPU
of their own and would take the memory the policy needs for its next step.
"""
from __future__ import annotations

from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.types import is_finite_number

GIB = 2**30
#: share of the cap kept for activations (prefill chunks, logits), the allocator and the shared prefix
HEADROOM = 0.15
_DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """Bytes of KV cache one token takes: keys and values of every layer (GQA: only the KV heads)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    return 2 * text.num_hidden_layers * kv_heads * head_dim * dtype_bytes


def weight_bytes(config: Any, dtype_bytes: int) -> int:
    """Weights of a Llama-style decoder from its config (attention, gated MLP, embeddings, untied head)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, heads = text.hidden_size, text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    mlp = 3 * hidden * text.intermediate_size
    embeddings = text.vocab_size * hidden * (1 if getattr(config, "tie_word_embeddings", False) else 2)
    return (text.num_hidden_layers * (attention + mlp) + embeddings) * dtype_bytes


def memory_capped_options(backend: str, model: str | None, gib: float, options: dict[str, Any] | None = None
                          ) -> dict[str, Any]:
    """Judge options that keep an in-process judge within `gib` GiB of GPU memory.

    transformers: max_batch_tokens = (cap x (1 - HEADROOM) - weights) / KV bytes per token, so that a batch's
    KV cache (prompt + new tokens of every row) fits beside the weights. vllm: gpu_memory_utilization = cap /
    the GPU's memory (vLLM sizes its KV cache from that share).
    """
    options = options or {}
    # nan passed "gib <= 0": vllm then got min(0.95, nan) = 0.95 of the GPU the policy shares, transformers a
    # ValueError traceback (int(nan)); inf an OverflowError
    if not is_finite_number(gib) or gib <= 0:
        raise RadmetricsError(f"judge_memory_gib must be a positive finite number, not {gib!r}")
    if backend == "vllm":
        import torch

        if not torch.cuda.is_available():
            raise RadmetricsError("judge_memory_gib with the vllm backend needs a CUDA GPU")
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        return {"gpu_memory_utilization": round(min(0.95, gib * GIB / total), 3)}
    if backend != "transformers":
        raise RadmetricsError(f"judge_memory_gib applies to in-process judges (transformers, vllm), not to "
                              f"the {backend!r} backend; a server's memory is set where it is started")
    if not model:
        raise RadmetricsError("judge_memory_gib needs the judge model (judge=...) to size its batches")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model, revision=options.get("revision"),
                                            trust_remote_code=bool(options.get("trust_remote_code", False)))
    except OSError as e:
        raise RadmetricsError(f"Could not read the judge's config {model!r} to size it to "
                              f"{gib} GiB: {e}") from e
    dtype = str(options.get("dtype", "auto"))
    dtype_bytes = _DTYPE_BYTES.get(dtype, 2)  # auto: bf16 on a GPU
    weights = weight_bytes(config, dtype_bytes)
    budget = gib * GIB * (1 - HEADROOM) - weights
    per_token = kv_bytes_per_token(config, dtype_bytes)
    if budget < per_token * 2048:
        raise RadmetricsError(f"judge_memory_gib={gib} is too small for {model}: its weights take "
                              f"{weights / GIB:.2f} GiB and a batch needs KV room for a few thousand tokens "
                              f"({per_token * 2048 / GIB:.2f} GiB for 2048)")
    return {"max_batch_tokens": int(budget // per_token)}
