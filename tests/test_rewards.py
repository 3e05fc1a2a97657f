"""radmetrics metrics as TRL rewards: the reward-function contract (plain and conversational completions,
dataset columns, None for unscored with the reasons logged), orientation and scaling, GRPO training on CPU with
the tiny GREEN judge and a tiny trained ER²Score, and an OpenAI-compatible judge with faults."""
from __future__ import annotations

import logging
import math

import pytest
from tiny_policy import build_tiny_policy, report_dataset, train_grpo

import radmetrics
from radmetrics.errors import InputError, RadmetricsError
from radmetrics.rewards import er2score_reward, reward_function
from radmetrics.types import GenerationConfig

REFS = ["Small left effusion. No pneumothorax.", "Cardiomegaly with edema.", "Normal chest.", "Normal chest."]
CANDS = ["Small left effusion.", "Cardiomegaly.", "GARBLED report", ""]


def nan_to_none(values):
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


# -- the contract, on the fake judge (plugin seam) ------------------------------------------------------------
def test_reward_matches_score_plain_and_conversational(fake_judge, caplog):
    reward = reward_function("green", backend="fake", cache=False)
    assert reward.__name__ == "green"
    expected = radmetrics.score("green", REFS, CANDS, backend="fake", cache=False, progress=False).scores
    assert expected[0] is not None and expected[2] is None  # GARBLED: the judge's answer is unreadable
    assert expected[3] == 0.0  # an empty completion is judged as written: it counts against the policy
    with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
        plain = reward(prompts=["p"] * 4, completions=CANDS, reference=REFS, other_column=[1, 2, 3, 4])
    assert plain == expected  # unscored -> None, the rest the metric's own score
    lines = [r.getMessage() for r in caplog.records if r.name == "radmetrics.rewards"]
    assert len(lines) == 1 and "1 of 4 completions unscored" in lines[0] and "(x1)" in lines[0]
    conversational = [[{"role": "assistant", "content": c}] for c in CANDS[:3]]
    conversational.append([{"role": "assistant", "content": [{"type": "text", "text": ""}]}])
    assert reward(prompts=[[{"role": "user", "content": "p"}]] * 4, completions=conversational,
                  reference=REFS) == expected


def test_a_completion_that_reads_like_a_missing_value_is_judged_as_written(fake_judge):
    """Review 12: a completion "N/A" or "None" was left unscored as a missing-value marker (a rule for spreadsheet
    cells), so a policy answering "N/A" escaped the reward of its other answers; a completion is always text the
    policy wrote. `radmetrics score` on a file keeps the marker rule."""
    reward = reward_function("green", backend="fake", cache=False)
    rewards = reward(prompts=["p"] * 3, completions=["N/A", "None", "Small left effusion."], reference=REFS[:1] * 3)
    assert all(r is not None for r in rewards) and rewards[0] <= rewards[2]
    from_file = radmetrics.score("green", REFS[:1] * 2, ["N/A", "None"], backend="fake", cache=False, progress=False)
    assert from_file.scores == [None, None] and "missing-value marker" in from_file.judgments[0].reason


def test_an_assistant_turn_with_no_text_is_judged_as_an_empty_report(fake_judge):
    """A conversational completion whose assistant turn holds no text (a bare tool call: content None or absent; only
    an image block) was read as a missing candidate and left unscored (None), while content "" was judged and got
    GREEN 0: a policy escaped the reward by answering with no text. Both are now the empty report they are."""
    reward = reward_function("green", backend="fake", cache=False)
    no_text = [[{"role": "assistant", "content": None, "tool_calls": [{"type": "function",
                                                                        "function": {"name": "f", "arguments": {}}}]}],
               [{"role": "assistant", "tool_calls": []}],
               [{"role": "assistant", "content": [{"type": "image"}]}],
               [{"role": "assistant", "content": ""}]]
    assert reward(completions=no_text, reference=REFS[:1] * 4) == [0.0] * 4
    spread = [[{"role": "assistant", "content": "Small left"}, {"role": "tool", "content": "lookup result"},
               {"role": "assistant", "content": None}, {"role": "assistant", "content": "effusion."}]]
    assert reward(completions=spread, reference=REFS[:1]) == reward(completions=["Small left\neffusion."],
                                                                     reference=REFS[:1])
    assert reward(completions=[[{"role": "tool", "content": "x"}]], reference=REFS[:1]) == [None]  # no assistant turn


def test_a_reasoning_policys_draft_is_not_judged_as_its_report(fake_judge, monkeypatch):
    """A reasoning policy (Qwen3, R1) writes "<think>...</think>" before its report, and the judge was given the draft
    as part of the report: findings it only considered counted as reported. The report after the block is judged;
    a "</think>" alone ends drafting the chat template opened; a completion cut inside its block wrote no report
    and is judged as the empty report (not unscored: no way around the reward)."""
    reward = reward_function("green", backend="fake", cache=False)
    asked = []
    backend = reward.judge.backend
    original = backend.generate
    monkeypatch.setattr(backend, "generate", lambda prompts, *a, **k: asked.extend(prompts) or
                        original(prompts, *a, **k))
    report = CANDS[0]
    drafted = [f"<think>Maybe a right pneumothorax? No.</think>\n\n{report}",
               [{"role": "assistant", "content": f"Maybe a right pneumothorax? No.\n</think>\n{report}"}],
               report]
    rewards = reward(completions=drafted, reference=REFS[:1] * 3)
    assert rewards[0] == rewards[1] == rewards[2] is not None
    assert not any("pneumothorax? No." in prompt for prompt in asked)
    cut = reward(completions=["<think>The effusion is on the left, so"], reference=REFS[:1])
    assert cut == reward(completions=[""], reference=REFS[:1]) == [0.0]


def test_one_batched_judge_call_per_reward_call(fake_judge, monkeypatch):
    reward = reward_function("green", backend="fake", cache=False)
    calls = []
    backend = reward.judge.backend
    original = backend.generate
    monkeypatch.setattr(backend, "generate", lambda prompts, *a, **k: calls.append(len(prompts)) or
                        original(prompts, *a, **k))
    reward(prompts=["p"] * 4, completions=CANDS, reference=REFS)
    assert calls == [4]  # every row in one call


