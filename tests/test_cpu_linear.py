"""A CPU judge's large fp32 linear layers run on oneDNN during its calls (`radmetrics.judge.cpu_linear`): which
layers ("auto": the large ones; never a subclass, a layer with its own forward, another dtype), the model as it
was afterwards, hooks still called, answers equal to `generate`'s, and PyTorch's product wherever oneDNN cannot
serve (gradients wanted, an op that fails)."""
from __future__ import annotations

import logging

import pytest

import radmetrics
from radmetrics.judge import cpu_linear
from radmetrics.judge.cpu_linear import AUTO_MIN_WEIGHTS, eligible_linears, onednn_linears

pytestmark = pytest.mark.skipif(
    not __import__("torch").backends.mkldnn.is_available(), reason="this torch build has no oneDNN")


class _LoraLike(__import__("torch").nn.Linear):
    """A subclass (as peft's and bitsandbytes' layers are): its forward is its own business."""


def _layers():
    import torch

    big = torch.nn.Linear(512, 512)  # 262,144 weights: AUTO_MIN_WEIGHTS
    small = torch.nn.Linear(64, 32)
    subclass = _LoraLike(512, 512)
    offloaded = torch.nn.Linear(512, 512)
    offloaded.forward = lambda x: torch.zeros(1)  # what accelerate's hooks do: an instance forward
    double = torch.nn.Linear(512, 512).double()
    return torch.nn.ModuleDict(dict(big=big, small=small, subclass=subclass, offloaded=offloaded, float64=double))


def test_auto_takes_the_large_plain_fp32_layers_onednn_every_plain_one_torch_none():
    layers = _layers()
    assert layers["big"].weight.numel() == AUTO_MIN_WEIGHTS
    assert eligible_linears(layers, "auto") == [layers["big"]]
    assert eligible_linears(layers, "onednn") == [layers["big"], layers["small"]]
    assert eligible_linears(layers, "torch") == []


def test_layers_compute_the_same_product_keep_their_hooks_and_are_restored():
    import torch

    layers = _layers()
    big = layers["big"]
    x = torch.randn(7, 3, 512)
    seen = []
    big.register_forward_hook(lambda module, args, out: seen.append(out.shape))
    expected = torch.nn.functional.linear(x, big.weight, big.bias)
    with torch.inference_mode(), onednn_linears(layers, "auto") as patched:
        assert patched == [big] and "forward" in big.__dict__
        with onednn_linears(layers, "auto"):  # nested (or concurrent) calls on one model: patched once
            out = big(x)
        assert "forward" in big.__dict__  # the outer call still runs
    assert torch.allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert not torch.equal(out, torch.zeros_like(out))
    assert seen == [torch.Size([7, 3, 512])]  # the hook ran around the oneDNN forward
    assert "forward" not in big.__dict__ and cpu_linear._active == {}  # the model is as it was
    assert layers["offloaded"].forward(x).shape == (1,)  # an instance forward of its own is left alone


def test_with_gradients_wanted_the_layer_uses_pytorchs_product():
    import torch

    layers = _layers()
    big = layers["big"]
    x = torch.randn(4, 512, requires_grad=True)
    with onednn_linears(layers, "auto"):
        big(x).sum().backward()  # the oneDNN op has no backward: this would raise through it
    assert x.grad is not None and big.weight.grad is not None


def _profiled_ops(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        result = fn()
    return result, {e.key for e in prof.key_averages()}


def test_the_judge_answers_as_generate_with_its_layers_on_onednn(tiny_judge):
    """The tiny trained judge with every layer on oneDNN answers as `generate` (PyTorch's product) does, on the
    engine and on the generate path, and the oneDNN op ran; "torch" never runs it."""
    from test_greedy_engine import _green_prompts

    prompts = _green_prompts()[:8]
    config = radmetrics.GenerationConfig(max_new_tokens=200)

    def judge(**options):
        return radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32",
                                device="cpu", **options)

    reference = judge(engine=False, cpu_linear="torch")
    expected, ops = _profiled_ops(lambda: reference.generate(prompts, config, progress=False))
    assert "mkldnn::_linear_pointwise" not in ops
    for options in ({"cpu_linear": "onednn"}, {"cpu_linear": "onednn", "engine": False}):
        engine_or_generate = judge(**options)
        answers, ops = _profiled_ops(lambda: engine_or_generate.generate(prompts, config, progress=False))  # noqa: B023
        assert "mkldnn::_linear_pointwise" in ops, options
        assert answers == expected, options
        assert all(a.strip() for a in answers)


