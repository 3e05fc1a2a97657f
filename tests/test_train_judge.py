"""Judge fine-tuning with peft + trl on a tiny base model (CPU LoRA): both recipes, outputs and curve."""
from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES
from tiny_judge import build_tiny_base, training_pairs

import radmetrics
from radmetrics.train.judge_sft import JudgeSFTConfig, green_examples, train_judge, vert_examples


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return build_tiny_base(tmp_path_factory.mktemp("base") / "tiny-base")


def test_vert_recipe_trains_and_serves(base, tmp_path):
    from radmetrics.data.rate_eval import read_rate_eval

    rows = read_rate_eval(FIXTURES / "rate_eval")
    examples, dropped = vert_examples([r["reference"] for r in rows], [r["candidate"] for r in rows],
                                      [r["expert_score"] for r in rows], [r["expert_higher_is_better"] for r in rows])
    assert examples[0]["completion"][0]["content"] == "0.4" and dropped == []  # Score 2 of 5, one decimal
    out = train_judge(JudgeSFTConfig(str(base), str(tmp_path / "vert-judge"), recipe="vert", max_steps=4,
                                     batch_size=2, lora_r=4, lora_alpha=8, learning_rate=1e-3), examples)
    assert out["train_examples"] == 5 and out["validation_examples"] == 1 and len(out["losses"]) == 4
    merged = tmp_path / "vert-judge" / "merged"
    assert (merged / "config.json").exists() and (tmp_path / "vert-judge" / "adapter" / "adapter_config.json").exists()
    assert (tmp_path / "vert-judge" / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"
    # the chat template travels with the judge, so vLLM / lm-eval --apply_chat_template serve it as trained
    tokenizer_config = json.loads((merged / "tokenizer_config.json").read_text())
    assert "chat_template" in tokenizer_config or (merged / "chat_template.jinja").exists()
    judge = radmetrics.get_judge("transformers", model=str(merged), cache=False)
    judge.backend.load()
    assert judge.backend.chat_format == "tokenizer"  # the saved template, not GREEN's (not a GREEN model)


def test_vert_recipe_refuses_error_counts_and_leaves_out_rows_without_a_score():
    """Review 19 (2): RadEval's and ReXVal's expert_score counts errors (lower is better); counts that happened to lie
    in [0, 1] were taught as VERT scores, a judge trained on the inverted scale without a word. And one row without
    an expert score stopped the whole run."""
    from radmetrics.errors import InputError

    refs, cands = ["Small effusion.", "Cardiomegaly.", "No acute process."], ["Small effusion.", "Normal.", "Normal."]
    with pytest.raises(InputError, match="lower-is-better"):
        vert_examples(refs, cands, [0.0, 1.0, 0.0], [False, False, False])
    examples, dropped = vert_examples(refs, cands, [1.0, None, 0.4], [True, True, True])
    assert [e["completion"][0]["content"] for e in examples] == ["1.0", "0.4"] and dropped == ["row 2: no expert score"]


def test_training_data_whose_column_mixes_kinds_is_one_line(tmp_path):
    """A JSON Lines column that mixes kinds (expert_score 1 and "1", a direction 0 and false) stopped `train judge`
    with pyarrow's traceback: now one InputError naming the file (review 20, after F5)."""
    from radmetrics.cli.train import _load_pairs_source
    from radmetrics.errors import InputError

    # review 21 (M4): a whole number past 64 bits (a long accession number) was pyarrow's OverflowError traceback
    for column, first, second in (("expert_score", 1, "1"), ("expert_score", 0, False),
                                  ("accession", 12345678901234567890123, 1)):
        path = tmp_path / "pairs.jsonl"
        path.write_text(json.dumps({"reference": "a", "candidate": "b", column: first}) + "\n"
                        + json.dumps({"reference": "c", "candidate": "d", column: second}) + "\n")
        with pytest.raises(InputError, match=f"pairs.jsonl: column '{column}' holds values a dataset cannot store"):
            _load_pairs_source(str(path))


def test_vert_recipe_reads_csv_text_as_jsonl_values(tmp_path):
    """Review 20 (F5): `train judge` reads a CSV's values as text: expert_score "1" was a TypeError, an empty cell
    one too (instead of left out), and expert_higher_is_better "False" passed the refusal. The same pairs as JSON
    Lines and as CSV give the same examples."""
    from radmetrics.cli.train import _load_pairs_source
    from radmetrics.errors import InputError

    rows = [("Small effusion.", "Small effusion.", 1, True), ("Cardiomegaly.", "Normal.", None, True),
            ("No acute process.", "Normal.", 0.4, True)]
    jsonl, csv = tmp_path / "pairs.jsonl", tmp_path / "pairs.csv"
    jsonl.write_text("".join(json.dumps({"reference": r, "candidate": c, "expert_score": s,
                                         "expert_higher_is_better": h}) + "\n" for r, c, s, h in rows))
    csv.write_text("reference,candidate,expert_score,expert_higher_is_better\n"
                   + "".join(f"{r},{c},{'' if s is None else s},{h}\n" for r, c, s, h in rows))
    built = []
    for path in (jsonl, csv):
        data = _load_pairs_source(str(path))
        built.append(vert_examples(data["reference"], data["candidate"], data["expert_score"],
                                   data["expert_higher_is_better"]))
    assert built[0] == built[1] and built[1][1] == ["row 2: no expert score"]
    assert [e["completion"][0]["content"] for e in built[1][0]] == ["1.0", "0.4"]
    for false in ("False", "false", "0", 0):  # the converters' yes/no words
        with pytest.raises(InputError, match="lower-is-better"):
            vert_examples(["a"], ["b"], ["1"], [false])
    with pytest.raises(InputError, match="row 1: expert_higher_is_better = 'maybe' is not a yes/no value"):
        vert_examples(["a"], ["b"], ["1"], ["maybe"])


def test_green_recipe_uses_teacher_analyses(base, tmp_path, fake_judge):
    refs = [r for r, _, _ in training_pairs()]
    cands = [c for _, c, _ in training_pairs()] + ["GARBLED output please"]
    rows, dropped = green_examples(refs + [refs[0]], cands, radmetrics.get_judge("fake", cache=False))
    assert len(rows) == 6 and dropped == ["row 7: no [Clinically Significant Errors] section and no [Matched "
                                          "Findings] section (truncated or not GREEN format)"]
    assert rows[0]["prompt"].startswith("<|user|>\nObjective:") and rows[0]["completion"].endswith("</s>")
    out = train_judge(JudgeSFTConfig(str(base), str(tmp_path / "judge-out"), recipe="green", max_steps=3,
                                     batch_size=2, lora_r=4, lora_alpha=8), rows)
    assert out["merged"] and len(out["losses"]) == 3
    # GREEN's chat template is saved with the judge: under a folder name that does not say GREEN, radmetrics
    # (chat_template auto) still gives it GREEN's format for every prompt, as it was trained
    judge = radmetrics.get_judge("transformers", model=out["merged"], cache=False)
    judge.backend.load()
    assert judge.backend.chat_format == "green"


def test_config_from_yaml_with_flag_overrides(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text("base_model: some/base\noutput_dir: out\nrecipe: green\nlora_r: 16\nlearning_rate: 0.001\n")
    config = JudgeSFTConfig.from_yaml(path, lora_r=4, epochs=None)
    assert (config.base_model, config.recipe, config.lora_r, config.learning_rate) == ("some/base", "green", 4, 0.001)
    assert config.lora_alpha == 64 and config.validation_fraction == 0.1  # VERT's defaults


@pytest.mark.parametrize("setting,value,message", [
    # transformers reads max_steps <= 0 as "not set": max_steps 0 trained by epochs instead
    ("max_steps", 0, "max_steps must be a whole number of at least 1 (or -1: train by epochs), not 0"),
    ("learning_rate", float("nan"), "learning_rate must be a finite number above 0, not nan"),
    ("epochs", 0, "epochs must be a finite number above 0, not 0"),
    ("lora_r", 0, "lora_r must be a whole number of at least 1, not 0"),
    ("batch_size", -2, "batch_size must be a whole number of at least 1, not -2"),
    ("validation_fraction", 1.0, "validation_fraction must be a number from 0 up to (not including) 1, not 1.0"),
])
def test_a_training_setting_out_of_range_is_one_line_before_any_model_loads(tmp_path, setting, value, message):
    with pytest.raises(radmetrics.InputError, match=re.escape(f"training setting {message}")):
        JudgeSFTConfig(base_model="some/base", output_dir=str(tmp_path), **{setting: value})
    path = tmp_path / "judge.yaml"  # a --config file's value too
    path.write_text(f"base_model: some/base\noutput_dir: out\n{setting}: {'.nan' if value != value else value}\n")
    with pytest.raises(radmetrics.InputError, match=re.escape(f"training setting {message}")):
        JudgeSFTConfig.from_yaml(path)


def test_training_flags_out_of_range_are_usage_errors(tmp_path):
    """train er2score --steps 0 saved an untrained model, then an IndexError traceback (its first loss); --lam nan
    trained a model of nan weights; train judge --max-steps 0 trained by epochs."""
    from click.testing import CliRunner
    from conftest import SAMPLE

    from radmetrics.cli import cli

    pairs = str(SAMPLE / "pairs.jsonl")
    for args, flag in ((["er2score", "--pairs", pairs, "--steps", "0"], "--steps"),
                       (["er2score", "--pairs", pairs, "--lam", "nan"], "--lam"),
                       (["er2score", "--pairs", pairs, "--learning-rate", "-1e-4"], "--learning-rate"),
                       (["er2score", "--pairs", pairs, "--batch-size", "0"], "--batch-size"),
                       (["judge", "--data", pairs, "--max-steps", "0"], "--max-steps"),
                       (["judge", "--data", pairs, "--epochs", "nan"], "--epochs"),
                       (["judge", "--data", pairs, "--lora-r", "0"], "--lora-r")):
        result = CliRunner().invoke(cli, ["train", *args, "--base", "some/base", "-o", str(tmp_path / "out")])
        assert result.exit_code == 2 and f"Invalid value for '{flag}'" in result.output, (args, result.output)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # three CLI runs that train (~30 s)
def test_an_interrupted_training_resumes_from_its_last_checkpoint(base, tmp_path):
    """Review 27 (M1): a killed or interrupted `train judge` kept nothing it had trained (no checkpoints), said "a
    rerun trains from the start", and the rerun was refused (the folder held an empty checkpoints/). Now a
    checkpoint every `save_steps`; the same command resumes from the last one, and a rerun with other settings
    does not take it over without --overwrite."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import SAMPLE

    (tmp_path / "settings.yaml").write_text("save_steps: 2\n")

    def command(*extra):
        return [sys.executable, "-m", "radmetrics.cli", "train", "judge", "--base", str(base), "--recipe", "green",
                "--data", str(SAMPLE / "pairs.jsonl"), "--teacher-replay", str(SAMPLE / "green_replay.jsonl"),
                "-o", "out", "--config", "settings.yaml", "--max-steps", "24", "--lora-r", "4", "--lora-alpha", "8",
                "--batch-size", "2", *extra]

    first = subprocess.Popen(command(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    deadline = time.monotonic() + 120
    while not list((tmp_path / "out" / "checkpoints").glob("checkpoint-*/trainer_state.json")):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 143 and "the same command resumes from it" in err, err[-2000:]
    assert not (tmp_path / "out" / "training.json").exists()

    other = subprocess.run(command("--learning-rate", "0.001"), cwd=tmp_path, capture_output=True, text=True)
    assert other.returncode == 2 and "holds the checkpoints of an interrupted training with other settings" in \
        other.stderr, other.stderr[-2000:]

    again = subprocess.run(command(), cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    step = int(re.search(r"Resumed the interrupted training from step (\d+)", again.stderr).group(1))
    assert 2 <= step < 24
    summary = json.loads((tmp_path / "out" / "training.json").read_text())
    assert summary["resumed_from_step"] == step and len(summary["losses"]) == 24  # the whole curve
    assert (tmp_path / "out" / "merged" / "config.json").exists() and not (tmp_path / "out" / "checkpoints").exists()


def test_a_misspelt_config_setting_is_one_line_naming_the_valid_ones(tmp_path):
    """Review 27: `train judge --config x.yaml` with `lora_rank: 4` was a TypeError traceback."""
    import subprocess
    import sys

    from conftest import SAMPLE

    (tmp_path / "x.yaml").write_text("lora_rank: 4\n")
    (tmp_path / "list.yaml").write_text("- 4\n")
    for name, expected in (("x.yaml", "Unknown --config x.yaml setting 'lora_rank'. Did you mean 'lora_r'?"),
                           ("list.yaml", "--config list.yaml: not a mapping of settings")):
        out = subprocess.run([sys.executable, "-m", "radmetrics.cli", "train", "judge", "--base", "some/base",
                              "--data", str(SAMPLE / "pairs.jsonl"), "--config", name, "-o", "out"],
                             cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 2 and expected in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]


def test_a_judge_trained_on_a_relative_base_folder_loads_from_another_directory(base, tmp_path, monkeypatch,
                                                                               fake_judge):
    """Review 46: `train judge --base models/base` gave the base to transformers as typed, so peft recorded it relative
    to the folder training ran in (adapter_config.json and its card): the adapter loaded only from there, and `hub
    push` run elsewhere took "models/base" for a Hub id and pushed it as the base, even with --base-model. A local
    base is recorded by its full path (as `train er2score`'s, review 45)."""
    import shutil

    rows, _ = green_examples([r for r, _, _ in training_pairs()], [c for _, c, _ in training_pairs()],
                             radmetrics.get_judge("fake", cache=False))
    shutil.copytree(base, tmp_path / "models" / "base")
    monkeypatch.chdir(tmp_path)
    out = train_judge(JudgeSFTConfig("models/base", "judge", recipe="green", max_steps=1, batch_size=2, lora_r=4,
                                     lora_alpha=8, merge=False), rows)
    adapter = tmp_path / "judge" / "adapter"
    full = str((tmp_path / "models" / "base").resolve())
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == full
    assert out["config"]["base_model"] == full
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    judge = radmetrics.get_judge("transformers", model=str(adapter), cache=False)
    judge.backend.load()  # before: "models/base is not a local folder and is not a valid model identifier"