def test_a_reward_on_the_default_judge_pickles_after_its_first_call(fake_judge):
    """reward_function("green") with no judge= (the system's default judge) could not be pickled once it had judged
    a batch: "a reward over a ready judge object cannot be pickled; pass judge=<model id> instead", though no judge
    object was given. Only a reward made over a ready judge object is refused; the others reload their judge."""
    import pickle

    reward = reward_function("green", backend="fake", cache=False)
    first = reward(completions=CANDS[:2], reference=REFS[:2])
    copy = pickle.loads(pickle.dumps(reward))
    assert copy(completions=CANDS[:2], reference=REFS[:2]) == first
    ready = reward_function("green", judge=radmetrics.get_judge("fake", cache=False), cache=False)
    with pytest.raises(TypeError, match="ready judge object"):
        pickle.dumps(ready)


def test_orientation_scale_fallback_and_metrics(fake_judge, caplog):
    refs, cands = REFS[:2], ["Small left effusion. Rib fracture.", "Cardiomegaly."]
    finerad = radmetrics.score("finerad_score", refs, cands, backend="fake", cache=False, progress=False).scores
    assert finerad[0] > 0  # the fake judge marks the rib-fracture line as an urgent error
    lower = reward_function("finerad_score", backend="fake", cache=False)
    assert lower(completions=cands, reference=refs) == [-s for s in finerad]
    ranged = reward_function("finerad_score", backend="fake", cache=False, scale=(0, 8), name="finerad_01")
    assert ranged.__name__ == "finerad_01"
    assert ranged(completions=cands, reference=refs) == [max(0.0, (8 - s) / 8) for s in finerad]
    green = radmetrics.score("green", REFS, CANDS, backend="fake", cache=False, progress=False).scores
    metrics, extra = {}, {}
    fallback = reward_function("green", backend="fake", cache=False, on_unscored=-1.0, scale=10)
    got = fallback(completions=CANDS, reference=REFS, log_metric=metrics.__setitem__,
                   log_extra=extra.__setitem__, trainer_state=type("S", (), {"global_step": 7})())
    assert got == [g * 10 if g is not None else -1.0 for g in green]
    assert metrics["green/unscored_frac"] == 0.25 and metrics["green/samples_per_s"] > 0
    assert extra["green_unscored_reason"][0] is None and "GREEN format" in extra["green_unscored_reason"][2]
    assert "step 7" in caplog.text and "returned the fallback -1.0" in caplog.text
    with pytest.raises(RadmetricsError, match="on_unscored"):
        reward_function("green", on_unscored="zero")
    with pytest.raises(RadmetricsError, match="scale"):
        reward_function("green", scale=(1, 0))


def test_a_scale_range_with_an_infinite_end_is_refused(fake_judge):
    """scale=(0, inf) or (-inf, 1) was accepted and mapped every score to (x - low) / inf or inf / inf = NaN, which
    the clipping to [0, 1] turned into reward 0.0 for every completion: a silent 0. The range must be finite."""
    for scale in ((0, float("inf")), (float("-inf"), 1), (0, float("nan")), (False, True)):
        with pytest.raises(RadmetricsError, match="scale"):
            reward_function("green", backend="fake", cache=False, scale=scale)
    assert reward_function("green", backend="fake", cache=False, scale=[0, 2])(
        completions=["Normal chest."], reference=["Normal chest."]) == [0.5]


def test_lower_is_better_rewards_for_zero_errors_are_zero_not_minus_zero(fake_judge):
    """Review 25 L6: green_ec / green_total_errors / finerad_score negate the count, and 0 errors came back as -0.0,
    which TRL's logs and completions table print as "-0.0"."""
    for name in ("green_ec", "green_total_errors", "finerad_score"):
        reward = reward_function(name, backend="fake", cache=False)
        assert radmetrics.score(name, ["Normal chest."], ["Normal chest."], backend="fake", cache=False,
                                progress=False).scores == [0.0]
        (value,) = reward(completions=["Normal chest."], reference=["Normal chest."])
        assert value == 0.0 and math.copysign(1.0, value) == 1.0, (name, value)
        assert repr(reward_function(name, backend="fake", cache=False, scale=3)(
            completions=["Normal chest."], reference=["Normal chest."])[0]) == "0.0"


def _length_reward(prompts=None, completions=None, **columns):
    return [float(len(c)) for c in completions]


def test_combined_reward_leaves_out_what_any_part_could_not_score(fake_judge, caplog):
    """Review 14 (F2): TRL leaves a completion out of its group only when every reward function returns None; next
    to another function GREEN's None is summed as 0. combined_reward gives TRL one function: the weighted sum, or
    None when any part left the completion unscored."""
    from radmetrics.rewards import combined_reward

    green = reward_function("green", backend="fake", cache=False)
    both = combined_reward(green, _length_reward, weights=[2.0, 0.5])
    assert both.__name__ == "green+_length_reward"
    with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
        rewards = both(prompts=["p"] * 4, completions=CANDS, reference=REFS)
    scores = radmetrics.score("green", REFS, CANDS, backend="fake", cache=False, progress=False).scores
    assert rewards == pytest.approx([None if s is None else 2 * s + 0.5 * len(c) for s, c in zip(scores, CANDS)])
    assert rewards[2] is None  # GARBLED: GREEN could not score it; the length alone is not its reward
    assert "see radmetrics.rewards.combined_reward" in caplog.text  # the part's own log line says what None means
    for bad in ((green,), (green, "x"), ):
        with pytest.raises(RadmetricsError, match="two or more"):
            combined_reward(*bad)
    with pytest.raises(RadmetricsError, match="one finite weight per function"):
        combined_reward(green, _length_reward, weights=[1.0, float("nan")])
    with pytest.raises(RadmetricsError, match="weights are all 0"):
        combined_reward(green, _length_reward, weights=[0.0, 0])
    # review 32: weights near the float limit overflowed the sum to inf, a reward no trainer can use
    huge = combined_reward(_length_reward, _length_reward, weights=[1e308, 1e308], name="huge")
    with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
        assert huge(completions=["ab", ""]) == [None, 0.0]
    assert "huge: the weighted sum overflowed for 1 completion(s)" in caplog.text


