"""The compiled CPU decode-attention kernel (`radmetrics.judge.cpu_attention`): it computes what attention over
the prefix's and each row's own keys computes (one input or several per row, grouped KV heads, any prefix, the
slot table read in place), built once per CPU and compiler into the kernel folder and loaded from there later; the
engine's answers through it equal `generate`'s; and where it cannot serve (no compiler, a failed build, an error
from it, ``cpu_attention="torch"``) the engine attends with PyTorch's products and answers the same."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import radmetrics
from radmetrics.judge import cpu_attention, greedy_engine

needs_kernel = pytest.mark.skipif(not cpu_attention.available(), reason="no C compiler built the kernel here")


def _reference(query, keys, values, prefix, first, used, scale):
    """Attention of each row's input i over [prefix] + its columns first..first + used[i], float64, head h on KV
    head h // group (transformers' repeat_kv)."""
    import torch

    batch, heads, n_q, dim = query.shape
    group = heads // keys.shape[1]
    out = torch.zeros(batch, n_q, heads, dim, dtype=torch.float64)
    for b in range(batch):
        for i in range(n_q):
            f, n = int(first[b]), int(used[b, i])
            for h in range(heads):
                k = keys[b, h // group, f:f + n].double()
                v = values[b, h // group, f:f + n].double()
                if prefix is not None:
                    k = torch.cat([prefix[0][0, h // group].double(), k])
                    v = torch.cat([prefix[1][0, h // group].double(), v])
                p = torch.softmax(query[b, h, i].double() @ k.T * scale, -1)
                out[b, i, h] = p @ v
    return out


@needs_kernel
@pytest.mark.parametrize("kv_heads,group,dim,n_prefix,n_q", [
    (1, 2, 64, 23, 1),  # the natural benchmark's judge: 2 query heads on one KV head
    (1, 2, 64, 23, 5),  # a drafted step: the next input and 4 guesses
    (2, 1, 48, 0, 1),  # no prefix, one query head per KV head
    (2, 3, 36, 7, 3),  # an odd group (pairs of queries, then one alone); dims not a multiple of 8
    (4, 2, 128, 5, 2),
])
def test_the_kernel_computes_attention_over_the_prefix_and_each_rows_own_columns(kv_heads, group, dim, n_prefix,
                                                                                    n_q):
    import torch

    torch.manual_seed(n_q + dim)
    batch, width = 6, 40
    table_k = torch.randn(batch + 2, kv_heads, width, dim)  # the slot table; the step reads its first rows/columns
    table_v = torch.randn(batch + 2, kv_heads, width, dim)
    keys, values = table_k[:batch, :, :30], table_v[:batch, :, :30]  # views: strides of the whole table
    prefix = (torch.randn(1, kv_heads, n_prefix, dim), torch.randn(1, kv_heads, n_prefix, dim)) if n_prefix else None
    query = torch.randn(batch, n_q, kv_heads * group, dim).transpose(1, 2)  # as the projections give it
    first = torch.tensor([1, 0, 5, 1, 2, 0])
    used = torch.tensor([[10 + i for i in range(n_q)], [1] * n_q, [20 + i for i in range(n_q)],
                         [25 - n_q + 1 + i for i in range(n_q)], [3 + i for i in range(n_q)], [1] * n_q])
    scale = dim ** -0.5
    out = cpu_attention.cascade_decode_attention(query, keys, values, prefix, first, used, 30, scale)
    assert out.shape == (batch, n_q, kv_heads * group, dim)
    expected = _reference(query, keys, values, prefix, first, used, scale)
    assert torch.allclose(out.double(), expected, atol=2e-6), (out.double() - expected).abs().max()


@pytest.mark.parametrize("kernel", [
    pytest.param(True, marks=needs_kernel),
    False,  # unavailable: PyTorch's products over the columns `slot_columns` names (a lean step builds no mask)
])
def test_the_engines_masked_attention_and_the_kernel_agree_for_a_step(kernel, monkeypatch):
    """`shared_prefix_attention` with the kernel's columns (and no mask, as a lean step gives it) equals its
    masked-product path for the same step, through the kernel or, where it is unavailable, without it."""
    import torch

    torch.manual_seed(3)
    batch, kv_heads, heads, dim, cols = 5, 1, 2, 64, 50
    keys, values = torch.randn(batch, kv_heads, cols, dim), torch.randn(batch, kv_heads, cols, dim)
    prefix = [(torch.randn(1, kv_heads, 11, dim), torch.randn(1, kv_heads, 11, dim))]
    query = torch.randn(batch, heads, 1, dim)
    start, end = torch.tensor([1, 4, 1, 9, 0]), torch.tensor([30, 44, 12, 49, 0])  # the last: an inactive slot
    columns = torch.arange(cols)
    mask = ((columns >= start[:, None]) & (columns <= end[:, None]))[:, None, None, :]
    used = (end - start + 1)[:, None]

    class Layer:
        layer_idx = 0

    masked, _ = greedy_engine.shared_prefix_attention(Layer, query, keys, values, mask, scaling=dim ** -0.5,
                                                      shared_prefix_kv=prefix)
    if not kernel:
        monkeypatch.setattr(cpu_attention, "_function", False)
    slots = greedy_engine.SlotColumns(None, None, used, cols, first=start)
    fused, _ = greedy_engine.shared_prefix_attention(Layer, query, keys, values, None, scaling=dim ** -0.5,
                                                     shared_prefix_kv=prefix, slot_columns=slots)
    assert torch.allclose(fused, masked, atol=1e-6)


def _count_kernel_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = cpu_attention.cascade_decode_attention

    def counted(query, *args):
        calls.append(query.shape[2])  # inputs per row: 1, or more on a drafted step
        return real(query, *args)

    monkeypatch.setattr(cpu_attention, "cascade_decode_attention", counted)
    return calls


@needs_kernel
@pytest.mark.parametrize("kv_heads", [1, 4])
def test_the_engines_answers_through_the_kernel_equal_generates_with_and_without_drafts(monkeypatch, kv_heads):
    from test_greedy_engine import _assert_answers_as_generate, _random_llama, _rows_sharing_a_prefix

    from radmetrics.judge.greedy_engine import SharedPrefix, greedy_generate

    model = _random_llama(kv_heads, "cpu")
    rows, past = _rows_sharing_a_prefix(model, "cpu")
    calls = _count_kernel_calls(monkeypatch)
    for drafts in (0, 4):
        calls.clear()
        answers = greedy_generate(model, rows, max_new_tokens=24, min_new_tokens=24, eos_token_id=2, pad_token_id=2,
                                  prefix=SharedPrefix(past, 40), draft_tokens=drafts)
        _assert_answers_as_generate(model, rows, answers, "cpu", 24)
        assert calls and (max(calls) > 1) == bool(drafts)  # every step through the kernel; drafted ones too


@needs_kernel
def test_the_trained_judge_answers_the_same_with_the_kernel_and_with_pytorchs_products(tiny_judge, monkeypatch):
    from test_greedy_engine import _green_prompts

    prompts = _green_prompts()[:12]
    config = radmetrics.GenerationConfig(max_new_tokens=300)

    def judge(**options):
        return radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, dtype="float32",
                                    device="cpu", **options)

    calls = _count_kernel_calls(monkeypatch)
    plain = judge(cpu_attention="torch").generate(prompts, config, progress=False)
    assert calls == []  # "torch" never calls it
    assert judge().generate(prompts, config, progress=False) == plain
    assert calls  # the default did
    assert judge(engine=False).generate(prompts, config, progress=False) == plain  # generate's own answers


def test_an_error_from_the_kernel_turns_it_off_with_one_warning_and_the_answers_stay(tiny_judge, monkeypatch,
                                                                                     caplog):
    from test_greedy_engine import _green_prompts

    prompts = _green_prompts()[:4]
    config = radmetrics.GenerationConfig(max_new_tokens=60)
    expected = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, device="cpu",
                                    cpu_attention="torch").generate(prompts, config, progress=False)
    monkeypatch.setattr(cpu_attention, "_function", lambda *args: 1)  # "could not allocate its scratch memory"
    with caplog.at_level(logging.WARNING, logger="radmetrics.judge.cpu_attention"):
        answers = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False,
                                       device="cpu").generate(prompts, config, progress=False)
    assert answers == expected
    assert [r.getMessage() for r in caplog.records] == [
        "compiled CPU decode attention turned off for this process (the compiled CPU decode attention could not "
        "allocate its scratch memory); using PyTorch's products"]
    assert not cpu_attention.available()  # for the rest of the process


@needs_kernel
def test_a_kernel_failing_mid_call_leaves_the_later_steps_to_pytorchs_products_over_the_same_columns(
        tiny_judge, monkeypatch, caplog):
    """Past the first steps a lean step builds no attention mask (the kernel reads the rows' columns): when the
    kernel fails there, the products attend over the same columns, from `slot_columns`, and answers stay."""
    from test_greedy_engine import _green_prompts

    prompts = _green_prompts()[:6]
    config = radmetrics.GenerationConfig(max_new_tokens=80)
    expected = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, device="cpu",
                                    cpu_attention="torch").generate(prompts, config, progress=False)
    real, calls = cpu_attention._load(), []

    def fails_later(*args):
        calls.append(1)
        return real(*args) if len(calls) <= 40 else 1  # 20 steps of 2 layers, then "could not allocate"

    monkeypatch.setattr(cpu_attention, "_function", fails_later)
    with caplog.at_level(logging.WARNING, logger="radmetrics.judge.cpu_attention"):
        answers = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False,
                                       device="cpu").generate(prompts, config, progress=False)
    assert len(calls) == 41 and len(caplog.records) == 1
    assert answers == expected


def _in_a_fresh_process(env: dict[str, str]) -> subprocess.CompletedProcess:
    """`available()` in a new interpreter (the kernel is loaded once per process), with its log lines."""
    code = ("import logging, sys; logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format='%(message)s');"
            "import torch; from radmetrics.judge import cpu_attention; print('available', cpu_attention.available())")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


@needs_kernel
def test_the_kernel_is_built_once_into_its_folder_then_loaded_and_a_damaged_copy_is_rebuilt(tmp_path):
    folder = tmp_path / "kernels"
    first = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(folder)})
    assert "available True" in first.stdout and "built the CPU decode attention kernel" in first.stdout
    [library] = folder.glob("cascade_decode-*.so")
    assert [p.name for p in folder.iterdir()] == [library.name]  # no temporary file left beside it
    built = library.stat().st_mtime_ns
    second = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(folder)})
    assert "available True" in second.stdout and "built" not in second.stdout
    assert library.stat().st_mtime_ns == built
    library.write_bytes(b"not a shared library")
    third = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(folder)})
    assert "available True" in third.stdout and "rebuilding" in third.stdout and "built the" in third.stdout


