"""Prompts that are conversations: a system message, example turns, then the question.

Some judges were prompted with several chat turns, not one message (FineRadScore's official code sends GPT-4 a
system message, five example user/assistant turns and the query: rajpurkarlab/FineRadScore
gpt4_generations.py). A prompt stays a ``str`` everywhere (the response cache, replay files, Ray, the backends'
queues), so a conversation is written as one string: a fixed first line, then its messages as JSON. Backends
turn it back into messages (`as_messages`): the chat API gets them as they are, a tokenizer's chat template
renders them, and a completion-only format reads them as text (`flatten`). A plain prompt is one user message.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

#: the first line of a conversation prompt (no scoring system's prompt starts so: they open with instructions)
CHAT_MARK = "radmetrics-chat-v1\n"
ROLES = ("system", "user", "assistant")


def chat_prompt(messages: Sequence[dict[str, str]]) -> str:
    """The prompt string for these messages ({"role", "content"}; roles system, user, assistant; the last one
    the user's)."""
    checked = _checked(list(messages))
    if checked is None:
        raise ValueError("a conversation is a list of {'role', 'content'} messages (roles system, user, assistant; "
                         "a system message only first) ending with the user's")
    return CHAT_MARK + json.dumps(checked, ensure_ascii=False, separators=(",", ":"))


def chat_messages(prompt: str) -> list[dict[str, str]] | None:
    """The messages of a conversation prompt; None for a plain prompt."""
    if not prompt.startswith(CHAT_MARK):
        return None
    try:
        return _checked(json.loads(prompt[len(CHAT_MARK):]))
    except ValueError:
        return None


def as_messages(prompt: str) -> list[dict[str, str]]:
    """A prompt as chat messages: a conversation's own, or the prompt as one user message."""
    return chat_messages(prompt) or [{"role": "user", "content": prompt}]


def continue_chat(prompt: str, answer: str, follow_up: str) -> str:
    """The prompt, the judge's answer to it and a new user message: a re-ask that shows the judge its answer."""
    return chat_prompt([*as_messages(prompt), {"role": "assistant", "content": answer},
                        {"role": "user", "content": follow_up}])


def flatten(prompt: str) -> str:
    """A prompt as text for a model without a chat format: a plain prompt unchanged, a conversation's messages
    one after another with a blank line between them (examples, then the question, as a few-shot completion)."""
    messages = chat_messages(prompt)
    return prompt if messages is None else "\n\n".join(m["content"] for m in messages)


def system_into_first_user(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """For chat templates without a system role: the system text put before the first user message's, as the
    official FineRadScore code does for Claude 3 (claude3_generations.py: ``PROMPT_LONG + "Generated Text: ..."``)."""
    if not messages or messages[0]["role"] != "system":
        return messages
    system, rest = messages[0]["content"], [dict(m) for m in messages[1:]]
    for m in rest:
        if m["role"] == "user":
            m["content"] = system + m["content"]
            return rest
    return [{"role": "user", "content": system}, *rest]


def _checked(messages: Any) -> list[dict[str, str]] | None:
    if not isinstance(messages, list) or not messages:
        return None
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or set(m) != {"role", "content"} or m["role"] not in ROLES \
                or not isinstance(m["content"], str) or (m["role"] == "system" and i > 0):
            return None
        out.append({"role": m["role"], "content": m["content"]})
    return out if out[-1]["role"] == "user" else None