def test_none_for_unscored_needs_a_trl_that_leaves_it_out(fake_judge, monkeypatch):
    """Review 14 (F2): before TRL 1.6 a None reward was summed as 0 and entered its group's mean: an unscored
    completion got reward 0 (for a negated metric, the best). With such a TRL installed, on_unscored='none' is
    refused with what to do; a number is the user's explicit choice; without TRL there is nothing to check."""
    import importlib.metadata as md

    real = md.version

    def trl_version(installed):
        def version(name):
            if name == "trl":
                if installed is None:
                    raise md.PackageNotFoundError(name)
                return installed
            return real(name)
        return version

    call = dict(prompts=["p"] * 2, completions=CANDS[:3:2], reference=REFS[:3:2])  # the second is GARBLED
    monkeypatch.setattr(md, "version", trl_version("1.5.0"))
    finerad = reward_function("finerad_score", backend="fake", cache=False)
    with pytest.raises(RadmetricsError, match=r"needs trl>=1.6.0: trl 1.5.0 adds .* as 0"):
        finerad(**call)
    assert finerad.score_batch(REFS[:1], CANDS[:1]).rewards[0] is not None  # reward-check's way in: no trainer
    assert reward_function("green", backend="fake", cache=False, on_unscored=-1.0)(**call)[1] == -1.0
    for fine in (None, "1.6.0"):
        monkeypatch.setattr(md, "version", trl_version(fine))
        assert reward_function("green", backend="fake", cache=False)(**call)[1] is None


def test_missing_reference_column_and_unknown_metric(fake_judge):
    reward = reward_function("green", backend="fake", cache=False, reference_column="gt")
    with pytest.raises(InputError, match="column 'gt'.*passed only these columns: reference"):
        reward(prompts=["p"], completions=["x"], reference=["y"], trainer_state=None)
    with pytest.raises(radmetrics.UnknownNameError, match="Did you mean 'green'"):
        reward_function("gren")


def test_a_reference_in_a_column_trl_keeps_from_rewards_is_named_as_such(fake_judge):
    """A report generator's SFT data (prompt, completion = the radiologist's report) reused for GRPO with
    reference_column="completion": TRL passes every column but prompt, completion and completion_ids, so the error
    said to add the column or pass reference_column=<its name>, which the user had done. It now says TRL does not
    pass that column and to copy the reference into another one."""
    reward = reward_function("green", backend="fake", cache=False, reference_column="completion")
    with pytest.raises(InputError, match="TRL does not pass dataset column 'completion' to reward functions.*"
                                         "copy the reference into another column"):
        reward(prompts=["p"], completions=["x"], completion_ids=[[1]], trainer_state=None)


def test_plugin_scoring_system_is_a_reward(monkeypatch, tmp_path):
    import json

    from conftest import REPO

    from radmetrics.plugins import get_scoring_system, register_plugin, unregister_plugin

    monkeypatch.syspath_prepend(str(REPO / "tests" / "plugin_pkg"))
    import radmetrics_example_plugin as plugin  # a third-party scoring system, registered through the real seam

    register_plugin(plugin, name="example-plugin-rewards")
    try:
        overlap = get_scoring_system("word_overlap")
        replay = tmp_path / "answers.jsonl"
        replay.write_text("\n".join(json.dumps({"prompt": overlap.build_prompt("Normal chest.", c), "response": a})
                                    for c, a in [("Normal chest.", "7"), ("Something else.", "no idea")]))
        reward = reward_function("word_overlap", backend="replay", judge_options={"path": str(replay)})
        assert reward.__name__ == "word_overlap"
        assert reward(completions=["Normal chest.", "Something else."], reference=["Normal chest."] * 2) == [0.7, None]
    finally:
        unregister_plugin(name="example-plugin-rewards")