@needs_kernel
def test_an_unwritable_kernel_folder_builds_the_kernel_for_the_process_in_a_temporary_folder(tmp_path):
    """... and leaves nothing there once loaded (each process left a radmetrics-kernels-* folder in /tmp)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder under a file cannot be made, whoever runs the test
    (tmp_path / "tmp").mkdir()
    result = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(blocker / "kernels"), "TMPDIR": str(tmp_path / "tmp")})
    assert "available True" in result.stdout
    assert f"cannot write the CPU attention kernel to {blocker / 'kernels'}" in result.stdout
    assert f"building it in {tmp_path / 'tmp'}" in result.stdout
    assert list((tmp_path / "tmp").iterdir()) == []


@needs_kernel
def test_a_cc_with_words_of_its_own_builds_the_kernel(tmp_path):
    """$CC as make reads it: a launcher and a flag before the compiler's own arguments."""
    import shutil

    result = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(tmp_path / "k"),
                                  "CC": f"env {shutil.which('cc') or shutil.which('gcc')} -DRADMETRICS_TEST=1"})
    assert "available True" in result.stdout and "built the CPU decode attention kernel" in result.stdout


def test_without_a_compiler_the_kernel_is_unavailable_and_the_engine_answers_with_pytorchs_products(tmp_path):
    result = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(tmp_path / "k"), "CC": str(tmp_path / "no-cc")})
    assert "available False" in result.stdout
    assert "did not build" in result.stdout
    assert not (tmp_path / "k").exists() or not list((tmp_path / "k").glob("*.so"))


