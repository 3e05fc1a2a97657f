"""How a prompt becomes model input for in-process backends (transformers, vLLM).

GREEN's published models were trained and are run with their own chat template over messages in the
`from`/`value` schema, with an empty assistant turn before the generation prompt, and a tokenizer loaded
with `add_eos_token=True` (Stanford-AIMI/GREEN green_score/green.py, `GREEN.__init__` and
`get_response`). We reproduce that input exactly for GREEN models.
"""
from __future__ import annotations

from typing import Any

# Byte-identical to Stanford-AIMI/GREEN green_score/green.py (`chat_template = ...`).
GREEN_CHAT_TEMPLATE = "{% for message in messages %}\n{% if message['from'] == 'human' %}\n{{ '<|user|>\n' + message['value'] + eos_token }}\n{% elif message['from'] == 'system' %}\n{{ '<|system|>\n' + message['value'] + eos_token }}\n{% elif message['from'] == 'gpt' %}\n{{ '<|assistant|>\n'  + message['value'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"  # noqa: E501

CHAT_FORMATS = ("auto", "green", "tokenizer", "none")


def resolve_chat_format(chat_template: str, model_name: str | None, tokenizer: Any) -> str:
    """'auto' picks GREEN's format for GREEN models, else the tokenizer's template, else raw text."""
    if chat_template != "auto":
        return chat_template
    if model_name and "green" in model_name.lower():
        return "green"
    if getattr(tokenizer, "chat_template", None):
        return "tokenizer"
    return "none"


def render(prompt: str, chat_format: str, tokenizer: Any) -> tuple[str, bool]:
    """The model input text and whether an EOS token is appended after encoding (GREEN's add_eos_token)."""
    if chat_format == "green":
        messages = [{"from": "human", "value": prompt}, {"from": "gpt", "value": ""}]
        text = tokenizer.apply_chat_template(
            messages, chat_template=GREEN_CHAT_TEMPLATE, tokenize=False, add_generation_prompt=True
        )
        return text, True
    if chat_format == "tokenizer":
        messages = [{"role": "user", "content": prompt}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True), False
    if chat_format == "none":
        return prompt, False
    # Any other string is a Jinja chat template given by the user, over role/content messages.
    messages = [{"role": "user", "content": prompt}]
    return tokenizer.apply_chat_template(messages, chat_template=chat_format, tokenize=False,
                                         add_generation_prompt=True), False


def encode_prompt(prompt: str, chat_format: str, tokenizer: Any) -> list[int]:
    """Token ids an in-process backend feeds the model: the rendered chat text, plus GREEN's EOS."""
    return encode_prompts([prompt], chat_format, tokenizer)[0]


def encode_prompts(prompts: list[str], chat_format: str, tokenizer: Any) -> list[list[int]]:
    """`encode_prompt` for many prompts in one tokenizer call (a fast tokenizer encodes a batch in parallel:
    96 GREEN prompts took 0.04 s against 0.07 s one by one on 2 cores)."""
    rendered = [render(p, chat_format, tokenizer) for p in prompts]
    if not rendered:
        return []
    encoded = tokenizer([text for text, _ in rendered], add_special_tokens=True)["input_ids"]
    out = []
    for ids, (_, append_eos) in zip(encoded, rendered):
        if append_eos and (not ids or ids[-1] != tokenizer.eos_token_id):
            ids = ids + [tokenizer.eos_token_id]
        out.append(ids)
    return out


def render_text(prompt: str, chat_format: str, eos_token: str = "</s>") -> str:
    """The model input as text, without a tokenizer (for lm-eval tasks, which send text to the model).

    "green" renders GREEN's template with Jinja as transformers does (trim_blocks, lstrip_blocks) and
    appends the EOS that upstream's add_eos_token=True adds; "none" returns the prompt unchanged (use
    lm-eval's --apply_chat_template for instruction models)."""
    if chat_format == "none":
        return prompt
    if chat_format != "green":
        raise ValueError(f"chat_format must be 'green' or 'none' here, not {chat_format!r}")
    import jinja2

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    messages = [{"from": "human", "value": prompt}, {"from": "gpt", "value": ""}]
    text = env.from_string(GREEN_CHAT_TEMPLATE).render(messages=messages, eos_token=eos_token,
                                                       add_generation_prompt=True)
    return text + eos_token