def test_memory_cap_sizes_the_in_process_judge(tiny_judge):
    from transformers import AutoConfig

    from radmetrics.rewards.layouts import kv_bytes_per_token, memory_capped_options, weight_bytes

    config = AutoConfig.from_pretrained(tiny_judge)
    # tiny judge: 2 layers x 1 KV head x head_dim 64 x (K and V) x 4 bytes (fp32) = 1024 bytes per token
    assert kv_bytes_per_token(config, 4) == 2 * 2 * 1 * 64 * 4
    options = memory_capped_options("transformers", str(tiny_judge), 0.01, {"dtype": "fp32"})
    assert options == {"max_batch_tokens": int((0.01 * 2**30 * 0.85 - weight_bytes(config, 4)) // 1024)}
    reward = reward_function("green", judge=str(tiny_judge), judge_options={"dtype": "fp32"}, cache=False,
                             judge_memory_gib=0.01)
    assert reward.judge.backend.max_batch_tokens == options["max_batch_tokens"]
    with pytest.raises(RadmetricsError, match="too small"):
        memory_capped_options("transformers", str(tiny_judge), 0.0001)
    with pytest.raises(RadmetricsError, match="in-process judges"):
        memory_capped_options("openai", "x", 1)
    # nan passed "gib <= 0" (vllm got 0.95 of the shared GPU, transformers a ValueError traceback); inf overflowed
    for gib in (float("nan"), float("inf"), 0, -2):
        with pytest.raises(RadmetricsError, match="judge_memory_gib must be a positive finite number"):
            memory_capped_options("transformers", str(tiny_judge), gib)


# -- GRPO on CPU ----------------------------------------------------------------------------------------------
class Seen:
    """A reward function that records what TRL passed and scores nothing (so that rows every real reward
    leaves unscored stay unscored for TRL)."""

    __name__ = "seen"

    def __init__(self):
        self.batches = []

    def __call__(self, prompts, completions, reference, **kwargs):
        self.batches.append((list(completions), list(reference)))
        return [None] * len(completions)


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return build_tiny_policy(tmp_path_factory.mktemp("policy") / "tiny-policy")


@pytest.mark.slow
def test_grpo_with_green_from_the_tiny_judge(policy, tiny_judge, tmp_path, caplog):
    config = GenerationConfig(max_new_tokens=160)
    green = reward_function("green", judge=str(tiny_judge), cache=tmp_path / "cache.sqlite", config=config)
    seen = Seen()
    with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
        trainer = train_grpo(policy, [green, seen], report_dataset(), tmp_path / "grpo", weights=[1.0, 0.0])
    steps = [h for h in trainer.state.log_history if "rewards/green/mean" in h]
    assert len(steps) == 2 and len(seen.batches) == 2  # both steps ran
    everything = []
    for (completions, references), logged in zip(seen.batches, steps):
        expected = radmetrics.score("green", references, completions, judge=str(tiny_judge), cache=False,
                                    config=config, progress=False).scores
        scored = [s for s in expected if s is not None]
        if scored:
            assert logged["rewards/green/mean"] == pytest.approx(sum(scored) / len(scored))
        else:  # TRL logs the mean of an all-None step as None
            assert logged["rewards/green/mean"] is None or math.isnan(logged["rewards/green/mean"])
        everything += expected
    # the last step's per-completion rewards as TRL keeps them (None -> NaN)
    assert nan_to_none(list(trainer._logs["rewards"]["green"])) == pytest.approx(expected)
    assert any(s is not None for s in everything)  # the judge scored completions...
    assert sum(s is None for s in everything) >= 4  # ...and the empty-reference prompt's 4 came back None
    assert "reference is empty (x4)" in caplog.text
    assert green.calls == 2 and green.completions == 16


@pytest.fixture(scope="module")
def tiny_er2score(tmp_path_factory):
    import fake_judge
    from tiny_judge import build_tiny_base, training_pairs

    from radmetrics.er2score.data import generate_pairs
    from radmetrics.er2score.model import MultiRewardModel
    from radmetrics.er2score.pairs import CRITERIA
    from radmetrics.er2score.train import train_reward_model
    from radmetrics.plugins import register_plugin, unregister_plugin

    register_plugin(fake_judge, name="fake-teacher-rewards")
    try:
        # the quality convention (fewer errors chosen): a higher-is-better model, whose reward is its own score
        pairs, _ = generate_pairs(radmetrics.get_judge("fake", cache=False), [r for r, _, _ in training_pairs()],
                                  convention="quality")
    finally:
        unregister_plugin(name="fake-teacher-rewards")
    folder = tmp_path_factory.mktemp("er2")
    model = MultiRewardModel.new(str(build_tiny_base(folder / "base")), CRITERIA["radcliq"])
    train_reward_model(model, pairs, steps=20, batch_size=6, lr=5e-3, progress=False)
    return model.save(folder / "er2score")


def test_er2score_reward_model_views_agree(tiny_er2score):
    import torch

    from radmetrics.er2score.model import MultiRewardModel
    from radmetrics.er2score.pairs import reward_input

    reward = er2score_reward(str(tiny_er2score))
    refs, cands = REFS[:3], CANDS[:3]
    totals = reward(completions=cands, reference=refs)
    official = MultiRewardModel.load(tiny_er2score).score(refs, cands)
    assert totals == pytest.approx([o["er2score"] for o in official], abs=1e-4)
    criteria = reward.criteria_functions()
    assert [c.__name__ for c in criteria][0] == "er2score_false_prediction"
    per = [c(completions=cands, reference=refs) for c in criteria]
    assert [sum(v) for v in zip(*per)] == pytest.approx(totals, abs=1e-5)
    assert reward.forward_passes == 1  # the criteria were answered from the total's forward pass
    module = reward.as_reward_model()
    batch = reward.tokenizer([reward_input(r, c) for r, c in zip(refs, cands)], padding=True, return_tensors="pt")
    with torch.inference_mode():
        logits = module(**batch).logits
    assert logits.shape == (3, 7) and logits[:, 0].tolist() == pytest.approx(totals, abs=1e-4)
    too_long = er2score_reward(str(tiny_er2score), max_length=16)
    assert too_long(completions=["x"], reference=["Normal chest."]) == [None]
    assert "over max_length=16" in too_long.last.reasons[0]


def test_er2score_reward_of_a_lower_is_better_model_is_negated(tiny_er2score, tmp_path):
    """`radmetrics train er2score` on RadCliQ in the paper's convention (its default) saves higher_is_better false:
    the rewards predict error counts. The reward returned that sum as it was, so GRPO was pushed towards MORE errors.
    As for every lower-is-better metric, the reward (total, per criterion, the reward-model view) is now negated."""
    import json
    import shutil

    import torch

    from radmetrics.er2score.model import CONFIG_FILE, MultiRewardModel
    from radmetrics.er2score.pairs import reward_input

    folder = tmp_path / "er2score-errors"
    shutil.copytree(tiny_er2score, folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "higher_is_better": False}))
    refs, cands = REFS[:3], CANDS[:3]
    errors = [o["er2score"] for o in MultiRewardModel.load(folder).score(refs, cands)]
    reward = er2score_reward(str(folder))
    assert reward(completions=cands, reference=refs) == pytest.approx([-e for e in errors], abs=1e-4)
    per = [c(completions=cands, reference=refs) for c in reward.criteria_functions()]
    assert [sum(v) for v in zip(*per)] == pytest.approx([-e for e in errors], abs=1e-4)
    assert [s["er2score"] for s in reward.score(refs, cands)] == pytest.approx(errors, abs=1e-4)  # the model's own
    assert reward.score(refs, cands)[0]["higher_is_better"] is False
    ranged = er2score_reward(str(folder), scale=(-100, 100))  # (low, high) in the model's units: 1 at the low end
    assert ranged(completions=cands, reference=refs) == pytest.approx([(100 - e) / 200 for e in errors], abs=1e-5)
    batch = reward.tokenizer([reward_input(r, c) for r, c in zip(refs, cands)], padding=True, return_tensors="pt")
    with torch.inference_mode():
        logits = reward.as_reward_model()(**batch).logits
    assert logits[:, 0].tolist() == pytest.approx([-e for e in errors], abs=1e-4)  # best-of-n picks the fewest


def test_a_reward_model_answering_nan_leaves_the_completion_unscored(tiny_er2score, tmp_path, caplog):
    """A reward model that overflows (fp16) reads NaN or inf. The reward counted it as scored: no reason logged,
    unscored_frac 0, and with scale=(low, high) the clipping turned NaN into reward 0.0, a silent 0 that looks like
    the worst score. A score that is not a finite number is now unscored with the reason, like an unreadable answer."""
    import shutil

    import torch

    from radmetrics.er2score.model import HEAD_FILE

    folder = tmp_path / "er2score-overflow"
    shutil.copytree(tiny_er2score, folder)
    head = torch.load(folder / HEAD_FILE, weights_only=True)
    head["bias"][0] = float("nan")  # the first criterion overflows for every input
    torch.save(head, folder / HEAD_FILE)
    refs, cands = REFS[:2], CANDS[:2]
    metrics = {}
    for scale in (None, (-100, 100)):
        reward = er2score_reward(str(folder), scale=scale)
        with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
            assert reward(completions=cands, reference=refs, log_metric=metrics.__setitem__) == [None, None]
        assert "score is not a finite number (nan)" in reward.last.reasons[0] and reward.unscored == 2
        assert metrics["er2score/unscored_frac"] == 1.0
    assert "2 of 2 completions unscored" in caplog.text
    criteria = er2score_reward(str(folder)).criteria_functions()
    assert criteria[0](completions=cands, reference=refs) == [None, None]
    assert None not in criteria[1](completions=cands, reference=refs)  # the other criteria read fine


