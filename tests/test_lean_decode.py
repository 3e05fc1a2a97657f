"""The engine's lean decode forward (`radmetrics.judge.lean_decode`): serves Llama-shaped models once its logits
matched the model's own forward bit for bit; any model it does not match, or fails on, is decoded by its own."""
from __future__ import annotations

import logging

import pytest

from radmetrics.judge import greedy_engine, lean_decode


def _tiny(kind: str, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    torch.manual_seed(seed)
    config_class, model_class = {"llama": (LlamaConfig, LlamaForCausalLM),
                                 "mistral": (MistralConfig, MistralForCausalLM)}[kind]
    config = config_class(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, eos_token_id=2, pad_token_id=2,
                          bos_token_id=1)
    return model_class(config).eval()


def _rows(n: int = 5, shared: int = 20):
    import torch

    g = torch.Generator().manual_seed(7)
    stem = torch.randint(3, 300, (shared,), generator=g).tolist()
    return [stem + torch.randint(3, 300, (int(k),), generator=g).tolist() for k in (4, 17, 9, 30, 1)[:n]]


def _assert_as_generate(model, rows, got, new_tokens: int) -> None:
    import torch

    for row, new in zip(rows, got):
        with torch.inference_mode():
            out = model.generate(torch.tensor([row]), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 do_sample=False, eos_token_id=2, pad_token_id=2)
        assert new == out[0, len(row):].tolist()


def _count_calls(monkeypatch, owner, name: str) -> list:
    calls = []
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_llama_shaped_models_are_decoded_by_the_lean_forward_after_one_check(kind, monkeypatch):
    """The first decode step compares the two forwards; from then on (this call and the next) every step is
    lean, and the answers are generate's, drafted steps included (q > 1 inputs per row)."""
    model = _tiny(kind)
    rows = _rows()
    lean_calls = _count_calls(monkeypatch, lean_decode.LeanDecoder, "__call__")
    checks = _count_calls(monkeypatch, greedy_engine._SlotEngine, "_check_lean")
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=12, min_new_tokens=12, eos_token_id=2,
                                        pad_token_id=2)
    # both kinds of step ran (drafts are tried first, then plain steps): each was checked once
    assert lean_decode.LEAN_CHECKS.verdict(model, True) is True
    assert lean_decode.LEAN_CHECKS.verdict(model, False) is True
    assert len(checks) == 2 and len(lean_calls) >= 10  # 11 decode steps at least, fewer with drafts kept
    _assert_as_generate(model, rows, got, 12)
    again = greedy_engine.greedy_generate(model, rows, max_new_tokens=12, min_new_tokens=12, eos_token_id=2,
                                          pad_token_id=2, draft_tokens=0)
    assert again == got and len(checks) == 2  # the verdicts hold for the model: no further check


def _biased(token: int, drafted_only: bool = False):
    """A lean forward that differs from the model's: ``token`` favoured (in drafted steps only, if asked)."""
    real = lean_decode.LeanDecoder.__call__

    def call(self, **inputs):
        out = real(self, **inputs)
        if not drafted_only or inputs["input_ids"].shape[1] > 1:
            out.logits = out.logits.clone()
            out.logits[..., token] += 3.0
        return out

    return call


def test_a_lean_forward_that_differs_from_the_models_is_caught_by_the_check(monkeypatch, caplog):
    """The check compares the first step's logits bit for bit: a lean forward that computed anything else is
    refused for the model, and every step goes through the model's forward; the answers are its generate's."""
    monkeypatch.setattr(lean_decode.LeanDecoder, "__call__", _biased(7))
    lean_calls = _count_calls(monkeypatch, lean_decode.LeanDecoder, "__call__")
    model = _tiny("llama", seed=3)
    rows = _rows()
    with caplog.at_level(logging.INFO, logger="radmetrics.judge.lean_decode"):
        got = greedy_engine.greedy_generate(model, rows, max_new_tokens=10, min_new_tokens=10, eos_token_id=2,
                                            pad_token_id=2)
    assert lean_decode.LEAN_CHECKS.refused(model)
    assert "its logits differ from the model's own forward" in caplog.text
    assert len(lean_calls) == 1  # the check only
    _assert_as_generate(model, rows, got, 10)
    greedy_engine.greedy_generate(model, rows[:2], max_new_tokens=3, eos_token_id=2, pad_token_id=2)
    assert len(lean_calls) == 1  # not offered again to this model


