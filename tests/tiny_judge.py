"""Build a tiny, real GREEN judge offline: a byte-level BPE tokenizer trained with `tokenizers`, a random
tiny Llama, and a few hundred optimizer steps so that it answers the GREEN prompt in GREEN's format.

The model is fed exactly what the transformers backend feeds it (GREEN chat format, appended EOS), so a
test that scores through radmetrics exercises the real load -> chat template -> batched generate -> parse
path. The folder name contains "green" so the backend picks GREEN's chat format by itself.
"""
from __future__ import annotations

import json
from pathlib import Path

SAMPLE = Path(__import__("radmetrics").__file__).resolve().parent / "sample_data"  # checkout or wheel


def training_pairs() -> list[tuple[str, str, str]]:
    """(reference, candidate, analysis) for the parseable rows of the bundled sample."""
    pairs = [json.loads(line) for line in (SAMPLE / "pairs.jsonl").read_text().splitlines()]
    replay = [json.loads(line) for line in (SAMPLE / "green_replay.jsonl").read_text().splitlines()]
    out = []
    for pair, rec in zip(pairs, replay):
        if pair["id"].startswith("green-"):
            out.append((pair["reference"], pair["candidate"], short_analysis(rec["response"])))
    return out


def short_analysis(response: str) -> str:
    """The recorded analysis, shortened (keeps training to seconds): no prose explanation, and the
    all-zero insignificant section written as GREEN's "No ..." form. Still scores as the original."""
    import re

    _, sep, rest = response.partition("[Clinically Significant Errors]")
    rest = re.sub(r"\[Clinically Insignificant Errors\]:.*?\n\n",
                  "[Clinically Insignificant Errors]:\nNo clinically insignificant errors.\n\n", rest, flags=re.S)
    return "[Explanation]:\nSee errors.\n\n" + sep + rest


def build_tiny_judge(out_dir: Path, steps: int = 160, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from radmetrics.green.prompt import build_green_prompt
    from radmetrics.judge.chat_formats import render

    torch.manual_seed(seed)
    out_dir = Path(out_dir)
    data = training_pairs()
    prompts = [build_green_prompt(r, c) for r, c, _ in data]

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = prompts + [a for _, _, a in data] + ["<|user|>\n<|assistant|>\n"]
    bpe.train_from_iterator(corpus * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", pad_token="</s>")

    # head_dim 64: the smallest head size vLLM's CPU attention kernels accept (the vllm backend test uses it).
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    model = LlamaForCausalLM(config)

    examples = []
    for prompt, (_, _, analysis) in zip(prompts, data):
        text, append_eos = render(prompt, "green", tokenizer)
        prefix = tokenizer(text)["input_ids"] + ([tokenizer.eos_token_id] if append_eos else [])
        target = tokenizer(analysis, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        ids = torch.tensor(prefix + target)
        labels = ids.clone()
        labels[: len(prefix)] = -100  # learn the answer, not the prompt
        examples.append((ids, labels))

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    def memorized() -> bool:
        """Teacher-forced argmax equals every answer token, so greedy decoding reproduces every answer
        exactly, whatever the float rounding of this machine's kernels and thread count."""
        model.eval()
        with torch.no_grad():
            for ids, labels in examples:
                top = model(input_ids=ids[None]).logits[0, :-1].topk(2, dim=-1)
                answer = labels[1:] != -100
                if not torch.equal(top.indices[:, 0][answer], labels[1:][answer]):
                    return False
                if (top.values[:, 0] - top.values[:, 1])[answer].min() < 1.0:  # no near-ties left to chance
                    return False
        return True

    step = 0
    # `steps` is the minimum; then train on, one round over the examples at a time, until every answer is
    # memorized (a run that stopped at a fixed step count sometimes left one answer off by a token).
    while step < steps or (step < 4 * steps and not memorized()):
        for _ in range(steps if step == 0 else len(examples)):
            model.train()
            ids, labels = examples[step % len(examples)]
            loss = model(input_ids=ids[None], labels=labels[None]).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
    if not memorized():
        raise RuntimeError(f"the tiny judge did not memorize its answers in {step} steps")
    model.eval()
    model.generation_config.do_sample = False
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "training.json").write_text(json.dumps({"steps": step, "final_loss": float(loss.detach())}))
    return out_dir


def build_tiny_base(out_dir: Path, seed: int = 0) -> Path:
    """An untrained tiny Llama with a BPE tokenizer trained on the sample reports (a stand-in base model)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    texts = [t for r, c, _ in training_pairs() for t in (r, c)]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts * 2 + ["Human: Assistant: ground truth predicted report quality evaluate"],
                            trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                        pad_token="</s>")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return Path(out_dir)
