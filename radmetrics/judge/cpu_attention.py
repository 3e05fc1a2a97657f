"""A compiled decode-attention kernel for CPU judges (fp32), built on first use with the system's C compiler.

Why: on a CPU a decode step's attention is small batched products (each row's one query per head against its own
few hundred keys), which PyTorch's matmul runs far below the memory's rate: at the natural benchmark's 96 rows
~17 GB/s where a plain read of the same keys runs at ~50 GB/s, and einsum, the CPU SDPA kernel and torch.compile
stayed there (BENCHMARKS.md, sessions 30-33). ``cascade_decode.c`` reads each row's keys and values once (only
its filled columns) plus the shared prefix's, under one softmax, for plain and drafted steps: a 96-row step's
attention (2 layers) 1.7 against 2.8 ms, the natural benchmark's whole run 1.13-1.17x faster (session 38). No library ships such a kernel for CPUs (FlashInfer and vLLM's are GPU or own-runtime
kernels), and it is ~200 lines of plain C: no Python or torch headers, so it builds in under a second.

How: the first CPU fp32 decode step of a process compiles the source (``$CC`` or ``cc``; ``-O3 -march=native
-fopenmp``, then without the flags a compiler refuses) into ``$RADMETRICS_KERNEL_DIR`` (default
``~/.cache/radmetrics/kernels``), named by a hash of the source, the compiler, its flags and this CPU's
instruction sets, so a later process loads it at once and a copy built for another CPU is never loaded. Loaded
with ctypes; its OpenMP runtime is the one PyTorch already loaded (the same ``libgomp.so.1``); it runs
``torch.get_num_threads()`` threads. No compiler, a failed build or load, or any error from the kernel: the engine
attends with PyTorch's products for the rest of the process (logged once). ``cpu_attention="torch"`` (the judge's
option) never builds it.

Answers: equal up to rounding (its exp is Cephes's polynomial, ~1 ulp; its sums run in another order than MKL's);
the engine's equality tests against ``generate`` run through it, and the benchmarks' answers stayed equal to the
official loop's."""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: the judge's `cpu_attention` option: "auto" (the compiled kernel where it builds, else PyTorch's products),
#: "torch" (PyTorch's products)
CPU_ATTENTION = ("auto", "torch")
KERNEL_DIR_ENV = "RADMETRICS_KERNEL_DIR"
SOURCE = Path(__file__).with_name("cascade_decode.c")
#: flag sets tried in order: a compiler without OpenMP (Apple's clang) or -march=native still builds a kernel
FLAG_SETS = (["-O3", "-march=native", "-fopenmp"], ["-O3", "-fopenmp"], ["-O3", "-march=native"], ["-O3"])
#: a compiler that hangs (a broken toolchain) is given up on after this long, and not tried with other flags
BUILD_TIMEOUT_S = 60
#: a build's temporary file; one a killed build left is removed by a later build once this old
BUILD_PREFIX = "building-"
ABANDONED_AFTER_S = 2 * BUILD_TIMEOUT_S

_lock = threading.Lock()
#: None until tried in this process; False when unavailable; else the kernel's ctypes function
_function: Any = None