def test_subclasses_hooks_and_replaced_forwards_get_the_models_own_forward():
    """What the lean forward would skip (a subclass's forward, a hook or a replaced forward on the model, its
    body, a layer or an attention module, a global hook, a layer removed) keeps it from the model, so a step
    can never pass over it; hooks on the modules it does call (projections, norms, MLP) are kept."""
    import torch
    from transformers import LlamaForCausalLM

    attention = greedy_engine.shared_prefix_attention

    class Sub(LlamaForCausalLM):
        pass

    assert lean_decode.lean_decoder(Sub(_tiny("llama").config), attention) is None
    add_hook = {
        "model": lambda m: m.register_forward_hook(lambda *a: None),
        "body pre-hook": lambda m: m.model.register_forward_pre_hook(lambda *a: None),
        "layer": lambda m: m.model.layers[1].register_forward_hook(lambda *a: None),
        "attention": lambda m: m.model.layers[0].self_attn.register_forward_hook(lambda *a: None),
        "replaced forward": lambda m: setattr(m.model.layers[1], "forward", m.model.layers[1].forward),
        "layer removed": lambda m: m.model.layers.__delitem__(1),
    }
    for name, add in add_hook.items():
        model = _tiny("llama")
        assert lean_decode.lean_decoder(model, attention) is not None, name
        add(model)
        assert lean_decode.lean_decoder(model, attention) is None, name
    model = _tiny("llama")
    handle = torch.nn.modules.module.register_module_forward_hook(lambda *a: None)
    try:
        assert lean_decode.lean_decoder(model, attention) is None
    finally:
        handle.remove()
    model.model.layers[0].mlp.register_forward_hook(lambda *a: None)  # called by the lean forward: kept
    assert lean_decode.lean_decoder(model, attention) is not None


def test_a_hook_added_after_the_models_first_run_is_honoured(monkeypatch):
    """The verdict of a first run does not outlive a change: a hook added to a layer afterwards (which the lean
    forward would pass over) sends the next run's steps through the model's forward: generate's answers."""
    model = _tiny("llama", seed=6)
    rows = _rows(3)
    greedy_engine.greedy_generate(model, rows, max_new_tokens=8, min_new_tokens=8, eos_token_id=2, pad_token_id=2)
    assert lean_decode.LEAN_CHECKS.verdict(model, False) is True
    model.model.layers[0].register_forward_hook(lambda module, args, out: out + 0.5)
    got = greedy_engine.greedy_generate(model, rows, max_new_tokens=8, min_new_tokens=8, eos_token_id=2,
                                        pad_token_id=2)
    _assert_as_generate(model, rows, got, 8)


def test_hooks_on_the_modules_the_lean_forward_calls_are_honoured():
    """A hook on a module the lean forward calls (an MLP, a projection, the final norm) keeps it, and the hook
    runs on every step: the answers are generate's with the hooks, and differ from the model's without them."""
    model = _tiny("llama", seed=9)
    rows = _rows(3)
    options = dict(max_new_tokens=8, min_new_tokens=8, eos_token_id=2, pad_token_id=2)
    plain = greedy_engine.greedy_generate(model, rows, **options)
    model.model.layers[1].mlp.register_forward_hook(lambda module, args, out: out * 1.5)
    model.model.layers[0].self_attn.v_proj.register_forward_hook(lambda module, args, out: out + 0.25)
    model.model.norm.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
    got = greedy_engine.greedy_generate(model, rows, **options)
    assert lean_decode.LEAN_CHECKS.verdict(model, False) is True  # still lean
    assert got != plain
    _assert_as_generate(model, rows, got, 8)