def test_the_kernels_source_ships_with_the_package():
    """(The wheel job runs this file against the installed wheel: a kernel source left out of it would only skip
    the tests above.)"""
    assert cpu_attention.SOURCE.is_file() and b"cascade_decode_attention" in cpu_attention.SOURCE.read_bytes()


def test_an_unknown_cpu_attention_value_is_refused_when_the_judge_is_made():
    from radmetrics.judge.base import JudgeOptionError

    with pytest.raises(JudgeOptionError, match="'cpu_attention' .* must be one of auto, torch, not 'fast'"):
        radmetrics.get_judge("transformers", model="some/model", cpu_attention="fast")


def test_a_compiler_that_hangs_is_given_up_on_once(tmp_path, monkeypatch):
    """A broken toolchain that never returns costs one timeout, not one per flag set, and no kernel."""
    import time

    calls = tmp_path / "calls"
    hanging = tmp_path / "cc"
    hanging.write_text(f"#!/bin/sh\necho run >> {calls}\nexec sleep 30\n")
    hanging.chmod(0o755)
    monkeypatch.setenv("CC", str(hanging))
    monkeypatch.setenv("RADMETRICS_KERNEL_DIR", str(tmp_path / "kernels"))
    monkeypatch.setattr(cpu_attention, "BUILD_TIMEOUT_S", 1)
    monkeypatch.setattr(cpu_attention, "_function", None)
    started = time.monotonic()
    assert not cpu_attention.available()
    assert time.monotonic() - started < 10
    assert calls.read_text().split() == ["run"]
    assert not list((tmp_path / "kernels").glob("*.so"))


