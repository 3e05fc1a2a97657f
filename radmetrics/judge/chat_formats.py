"""How a prompt becomes model input for in-process backends (transformers, vLLM).

GREEN's published models were trained and are run with their own chat template over messages in the
`from`/`value` schema, with an empty assistant turn before the generation prompt, and a tokenizer loaded
with `add_eos_token=True` (Stanford-AIMI/GREEN green_score/green.py, `GREEN.__init__` and
`get_response`). We reproduce that input exactly for GREEN models.
"""
from __future__ import annotations

import functools
import logging
from typing import Any

from radmetrics.conversation import as_messages, flatten, system_into_first_user

log = logging.getLogger(__name__)

# Byte-identical to Stanford-AIMI/GREEN green_score/green.py (`chat_template = ...`).
GREEN_CHAT_TEMPLATE = "{% for message in messages %}\n{% if message['from'] == 'human' %}\n{{ '<|user|>\n' + message['value'] + eos_token }}\n{% elif message['from'] == 'system' %}\n{{ '<|system|>\n' + message['value'] + eos_token }}\n{% elif message['from'] == 'gpt' %}\n{{ '<|assistant|>\n'  + message['value'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"  # noqa: E501

CHAT_FORMATS = ("auto", "green", "tokenizer", "none")


#: a judge's identity carries this with chat_template "auto": bumped when what "auto" picks changes, so answers
#: cached under the old rules are not served for inputs rendered under the new ones (2: GREEN prompts get
#: GREEN's format whatever the model)
AUTO_RULES = 2


def resolve_chat_format(chat_template: str, model_name: str | None, tokenizer: Any) -> str:
    """A model's format for prompts in general. 'auto' picks GREEN's format for GREEN models (the name says
    GREEN, or the tokenizer carries GREEN's template, as judges trained by `radmetrics train judge --recipe
    green` do), else the tokenizer's template, else raw text."""
    if chat_template != "auto":
        return chat_template
    if model_name and "green" in model_name.lower():
        return "green"
    template = getattr(tokenizer, "chat_template", None)
    if template == GREEN_CHAT_TEMPLATE:
        return "green"
    if template:
        return "tokenizer"
    return "none"


def is_green_prompt(prompt: str) -> bool:
    """A GREEN prompt (radmetrics.green.prompt: upstream's text, byte for byte)."""
    from radmetrics.green.prompt import GREEN_HEAD

    return prompt.startswith(GREEN_HEAD)


def prompt_formats(prompts: list[str], chat_template: str, model_format: str) -> list[str]:
    """Each prompt's format. Under 'auto' a GREEN prompt is rendered in GREEN's format whatever the model:
    upstream GREEN sets its own template on every model it loads (green_score/green.py, `GREEN.__init__`), so a
    GREEN judge in a folder whose name does not say GREEN still reads its prompts as trained; other prompts get
    the model's format (`resolve_chat_format`). A format named explicitly applies to every prompt."""
    if chat_template != "auto" or model_format == "green":
        return [model_format] * len(prompts)
    return ["green" if is_green_prompt(p) else model_format for p in prompts]


_SYSTEM_REFUSED_SAID: list[bool] = []

#: GREEN's template names roles in the `from` schema
_GREEN_ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


def _green_messages(prompt: str) -> list[dict[str, str]]:
    """A prompt's messages in GREEN's schema, with upstream's empty assistant turn last."""
    return [{"from": _GREEN_ROLES[m["role"]], "value": m["content"]} for m in as_messages(prompt)] + [
        {"from": "gpt", "value": ""}]


def render(prompt: str, chat_format: str, tokenizer: Any) -> tuple[str, bool]:
    """The model input text and whether an EOS token is appended after encoding (GREEN's add_eos_token).
    A conversation prompt (radmetrics.conversation) is rendered as its messages; a plain one as one user
    message."""
    if chat_format == "green":
        text = tokenizer.apply_chat_template(
            _green_messages(prompt), chat_template=GREEN_CHAT_TEMPLATE, tokenize=False, add_generation_prompt=True
        )
        return text, True
    if chat_format == "none":
        return flatten(prompt), False
    # the tokenizer's own template, or a Jinja chat template given by the user, over role/content messages
    template = None if chat_format == "tokenizer" else chat_format
    messages = as_messages(prompt)
    try:
        return tokenizer.apply_chat_template(messages, chat_template=template, tokenize=False,
                                             add_generation_prompt=True), False
    except Exception as e:  # noqa: BLE001 - jinja's TemplateError: e.g. "System role not supported"
        if messages[0]["role"] != "system":
            raise
        if not _SYSTEM_REFUSED_SAID:  # once a process: every prompt of the run takes this path
            _SYSTEM_REFUSED_SAID.append(True)
            log.warning("the model's chat template refused a system message (%s): its text opens the first user "
                        "turn instead", str(e).splitlines()[0] if str(e) else type(e).__name__)
        return tokenizer.apply_chat_template(system_into_first_user(messages), chat_template=template,
                                             tokenize=False, add_generation_prompt=True), False


def encode_prompt(prompt: str, chat_format: str, tokenizer: Any) -> list[int]:
    """Token ids an in-process backend feeds the model: the rendered chat text, plus GREEN's EOS."""
    return encode_prompts([prompt], chat_format, tokenizer)[0]


def encode_prompts(prompts: list[str], chat_format: str | list[str], tokenizer: Any) -> list[list[int]]:
    """`encode_prompt` for many prompts in one tokenizer call (a fast tokenizer encodes a batch in parallel:
    96 GREEN prompts took 0.04 s against 0.07 s one by one on 2 cores); ``chat_format``: one for all, or one per
    prompt (`prompt_formats`)."""
    formats = [chat_format] * len(prompts) if isinstance(chat_format, str) else chat_format
    rendered = [render(p, f, tokenizer) for p, f in zip(prompts, formats)]
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
    appends the EOS that upstream's add_eos_token=True adds; "none" returns the prompt unchanged, a
    conversation as its messages' text (`conversation.flatten`) (use
    lm-eval's --apply_chat_template for instruction models)."""
    if chat_format == "none":
        return flatten(prompt)
    if chat_format != "green":
        raise ValueError(f"chat_format must be 'green' or 'none' here, not {chat_format!r}")
    text = _green_template().render(messages=_green_messages(prompt), eos_token=eos_token, add_generation_prompt=True)
    return text + eos_token


@functools.lru_cache(maxsize=1)
def _green_template():
    """GREEN's chat template compiled once (render_text runs per prompt: the openai backend's completions mode,
    lm-eval tasks, training data)."""
    import jinja2

    return jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(GREEN_CHAT_TEMPLATE)