def test_er2score_reward_refuses_judge_settings_it_does_not_use(tiny_er2score, monkeypatch, capsys):
    """ER²Score is a reward model, not a judge behind a backend: reward_function('er2score', backend='openai',
    judge_options={'base_url': ...}) and `reward-check -m er2score --base-url/--replay/--judge-option
    max_batch_tokens=...` were a TypeError traceback (an unexpected keyword argument of ER2ScoreReward). They are
    now one-line errors naming what ER²Score takes; its own options (batch_size, dtype...) still pass."""
    from radmetrics.cli import main

    for kwargs, message in (({"backend": "openai", "judge_options": {"base_url": "http://127.0.0.1:1/v1"}},
                             "no judge backend"),
                            ({"judge_options": {"max_batch_tokens": 100}}, "takes no option 'max_batch_tokens'"),
                            ({"judge_memory_gib": 8}, "judge_memory_gib")):
        with pytest.raises(RadmetricsError, match=message):
            reward_function("er2score", judge=str(tiny_er2score), **kwargs)
    assert reward_function("er2score", judge=str(tiny_er2score), judge_options={"batch_size": 2}).shared.batch_size == 2
    src = tiny_er2score.parent / "completions.jsonl"
    src.write_text('{"prompt": "A", "reference": "Normal chest.", "completion": "Normal chest."}\n')
    for flags, message in ((["--backend", "openai", "--base-url", "http://127.0.0.1:1/v1"], "no judge backend"),
                           (["--replay", str(src)], "no judge backend"),
                           (["--judge-option", "max_batch_tokens=100"], "--judge-option")):
        monkeypatch.setattr("sys.argv", ["radmetrics", "reward-check", "-m", "er2score", "--judge", str(tiny_er2score),
                                         "-i", str(src), "--completions", *flags])
        with pytest.raises(SystemExit) as exit_info:
            main()
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err and "Traceback" not in err, (flags, err)


def test_er2score_reward_reads_the_judges_dtype_names(tiny_er2score):
    """dtype='float32' (how the judges' dtype option is also spelt) was a KeyError at the first reward call, i.e.
    the first training step; any other unknown dtype too. The judges' names are read, and an unknown one is refused
    when the reward is made, naming the valid ones."""
    refs, cands = REFS[:2], CANDS[:2]
    expected = er2score_reward(str(tiny_er2score), dtype="fp32")(completions=cands, reference=refs)
    assert er2score_reward(str(tiny_er2score), dtype="float32")(completions=cands, reference=refs) == \
        pytest.approx(expected)
    with pytest.raises(RadmetricsError, match="dtype must be one of auto, .*float16.*not 'fp8'"):
        er2score_reward(str(tiny_er2score), dtype="fp8")


@pytest.mark.parametrize("option,value", [("batch_size", -1), ("batch_size", 0), ("batch_size", 2.5),
                                          ("max_length", 0)])
def test_er2score_reward_sizes_below_one_are_refused_when_the_reward_is_made(option, value):
    """batch_size=-1 made no forward pass (a range with a negative step): every reward came back None, with no
    reason; 2.5 was a TypeError at the first training step; max_length=0 left every row unscored."""
    with pytest.raises(RadmetricsError, match=f"ER2Score {option} must be a whole number of at least 1"):
        er2score_reward("no/such-model", **{option: value})  # before any model loads


@pytest.mark.slow
def test_grpo_with_er2score_criteria_conversational(policy, tiny_er2score, tmp_path):
    from radmetrics.er2score.model import MultiRewardModel

    total = er2score_reward(str(tiny_er2score))
    criteria = total.criteria_functions()
    seen = Seen()
    # The criteria sum to the ER²Score (the trained reward); the total rides along with weight 0 to be logged.
    trainer = train_grpo(policy, [*criteria, total, seen], report_dataset(conversational=True), tmp_path / "grpo",
                         weights=[1.0] * len(criteria) + [0.0, 0.0])
    steps = [h for h in trainer.state.log_history if "rewards/er2score/mean" in h]
    assert len(steps) == 2 and total.forward_passes == 2  # one forward pass per completion batch
    official = MultiRewardModel.load(tiny_er2score)
    for (completions, references), logged in zip(seen.batches, steps):
        assert isinstance(completions[0], list) and completions[0][0]["role"] == "assistant"
        texts = [c[0]["content"] for c in completions]
        official_scores = official.score([r or "x" for r in references], texts)
        # rows with an empty reference are None for the reward (nothing to score against)
        scored = [o["er2score"] for o, r in zip(official_scores, references) if r.strip()]
        assert logged["rewards/er2score/mean"] == pytest.approx(sum(scored) / len(scored), abs=1e-4)
        assert logged["reward"] == pytest.approx(logged["rewards/er2score/mean"], abs=1e-4)
    last = nan_to_none(list(trainer._logs["rewards"]["er2score"]))
    assert last == pytest.approx(total.last.rewards)
    assert sum(1 for b in seen.batches for r in b[1] if not r) == 4  # the empty reference's group
    assert total.unscored == 4


@pytest.mark.slow
def test_grpo_with_a_combined_reward_leaves_unscored_completions_out(policy, fake_judge, tmp_path):
    """Through GRPOTrainer: the completions GREEN could not score (the empty reference's group) are NaN in TRL's
    per-completion rewards for the combined function, not their length reward alone."""
    from radmetrics.rewards import combined_reward

    green = reward_function("green", backend="fake", cache=False)
    both = combined_reward(green, _length_reward, weights=[1.0, 0.01])
    seen = Seen()
    trainer = train_grpo(policy, [both, seen], report_dataset(), tmp_path / "grpo", steps=2, weights=[1.0, 0.0])
    completions, references = seen.batches[-1]
    scores = radmetrics.score("green", references, completions, backend="fake", cache=False, progress=False).scores
    expected = [None if s is None else s + 0.01 * len(c) for s, c in zip(scores, completions)]
    assert nan_to_none(list(trainer._logs["rewards"][both.__name__])) == pytest.approx(expected)
    unscored = [s is None for b in seen.batches for s in radmetrics.score(
        "green", b[1], b[0], backend="fake", cache=False, progress=False).scores]
    assert sum(unscored) >= 4 and green.unscored == sum(unscored)  # the empty reference's group came up