def _counting_compiler(tmp_path) -> tuple[str, Path]:
    """A $CC that records each run, then runs the system's compiler."""
    import shutil

    calls = tmp_path / "compiler-runs"
    wrapper = tmp_path / "counting-cc"
    wrapper.write_text(f"#!/bin/sh\necho run >> {calls}\nexec {shutil.which('cc') or shutil.which('gcc')} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper), calls


@needs_kernel
def test_a_kernel_folder_mounted_noexec_builds_the_kernel_once_in_a_temporary_folder(tmp_path, monkeypatch):
    """A folder on a filesystem mounted noexec (a hardened /tmp, a scratch or home mount): the loader refuses every
    library built there ("failed to map segment from shared object"). It cost 8 compiler runs (each flag set, built
    twice) and ~3.4 s per process, and ended with no kernel and "did not build"; now the folder is passed over for a
    temporary one, as an unwritable folder is: one build, and the kernel runs."""
    import ctypes
    from types import SimpleNamespace

    folder = tmp_path / "noexec"
    real_statvfs, real_cdll = os.statvfs, ctypes.CDLL

    def statvfs(path):
        flags = real_statvfs(path).f_flag
        return SimpleNamespace(f_flag=flags | os.ST_NOEXEC if str(path).startswith(str(folder)) else flags)

    def cdll(name, *args, **kwargs):
        if str(name).startswith(str(folder)):
            raise OSError(f"{name}: failed to map segment from shared object")
        return real_cdll(name, *args, **kwargs)

    compiler, calls = _counting_compiler(tmp_path)
    monkeypatch.setattr(os, "statvfs", statvfs)
    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setenv("CC", compiler)
    monkeypatch.setenv("RADMETRICS_KERNEL_DIR", str(folder))
    monkeypatch.setattr(cpu_attention, "_function", None)
    assert cpu_attention.available()
    assert calls.read_text().split() == ["run"]
    assert not list(folder.glob("*.so"))


def test_an_error_while_building_or_loading_the_kernel_falls_back_to_pytorchs_products(tmp_path, monkeypatch,
                                                                                       caplog):
    """Anything that goes wrong while building or loading it leaves PyTorch's products, with one line: a $CC that
    shlex cannot read (an unclosed quote) raised ValueError out of `available()`, and so out of every judge call; as
    did a kernel in a shared folder another user had built (PermissionError on replacing it)."""
    monkeypatch.setenv("CC", 'gcc "-O2')
    monkeypatch.setenv("RADMETRICS_KERNEL_DIR", str(tmp_path / "k"))
    monkeypatch.setattr(cpu_attention, "_function", None)
    with caplog.at_level(logging.WARNING, logger="radmetrics.judge.cpu_attention"):
        assert not cpu_attention.available()
        assert not cpu_attention.available()  # tried once per process
    assert [r.getMessage() for r in caplog.records] == [
        "the CPU decode attention kernel could not be built or loaded (ValueError: No closing quotation): CPU "
        "decode steps attend with PyTorch's products"]


@needs_kernel
def test_the_built_kernel_can_be_loaded_by_the_other_users_of_a_shared_kernel_folder(tmp_path):
    """The kernel was left with mkstemp's owner-only mode (0600, made 0711 by the linker): in a kernel folder shared
    by a team (`$RADMETRICS_KERNEL_DIR` on a group or sticky folder) no other user could load it, so each rebuilt it
    over the others' (or, in a sticky folder, could not replace it). It is 0755, as `cc -o` leaves a library under
    the usual umask; the folder's own mode decides who reaches it."""
    import stat

    result = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(tmp_path / "shared")})
    assert "available True" in result.stdout
    [library] = (tmp_path / "shared").glob("cascade_decode-*.so")
    assert stat.S_IMODE(library.stat().st_mode) == 0o755