def test_a_lean_forward_that_fails_after_its_check_hands_the_step_to_the_model(monkeypatch, caplog):
    """A lean forward that passed its check and then fails (the model changed in a way the start could not see):
    that step and the rest through the model's forward, never a crash; the answers are generate's."""
    real = lean_decode.LeanDecoder.__call__
    calls = []

    def fails_later(self, **inputs):
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("an adapter it cannot drive")
        return real(self, **inputs)

    monkeypatch.setattr(lean_decode.LeanDecoder, "__call__", fails_later)
    model = _tiny("llama", seed=8)
    rows = _rows(3)
    with caplog.at_level(logging.INFO, logger="radmetrics.judge.lean_decode"):
        got = greedy_engine.greedy_generate(model, rows, max_new_tokens=10, min_new_tokens=10, eos_token_id=2,
                                            pad_token_id=2, draft_tokens=0)
    assert "the lean forward failed: an adapter it cannot drive" in caplog.text
    assert lean_decode.LEAN_CHECKS.refused(model) and len(calls) == 4
    _assert_as_generate(model, rows, got, 10)


def test_a_lean_forward_that_fails_leaves_the_steps_to_the_model(monkeypatch, caplog):
    def broken(self, **kwargs):
        raise RuntimeError("a module it cannot drive")

    monkeypatch.setattr(lean_decode.LeanDecoder, "__call__", broken)
    model = _tiny("llama", seed=5)
    rows = _rows(3)
    with caplog.at_level(logging.INFO, logger="radmetrics.judge.lean_decode"):
        got = greedy_engine.greedy_generate(model, rows, max_new_tokens=8, min_new_tokens=8, eos_token_id=2,
                                            pad_token_id=2)
    assert lean_decode.LEAN_CHECKS.refused(model)
    assert "the lean forward failed: a module it cannot drive" in caplog.text
    _assert_as_generate(model, rows, got, 8)


def test_a_lean_forward_that_differs_only_in_drafted_steps_is_caught_at_its_first_drafted_step(monkeypatch):
    """The check runs for each kind of step: plain steps agreeing says nothing of steps with drafts (several
    inputs per row). A lean forward that differs only in those, with plain steps first: the first drafted step is
    compared too, and from then on every step is the model's own: the answers are the engine's without the lean
    forward."""
    import torch

    from radmetrics.judge import prompt_lookup

    monkeypatch.setattr(lean_decode.LeanDecoder, "__call__", _biased(9, drafted_only=True))
    model = _tiny("llama", seed=4)
    g = torch.Generator().manual_seed(2)
    # each row its tokens twice: its last token occurred before, so prompt lookup has guesses from the start
    rows = [2 * torch.randint(3, 300, (int(n),), generator=g).tolist() for n in (6, 11, 8)]
    steps = []
    monkeypatch.setattr(prompt_lookup.DraftPolicy, "use_drafts", lambda self, b: steps.append(b) or len(steps) > 2)
    options = dict(max_new_tokens=12, min_new_tokens=12, eos_token_id=2, pad_token_id=2, share_stems=False)
    got = greedy_engine.greedy_generate(model, rows, **options)
    assert lean_decode.LEAN_CHECKS.verdict(model, False) is True  # the first steps: plain, agreed
    assert lean_decode.LEAN_CHECKS.verdict(model, True) is False  # then the first drafted step: caught
    monkeypatch.setattr(greedy_engine, "lean_decoder", lambda *a: None)
    steps.clear()
    assert got == greedy_engine.greedy_generate(model, rows, **options)


def test_the_lean_forward_is_offered_only_to_llama_shaped_models():
    from transformers import GPT2Config, GPT2LMHeadModel

    assert isinstance(lean_decode.lean_decoder(_tiny("llama"), greedy_engine.shared_prefix_attention),
                      lean_decode.LeanDecoder)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=300, n_embd=32, n_layer=1, n_head=2, n_positions=64)).eval()
    assert lean_decode.lean_decoder(gpt2, greedy_engine.shared_prefix_attention) is None
    body_only = _tiny("llama").model  # a LlamaModel: no lm_head
    assert lean_decode.lean_decoder(body_only, greedy_engine.shared_prefix_attention) is None