# -- a judge behind an OpenAI-compatible server, with faults ----------------------------------------------------
@pytest.mark.slow
def test_grpo_with_openai_judge_faults(policy, tmp_path, caplog):
    from fake_judge import analysis_for
    from openai_server import FakeOpenAIServer

    from radmetrics.judge.cache import ResponseCache

    cache = tmp_path / "cache.sqlite"
    options = {"concurrency": 1, "max_retries": 1, "backoff": 0.01, "timeout": 0.5}
    # one request at a time: 429 then success; 500 twice (gives up); timeout twice (gives up); the rest fine
    script = ["429", "500", "500", "timeout", "timeout"]
    seen = Seen()
    with FakeOpenAIServer(analysis_for, script=script) as server:
        options["base_url"] = server.base_url
        green = reward_function("green", backend="openai", judge="judge-model", judge_options=options, cache=cache)
        with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
            trainer = train_grpo(policy, [green, seen], report_dataset(empty_reference=False), tmp_path / "grpo",
                                 steps=1, weights=[1.0, 0.0])
    assert trainer.state.global_step == 1
    reasons = [r for r in green.last.reasons if r]
    assert len(reasons) == 2 and green.last.unscored == 2
    assert any("gave up after 2 attempts: HTTP 500" in r for r in reasons)
    assert any("gave up after 2 attempts" in r and ("timeout" in r or "request deadline" in r) for r in reasons)
    assert "2 of 8 completions unscored" in caplog.text
    logged = nan_to_none(list(trainer._logs["rewards"]["green"]))
    assert logged == pytest.approx(green.last.rewards) and logged.count(None) == 2
    # Only the answers that arrived were cached: scoring the same completions again asks for the two failures
    completions, references = seen.batches[0]
    assert len(ResponseCache(cache)) == len(set(completions)) - 2
    port = int(options["base_url"].rsplit(":", 1)[1].split("/")[0])  # the server restarted at its address
    with FakeOpenAIServer(analysis_for, port=port) as healthy:
        again = radmetrics.score("green", references, completions, backend="openai", judge="judge-model",
                                 cache=cache, progress=False, judge_options={**options, "base_url": healthy.base_url})
    assert len(healthy.requests) == 2 and again.summary["num_unscored"] == 0
    assert [s for s, r in zip(again.scores, green.last.rewards) if r is not None] == \
        [r for r in green.last.rewards if r is not None]