def kernel_dir() -> Path:
    env = os.environ.get(KERNEL_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "radmetrics" / "kernels"


def available() -> bool:
    """True when the kernel is built and loaded (built now if not tried yet in this process)."""
    return _load() is not None


def disable(reason: str) -> None:
    """PyTorch's products for the rest of the process (after an error from the kernel)."""
    global _function
    if _function is not False:
        log.warning("compiled CPU decode attention turned off for this process (%s); using PyTorch's products",
                    reason)
    _function = False


def cascade_decode_attention(query, key, value, prefix_kv, first, used, max_used: int, scale: float):
    """One decode step's attention over the shared prefix (``prefix_kv``: keys and values ``[1, kv_heads, P, d]``,
    or None) and each row's own columns: input i of row b reads ``first[b] .. first[b] + used[b, i]`` of ``key`` /
    ``value`` (``[batch, kv_heads, columns, d]`` views of the slot table, last dimension contiguous). ``query``:
    ``[batch, heads, inputs, d]`` (a row's next input and its drafts). Returns ``[batch, inputs, heads, d]`` as the
    attention modules expect. Raises RuntimeError when the kernel is unavailable or refuses the inputs (the caller
    falls back)."""
    import torch

    function = _load()
    if function is None:
        raise RuntimeError("the compiled CPU decode attention is unavailable")
    batch, heads, n_q, dim = query.shape
    kv_heads = key.shape[1]
    if heads % kv_heads or 1 not in (query.stride(-1), query.shape[-1]) or key.stride(-1) != 1 or \
            value.stride(-1) != 1 or key.stride() != value.stride():
        raise RuntimeError("the compiled CPU decode attention takes a [rows, kv_heads, columns, dim] table")
    if any(t.dtype != torch.float32 or t.device.type != "cpu" for t in (query, key, value, *(prefix_kv or ()))):
        raise RuntimeError("the compiled CPU decode attention is for fp32 tensors on the CPU")
    # the kernel reads through raw pointers: shapes that disagree would read (or write) outside the tensors (the
    # columns each row reads are checked by the kernel itself)
    prefix_shape = prefix_kv[0].shape if prefix_kv is not None else (1, kv_heads, 0, dim)
    if (key.shape != value.shape or key.shape[0] != batch or key.shape[3] != dim or first.shape != (batch,)
            or used.numel() != batch * n_q or prefix_shape[:2] != (1, kv_heads) or prefix_shape[3] != dim
            or (prefix_kv is not None and prefix_kv[1].shape != prefix_shape)):
        raise RuntimeError("the compiled CPU decode attention was given tensors whose shapes disagree")
    if prefix_kv is not None:
        prefix_keys, prefix_values = (t.contiguous() for t in prefix_kv)
        n_prefix = prefix_keys.shape[2]
    else:
        prefix_keys = prefix_values = query  # not read: no prefix columns
        n_prefix = 0
    if first.dtype != torch.int32 or not first.is_contiguous():  # the engine gives int32 already
        first = first.to(torch.int32).contiguous()
    if used.dtype != torch.int32 or not used.is_contiguous():
        used = used.to(torch.int32).contiguous()
    out = torch.empty(batch, n_q, heads, dim, dtype=torch.float32)
    q_row, q_head, q_input, _ = query.stride()
    row_stride, head_stride, col_stride, _ = key.stride()
    failed = function(query.data_ptr(), q_row, q_head, q_input, scale, prefix_keys.data_ptr(),
                      prefix_values.data_ptr(), n_prefix, key.data_ptr(), value.data_ptr(), row_stride, head_stride,
                      col_stride, key.shape[2], first.data_ptr(), used.data_ptr(), batch, kv_heads, heads // kv_heads,
                      n_q, dim, max_used, torch.get_num_threads(), out.data_ptr())
    if failed == 2:
        raise RuntimeError("the compiled CPU decode attention was given columns outside the table")
    if failed:
        raise RuntimeError("the compiled CPU decode attention could not allocate its scratch memory")
    return out


def _load() -> Any:
    global _function
    if _function is None:
        with _lock:
            if _function is None:
                try:
                    _function = _build_and_load() or False
                except Exception as e:  # noqa: BLE001 - whatever stops it (a $CC shlex cannot read, a shared
                    # folder's kernel this user cannot replace): PyTorch's products, never a failed judge call
                    from radmetrics.judge.greedy_engine import _first_line

                    log.warning("the CPU decode attention kernel could not be built or loaded (%s: %s): CPU decode "
                                "steps attend with PyTorch's products", type(e).__name__, _first_line(e))
                    _function = False
    return _function or None


def _build_and_load() -> Any:
    # $CC may carry words of its own ("ccache gcc", "gcc -m64"), as make reads it
    compiler = (shlex.split(os.environ.get("CC", "")) or
                [shutil.which("cc") or shutil.which("gcc") or shutil.which("clang") or ""])
    if not compiler[0] or sys.platform == "win32":
        log.info("no C compiler found: CPU decode steps attend with PyTorch's products")
        return None
    try:
        source = SOURCE.read_bytes()
    except OSError as e:  # an install without the package's data files
        log.info("the CPU decode attention kernel's source is missing (%s): CPU decode steps attend with PyTorch's "
                 "products", e)
        return None
    folder = kernel_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        usable = os.access(folder, os.W_OK | os.X_OK)
    except OSError:
        usable = False
    if not usable or not _loads_libraries(folder):
        # a read-only home, a path that is a file, a noexec mount: this process's own folder, built again next time
        fallback = Path(tempfile.mkdtemp(prefix="radmetrics-kernels-"))
        if not _loads_libraries(fallback):
            shutil.rmtree(fallback, ignore_errors=True)
            log.info("neither %s nor the temporary folder %s can hold a library this process may load (noexec): "
                     "CPU decode steps attend with PyTorch's products; $%s names a folder that can", folder,
                     fallback.parent, KERNEL_DIR_ENV)
            return None
        if usable:
            log.info("%s is on a filesystem mounted noexec (no library built there loads): building the CPU "
                     "attention kernel in %s for this process", folder, fallback)
        else:
            log.info("cannot write the CPU attention kernel to %s: building it in %s for this process", folder,
                     fallback)
        try:  # loaded, the library's mapping outlives its file: nothing is left in the temporary folder
            return _build_and_load_in(fallback, compiler, source)
        finally:
            shutil.rmtree(fallback, ignore_errors=True)
    return _build_and_load_in(folder, compiler, source)


def _build_and_load_in(folder: Path, compiler: list[str], source: bytes) -> Any:
    cpu = _cpu_identity().encode()
    for flags in FLAG_SETS:
        key = hashlib.sha256(b"\0".join([source, " ".join(compiler).encode(), " ".join(flags).encode(),
                                         cpu])).hexdigest()[:20]
        library = folder / f"cascade_decode-{key}.so"
        if not library.exists():
            built = _compile(compiler, flags, library)
            if built is None:
                break
            if not built:
                continue
        function = _opened(library, "rebuilding")
        if function is None:  # a damaged or foreign file: built again
            library.unlink(missing_ok=True)
            if not _compile(compiler, flags, library):
                break
            function = _opened(library, "trying other flags")
            if function is None:
                continue
        pointer, integer = ctypes.c_void_p, ctypes.c_int64
        function.argtypes = [pointer, integer, integer, integer, ctypes.c_float, pointer, pointer, integer, pointer,
                             pointer, integer, integer, integer, integer, pointer, pointer, integer, integer, integer,
                             integer, integer, integer, ctypes.c_int, pointer]
        function.restype = ctypes.c_int
        return function
    log.info("the CPU decode attention kernel did not build with %s: CPU decode steps attend with PyTorch's "
             "products", " ".join(compiler))
    return None


def _opened(library: Path, then: str) -> Any:
    """The library's kernel function, or None (logged, with what is done ``then``) when the loader refuses it."""
    try:
        return ctypes.CDLL(str(library)).cascade_decode_attention
    except OSError as e:
        log.info("could not load %s (%s); %s", library, e, then)
        return None


def _loads_libraries(folder: Path) -> bool:
    """False for a folder on a filesystem mounted noexec (a hardened /tmp, some scratch or home mounts): the loader
    refuses every library there ("failed to map segment"), whatever the flags it was built with."""
    noexec = getattr(os, "ST_NOEXEC", 0)
    try:
        return not (noexec and os.statvfs(folder).f_flag & noexec)
    except OSError:  # no statvfs answer: try, as before
        return True


def _compile(compiler: list[str], flags: list[str], library: Path) -> bool | None:
    """Build into a temporary file beside ``library``, then rename it into place (another process building the
    same kernel at the same time finds either no file or a whole one). None: the compiler ran out of time."""
    try:
        _remove_abandoned_builds(library.parent)
        handle, temporary = tempfile.mkstemp(prefix=BUILD_PREFIX, suffix=".so", dir=library.parent)
        os.close(handle)
    except OSError as e:
        log.info("cannot write the CPU attention kernel to %s (%s)", library.parent, e)
        return False
    started = time.perf_counter()
    try:
        result = subprocess.run([*compiler, *flags, "-shared", "-fPIC", str(SOURCE), "-o", temporary],
                                capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if result.returncode != 0:
            log.debug("%s %s: %s", " ".join(compiler), " ".join(flags), result.stderr.strip()[-500:])
            return False
        # mkstemp's owner-only mode (0711 once linked) would keep the other users of a shared kernel folder from
        # loading it: the mode `cc -o` gives under the usual umask (the folder's own mode decides who reaches it)
        os.chmod(temporary, 0o755)
        os.replace(temporary, library)
    except subprocess.TimeoutExpired:
        log.info("%s did not build the CPU attention kernel in %d s", " ".join(compiler), BUILD_TIMEOUT_S)
        return None
    except (OSError, subprocess.SubprocessError) as e:
        log.debug("%s %s: %s", " ".join(compiler), " ".join(flags), e)
        return False
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    log.info("built the CPU decode attention kernel in %.1f s: %s", time.perf_counter() - started, library)
    return True


def _remove_abandoned_builds(folder: Path) -> None:
    """Temporary files of builds killed midway (no build runs longer than the timeout)."""
    now = time.time()
    for stale in folder.glob(f"{BUILD_PREFIX}*.so"):
        try:
            if now - stale.stat().st_mtime > ABANDONED_AFTER_S:
                stale.unlink()
        except OSError:
            pass


def _cpu_identity() -> str:
    """What -march=native compiles for: the machine and, on Linux, the CPU's model and instruction-set flags."""
    parts = [sys.platform, platform.machine()]
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "\n".join(parts)
    for name in ("model name", "flags", "Features"):  # the first CPU's (all are alike)
        parts += [line.strip() for line in text.splitlines() if line.split(":", 1)[0].strip() == name][:1]
    return "\n".join(parts)