@needs_kernel
@pytest.mark.parametrize("case", ["used-past-max-used", "used-past-the-table", "negative-first",
                                  "no-column-without-a-prefix", "first-of-another-batch", "prefix-of-another-dim"])
def test_the_kernel_refuses_columns_or_shapes_outside_its_tensors(case):
    """The kernel reads and writes through raw pointers: ``used`` past ``max_used`` (which sizes its scratch
    buffers) wrote past them ('corrupted double-linked list', the process aborted), columns past the table's view
    or a ``first`` shorter than the batch read outside the tensors. Each is refused with RuntimeError (the engine
    then falls back to PyTorch's products), nothing read or written."""
    import torch

    batch, kv_heads, heads, cols, dim = 4, 1, 8, 30, 64
    keys, values = torch.randn(batch, kv_heads, cols, dim), torch.randn(batch, kv_heads, cols, dim)
    query = torch.randn(batch, heads, 9, dim)
    prefix = (torch.randn(1, kv_heads, 5, dim), torch.randn(1, kv_heads, 5, dim))
    first, used, max_used = torch.zeros(batch, dtype=torch.long), torch.full((batch, 9), 20), cols
    if case == "used-past-max-used":
        used, max_used = torch.full((batch, 9), 30), 1
    elif case == "used-past-the-table":
        first[2] = 11
    elif case == "negative-first":
        first[1] = -1
    elif case == "no-column-without-a-prefix":
        used[3, 0], prefix = 0, None
    elif case == "first-of-another-batch":
        first = first[:2]
    else:
        prefix = (prefix[0][..., :32], prefix[1][..., :32])
    with pytest.raises(RuntimeError, match="the compiled CPU decode attention was given"):
        cpu_attention.cascade_decode_attention(query, keys, values, prefix, first, used, max_used, 0.125)
    used = torch.full((batch, 9), 20)
    used[3, 0] = 0  # with a prefix, an input may read none of its own columns
    out = cpu_attention.cascade_decode_attention(query, keys, values, (torch.randn(1, kv_heads, 5, dim),) * 2,
                                                 torch.zeros(batch, dtype=torch.long), used, cols, 0.125)
    assert out.isfinite().all()


@needs_kernel
def test_a_build_killed_midway_leaves_a_file_a_later_build_removes(tmp_path):
    folder = tmp_path / "kernels"
    folder.mkdir()
    abandoned, recent = folder / "building-abc123.so", folder / "building-def456.so"
    abandoned.write_bytes(b"half a library")
    recent.write_bytes(b"another process's build, running now")
    old = abandoned.stat().st_mtime - cpu_attention.ABANDONED_AFTER_S - 1
    os.utime(abandoned, (old, old))
    result = _in_a_fresh_process({"RADMETRICS_KERNEL_DIR": str(folder)})
    assert "available True" in result.stdout
    assert not abandoned.exists() and recent.exists()
    assert len(list(folder.glob("cascade_decode-*.so"))) == 1