def test_the_default_puts_a_large_models_layers_on_onednn_and_answers_as_generate():
    """A random Llama of 512-wide layers: the shipped default ("auto") takes its attention and MLP layers, and the
    engine's answers equal `generate` on each prompt alone."""
    import torch
    from test_greedy_engine import _assert_answers_as_generate, _rows_sharing_a_prefix
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=512, intermediate_size=768, num_hidden_layers=1,
                                         num_attention_heads=8, num_key_value_heads=1, eos_token_id=2,
                                         pad_token_id=2, bos_token_id=1)).eval()
    auto = eligible_linears(model, "auto")
    assert {type(m).__name__ for m in auto} == {"Linear"} and len(auto) == 5  # q, o, gate, up, down (not k, v)
    rows, _ = _rows_sharing_a_prefix(model, "cpu")

    from radmetrics.judge.greedy_engine import greedy_generate

    answers, ops = _profiled_ops(lambda: _run_with_auto(model, lambda: greedy_generate(
        model, rows, max_new_tokens=12, min_new_tokens=12, eos_token_id=2, pad_token_id=2)))
    assert "mkldnn::_linear_pointwise" in ops
    _assert_answers_as_generate(model, rows, answers, "cpu", 12)


def _run_with_auto(model, fn):
    with onednn_linears(model, "auto"):
        return fn()


def test_a_failing_onednn_op_falls_back_to_pytorchs_product_with_one_warning(tiny_judge, monkeypatch, caplog):
    import torch

    monkeypatch.setattr(cpu_linear, "_ONEDNN_FAILED", False)
    calls = []

    def broken(*args):
        calls.append(1)
        raise RuntimeError("could not create a primitive descriptor\nmore")

    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", broken)
    prompts = ["Reference: clear lungs.\nCandidate: clear lungs."]
    config = radmetrics.GenerationConfig(max_new_tokens=20)
    # on the CPU also where a GPU is present (there the default device is CUDA, where no layer is oneDNN's)
    expected = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, cpu_linear="torch",
                                    engine=False, device="cpu").generate(prompts, config, progress=False)
    with caplog.at_level(logging.WARNING, logger="radmetrics.judge.cpu_linear"):
        answers = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, cpu_linear="onednn",
                                       device="cpu").generate(prompts, config, progress=False)
    assert answers == expected
    assert len(calls) == 1  # tried once; every later layer call went to PyTorch's product
    assert [r.getMessage() for r in caplog.records] == [
        "oneDNN linear unavailable (could not create a primitive descriptor); using PyTorch's product"]
    assert eligible_linears(torch.nn.Linear(512, 512), "auto") == []  # for the rest of the process


def test_an_unknown_cpu_linear_value_is_refused_when_the_judge_is_made():
    from radmetrics.judge.base import JudgeOptionError

    with pytest.raises(JudgeOptionError, match="'cpu_linear' .* must be one of auto, onednn, torch, not 'fast'"):
        radmetrics.get_judge("transformers", model="some/model", cpu_linear="fast")


def test_weights_are_packed_for_the_call_only_while_the_copy_is_small(monkeypatch):
    import torch

    from radmetrics.judge import greedy_engine

    layers = _layers()
    big = layers["big"]
    size = big.weight.numel() * 4
    monkeypatch.setattr(greedy_engine, "_available_ram", lambda: 8 * size)
    assert cpu_linear._packs([big]) and not cpu_linear._packs([])
    monkeypatch.setattr(greedy_engine, "_available_ram", lambda: 8 * size - 1)  # over an eighth of free memory
    assert not cpu_linear._packs([big])
    monkeypatch.setattr(greedy_engine, "_available_ram", lambda: 1 << 40)
    monkeypatch.setattr(cpu_linear, "PACK_MAX_BYTES", size - 1)
    assert not cpu_linear._packs([big])
    monkeypatch.setattr(cpu_linear, "PACK_MAX_BYTES", 1 << 30)
    packs = []
    monkeypatch.setattr(cpu_linear, "_onednn_forward", lambda layer, pack: packs.append(pack) or layer.forward)
    for prompts in (cpu_linear.PACK_MIN_PROMPTS - 1, cpu_linear.PACK_MIN_PROMPTS):  # a few prompts: not worth 8 ms
        with onednn_linears(torch.nn.Sequential(big), "auto", prompts=prompts):
            pass
    assert packs == [False, True]
    monkeypatch.undo()
    x = torch.randn(5, 512)
    with torch.inference_mode():
        packed, plain = cpu_linear._onednn_forward(big, True)(x), cpu_linear._onednn_forward(big, False)(x)
        expected = torch.nn.functional.linear(x, big.weight, big.bias)
    assert torch.allclose(packed, expected, rtol=1e-5, atol=1e-5)
    assert torch.allclose(plain, expected, rtol=1e-5, atol=1e-5)