# -- radmetrics reward-check ------------------------------------------------------------------------------------
def test_reward_check_on_given_completions(fake_judge, tmp_path):
    import json

    from click.testing import CliRunner

    from radmetrics.cli import cli

    rows = [{"prompt": "A", "reference": "Normal chest.", "completion": "Normal chest."} for _ in range(3)]  # flat
    rows += [{"prompt": "B", "reference": "Small left effusion.", "completion": c}
             for c in ["Small left effusion.", "Small effusion. Nodule.", "Large right effusion."]]
    rows += [{"prompt": "C", "reference": "Cardiomegaly.", "completion": c}
             for c in ["Cardiomegaly.", "GARBLED", "GARBLED again"]]
    # review 14: one text prompt for two studies (the image differs): each study is its own group, judged against
    # its own reference (grouped by the prompt alone, study 2's completions were judged against study 1's)
    rows += [{"prompt": "D", "reference": ref, "completion": ref} for ref in ["Normal chest."] * 2 + ["Cardiomegaly."] * 2]
    src = tmp_path / "completions.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "new" / "folder" / "check.json"  # review finding: a missing folder was a traceback at the end
    result = CliRunner().invoke(cli, ["reward-check", "-m", "green", "-i", str(src), "--completions",
                                      "--backend", "fake", "--no-cache", "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    studies = [g for g in report["per_group"] if g["prompt"] == "D"]
    assert len(studies) == 2 and all(g["scored"] == 2 and g["min"] == g["max"] == 1.0 for g in studies)  # own reference
    groups = {g["prompt"]: g for g in report["per_group"]}
    assert groups["A"]["flat"] and groups["A"]["std"] == 0 and groups["A"]["scored"] == 3
    assert not groups["B"]["flat"] and groups["B"]["max"] > groups["B"]["min"]
    assert groups["C"]["flat"] and groups["C"]["scored"] == 1 and groups["C"]["unscored"] == 2  # one left: flat
    assert report["flat_groups"] == 4 and report["completions"] == 13
    assert report["unscored_share"] == pytest.approx(2 / 13)
    assert sum(report["unscored_reasons"].values()) == 2 and report["reward_samples_per_s"] > 0
    assert "teach GRPO nothing" in result.output


def test_reward_check_writes_its_report_whole(fake_judge, tmp_path, monkeypatch):
    """review 28: check.json was written in place; a kill or a failed write mid-way left half a report. It now goes
    through a temp file renamed over -o: a write that fails before the rename leaves the earlier report as it was
    and no temp file behind (fsync, the last step before the rename, fails here as a full disk would)."""
    import json
    import os

    from click.testing import CliRunner

    from radmetrics.cli import cli

    src = tmp_path / "completions.jsonl"
    src.write_text("\n".join(json.dumps({"prompt": "A", "reference": "Normal chest.", "completion": c})
                             for c in ["Normal chest.", "Small effusion."]))
    out = tmp_path / "check.json"
    out.write_text('{"earlier": "report"}')
    args = ["reward-check", "-m", "green", "-i", str(src), "--completions", "--backend", "fake", "--no-cache",
            "-o", str(out)]

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert out.read_text() == '{"earlier": "report"}' and sorted(p.name for p in tmp_path.iterdir()) == \
        ["check.json", "completions.jsonl"]
    monkeypatch.undo()
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["completions"] == 2


def test_reward_check_samples_the_policy(fake_judge, policy, tmp_path):
    import json

    from click.testing import CliRunner
    from tiny_policy import policy_pairs

    from radmetrics.cli import cli

    src = tmp_path / "prompts.jsonl"
    src.write_text("\n".join(json.dumps({"prompt": p, "reference": r}) for p, r, _ in policy_pairs()))
    out = tmp_path / "check.json"
    result = CliRunner().invoke(cli, ["reward-check", "-m", "finerad_score", "-i", str(src), "--policy", str(policy),
                                      "-g", "4", "--completion-tokens", "8", "--backend", "fake", "--no-cache",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["completions"] == 12 and len(report["per_group"]) == 3
    assert all(g["scored"] + g["unscored"] == 4 for g in report["per_group"])
    assert report["generation_seconds"] > 0
    for g in report["per_group"]:  # lower-is-better FineRadScore enters as a reward <= 0
        assert g["max"] is None or g["max"] <= 0


def test_reward_check_bad_arguments_are_one_line_errors(tmp_path, monkeypatch, capsys):
    from radmetrics.cli import main

    src = tmp_path / "p.jsonl"
    src.write_text('{"prompt": "x", "ref": "y"}\n')
    for args, message in ((["-i", str(src)], "either --policy"),
                          (["-i", str(src), "--completions"], "no column 'reference' (set --reference-column)")):
        monkeypatch.setattr("sys.argv", ["radmetrics", "reward-check", "-m", "green", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err and "Traceback" not in err


def test_reward_check_counts_and_sizes_below_one_are_refused(fake_judge, tmp_path, monkeypatch, capsys):
    """--samples -1 was a ValueError traceback after the judge check; --samples 0 wrote an empty report with exit 0;
    --batch-size -3 judged nothing yet reported every completion with no reward and none unscored. Each is now a
    one-line usage error (exit 2), as are a group size, completion length, temperature or top-p that cannot sample."""
    import json

    from radmetrics.cli import main

    src = tmp_path / "completions.jsonl"
    src.write_text("\n".join(json.dumps({"prompt": "A", "reference": "Normal chest.", "completion": c})
                             for c in ["Normal chest.", "Small effusion."]))
    given = ["-i", str(src), "--completions", "--backend", "fake", "--no-cache"]
    for args, option in (([*given, "--samples", "-1"], "--samples"), ([*given, "--samples", "0"], "--samples"),
                         ([*given, "--batch-size", "-3"], "--batch-size"), ([*given, "--batch-size", "0"], "--batch-size"),
                         ([*given, "-g", "0"], "--num-generations"), ([*given, "--completion-tokens", "0"],
                                                                      "--completion-tokens"),
                         ([*given, "--temperature", "0"], "--temperature"), ([*given, "--top-p", "0"], "--top-p"),
                         ([*given, "--top-p", "1.5"], "--top-p"),
                         # nan passed click's FloatRange (no comparison with nan is true) and reached the sampler
                         ([*given, "--temperature", "nan"], "--temperature"),
                         ([*given, "--temperature", "inf"], "--temperature"), ([*given, "--top-p", "nan"], "--top-p"),
                         # past torch.manual_seed's range: its "Overflow when unpacking long long" traceback
                         (["-i", str(src), "--policy", "no/policy", "--seed", str(10**23)], "--seed")):
        monkeypatch.setattr("sys.argv", ["radmetrics", "reward-check", "-m", "green", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and option in err and "Traceback" not in err, (args, err)


def test_reward_check_refuses_a_bad_reward_before_sampling_the_policy(tiny_er2score, tmp_path, monkeypatch, capsys):
    """A misspelt -m, an unknown --system-option or an option ER²Score does not take was refused only after the
    policy had sampled every completion (minutes to hours with a real policy): the reward was made after sampling.
    It is now made first; the policy here does not exist, so an error about the reward proves no sampling ran.
    An unknown name lists er2score too, which reward-check takes besides the scoring systems."""
    from fake_judge import analysis_for
    from openai_server import FakeOpenAIServer

    from radmetrics.cli import main

    src = tmp_path / "prompts.jsonl"
    src.write_text('{"prompt": "Study 1", "reference": "Normal chest."}\n')
    with FakeOpenAIServer(analysis_for) as server:
        judge = ["--backend", "openai", "--base-url", server.base_url, "--judge", "m"]
        for args, message in ((["-m", "gren", *judge], "Did you mean 'green'? Available: er2score, finerad_score"),
                              (["-m", "green", *judge, "--system-option", "foo=1"], "has no option 'foo'"),
                              (["-m", "er2score", "--judge", str(tiny_er2score), "--judge-option", "max_batch_tokens=3"],
                               "takes no option 'max_batch_tokens'")):
            monkeypatch.setattr("sys.argv", ["radmetrics", "reward-check", "-i", str(src), "--policy",
                                             str(tmp_path / "no-such-policy"), *args])
            with pytest.raises(SystemExit) as exit_info:
                main()
            err = capsys.readouterr().err
            assert exit_info.value.code == 2 and message in err and "Sampling" not in err, (args, err)
        assert not server.requests  # nothing was judged either


def test_reward_check_names_a_missing_policy_folder(fake_judge, tmp_path, monkeypatch, capsys):
    """--policy with a folder that is not there was "Could not load the policy ...: Repo id must be in the form
    'repo_name' or 'namespace/repo_name' ... Use `repo_type` argument if needed" (the Hub client's words for a path);
    it now says the folder is not there, as --judge does, before anything is loaded."""
    from radmetrics.cli import main

    src = tmp_path / "prompts.jsonl"
    src.write_text('{"prompt": "Study 1", "reference": "Normal chest."}\n')
    monkeypatch.setattr("sys.argv", ["radmetrics", "reward-check", "-m", "green", "-i", str(src), "--backend", "fake",
                                     "--no-cache", "--policy", str(tmp_path / "no-such-policy")])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "The policy" in err and "is not a folder here" in err and "--policy" in err
    assert "repo_type" not in err and "Sampling" not in err


def test_reward_check_blames_unscored_completions_not_the_spread(tmp_path):
    """Every judge call failing (HTTP 500) left every group with no scored pair, and the check advised "Try a
    higher temperature, larger groups, or a finer-grained metric": the policy's sampling was blamed for the judge's
    failures. Groups with fewer than two scored completions are now said to be unscored, pointing at the reasons."""
    import json

    from click.testing import CliRunner
    from fake_judge import analysis_for
    from openai_server import FakeOpenAIServer

    from radmetrics.cli import cli

    src = tmp_path / "completions.jsonl"
    src.write_text("\n".join(json.dumps({"prompt": p, "reference": "Normal chest.", "completion": c})
                             for p in "AB" for c in ["Normal chest.", "Small effusion.", "Nodule."]))
    with FakeOpenAIServer(analysis_for, script=["500"] * 6) as server:
        result = CliRunner().invoke(cli, ["reward-check", "-m", "green", "-i", str(src), "--completions", "--backend",
                                          "openai", "--base-url", server.base_url, "--judge", "m", "--no-cache",
                                          "--judge-option", "max_retries=0"])
    assert result.exit_code == 0, result.output
    assert "higher temperature" not in result.output
    assert "2 of 2 groups have fewer than two scored completions" in result.output and "HTTP 500" in result.output


def test_reward_check_samples_from_the_prompt_ids_grpo_uses(policy, tmp_path):
    """reward-check rendered a conversational prompt with the chat template and tokenized that text again, which
    adds the tokenizer's BOS to the one a Llama-style template writes: the policy was sampled from
    [BOS, BOS, ...] while TRL's GRPOTrainer feeds it the template's own tokens. Prompts are now tokenized as TRL does."""
    import shutil

    from transformers import AutoTokenizer

    from radmetrics.rewards.check import policy_prompt_ids, sample_completions

    folder = tmp_path / "llama-style-policy"
    shutil.copytree(policy, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_bos_token = True  # as Llama tokenizers do, with a template that writes the BOS itself
    tokenizer.chat_template = "{{ bos_token }}" + tokenizer.chat_template
    tokenizer.save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    conversation = [{"role": "user", "content": "Study 1: write the radiology report."}]
    grpo = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True,
                                         return_dict=True)["input_ids"]  # trl GRPOTrainer._tokenize_prompts
    assert grpo.count(tokenizer.bos_token_id) == 1
    assert policy_prompt_ids(tokenizer, [conversation, "Study 1"]) == [list(grpo), tokenizer("Study 1")["input_ids"]]
    completions, _ = sample_completions(str(folder), [conversation, "Study 2: write the radiology report."],
                                        num_generations=2, max_new_tokens=4)
    assert [len(group) for group in completions] == [2, 2]


def test_reward_check_samples_with_grpos_sampling_settings(policy):
    """reward-check sampled with model.generate's defaults besides temperature and top_p: top_k=50 (transformers'
    default, or the checkpoint's generation config), while TRL's GRPOTrainer samples with top_k=0 (all tokens) and
    repetition_penalty=1: the spread it reported came from a narrower distribution than GRPO's. It now passes TRL's
    settings; with the same seed it samples what generate with GRPOConfig's defaults samples."""
    import dataclasses

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from radmetrics.rewards.check import policy_prompt_ids, sample_completions

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    prompts = ["Study 1: write the radiology report."]
    got, _ = sample_completions(str(policy), prompts, num_generations=4, max_new_tokens=12, temperature=3.0, seed=0)
    tokenizer = AutoTokenizer.from_pretrained(policy)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(policy).eval()
    batch = tokenizer.pad({"input_ids": policy_prompt_ids(tokenizer, prompts)}, return_tensors="pt")
    torch.manual_seed(0)
    with torch.inference_mode():
        out = model.generate(**batch, do_sample=True, temperature=3.0, top_p=defaults["top_p"], top_k=defaults["top_k"],
                             min_p=defaults["min_p"], repetition_penalty=defaults["repetition_penalty"],
                             max_new_tokens=12, num_return_sequences=4, pad_token_id=tokenizer.pad_token_id)
    assert got == [tokenizer.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)]


def test_a_cut_judge_answer_says_how_a_reward_raises_the_limit(caplog):
    """A judge answer cut at the token limit is unscored with the reason "raise --max-new-tokens (max_new_tokens= in
    evaluate.load)": neither is how a reward's judge is set. The reward's log line now names reward_function's
    config=GenerationConfig(max_new_tokens=...)."""
    from fake_judge import analysis_for
    from openai_server import FakeOpenAIServer

    with FakeOpenAIServer(analysis_for, script=["length"]) as server:
        green = reward_function("green", backend="openai", judge="m", cache=False,
                                judge_options={"base_url": server.base_url, "concurrency": 1},
                                config=GenerationConfig(max_new_tokens=64))
        with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
            rewards = green(completions=CANDS[:2], reference=REFS[:2])
    assert rewards[0] is None and rewards[1] is not None
    line = next(r.getMessage() for r in caplog.records if r.name == "radmetrics.rewards")
    assert "max_new_tokens=64" in line and "reward_function(..., config=GenerationConfig(max_new_tokens=" in line


def test_an_answer_at_the_end_of_the_judges_context_is_not_told_to_raise_the_limit(tiny_judge, caplog):
    """An in-process judge whose context the prompt nearly fills: the answer stops at the end of the context, and
    its reason says to shorten the reports or use a longer-context judge. The reward's log line added "for a
    reward's judge the limit is reward_function(..., config=GenerationConfig(max_new_tokens=N))", advice that
    gives the same cut; now only an answer cut at max_new_tokens gets it."""
    from test_cut_answers import _reference_leaving

    from radmetrics.judge.transformers_backend import TransformersJudge

    judge = TransformersJudge(str(tiny_judge))
    judge.load()
    reference, _ = _reference_leaving(judge, 6)
    reward = reward_function("radcliq_rubric", judge=judge, cache=False)
    with caplog.at_level(logging.WARNING, logger="radmetrics.rewards"):
        assert reward(completions=[CANDS[0]], reference=[reference]) == [None]
    line = next(r.getMessage() for r in caplog.records if r.name == "radmetrics.rewards")
    assert "the judge's answer reached the token limit of the judge's context" in line
    assert "shorten the reports" in line and "max_new_tokens=N" not in line


@pytest.mark.parametrize("batch_size", [0, -3, 2.5, True])
def test_check_reward_in_python_refuses_a_batch_size_below_one(batch_size):
    """The CLI's --batch-size has its range; check_reward called from Python had none: -3 scored nothing (an empty
    range) and reported no rewards, 0 scored all at once as if unset."""
    from radmetrics.errors import InputError
    from radmetrics.rewards.check import check_reward

    with pytest.raises(InputError, match="batch_size must be a whole number of at least 1"):
        check_reward(lambda **_: [], ["p"], ["ref"], [["a completion"]], batch_size=batch_size)
