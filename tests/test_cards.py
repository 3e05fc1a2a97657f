"""Cards the real Hub accepts: parsed by huggingface_hub's own ModelCard / DatasetCard / metadata readers and
checked against the Hub's documented rules (tests/hub_server.py, which the test Hub's /api/validate-yaml
enforces too, so a push of a card the Hub would refuse fails here as it would there)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES
from hub_server import HubServer, card_metadata_errors

from radmetrics.data.schema import size_category
from radmetrics.errors import RadmetricsError
from radmetrics.hub.cards import evaluations_from_files, hub_model_id, render_model_card, update_model_card

TRAINING = {"config": {"recipe": "green", "base_model": "StanfordAIMI/GREEN-RadLlama2-7b", "lora_r": 4,
                       "lora_alpha": 8, "learning_rate": 1e-4},
            "losses": [2.0, 1.5], "train_examples": 8, "validation_examples": 1,
            "data_description": "8 GREEN analyses by the teacher gpt-4o (openai backend) on `pairs.jsonl`"}


@pytest.fixture
def lm_eval_results(tmp_path):
    path = tmp_path / "results_2026.json"
    path.write_text(json.dumps({"results": {"rexval_judge": {
        "alias": "rexval_judge", "kendall_tau,none": 0.4123, "kendall_tau_stderr,none": "N/A",
        "mae_significant_errors,none": 1.25, "unparsed,none": 0.0}}, "configs": {"rexval_judge": {}}}))
    return path


def parsed_model_card(text: str):
    from huggingface_hub import ModelCard

    card = ModelCard(text)
    assert card_metadata_errors(text, "model") == [], card_metadata_errors(text, "model")
    return card


def test_hub_rules_refuse_a_local_path_base_model():
    """The check the card tests rely on: a local path in base_model is refused, a Hub id is accepted."""
    for bad in ("/home/me/models/tiny", "./judge/merged", "../base", "C:\\models\\x", "a--b/c"):
        assert any("base_model" in e for e in card_metadata_errors(f"---\nbase_model: {json.dumps(bad)}\n---\n")), bad
    assert card_metadata_errors("---\nbase_model: StanfordAIMI/GREEN-RadLlama2-7b\n---\n") == []
    assert card_metadata_errors("---\nlicense: other\n---\n")  # other needs license_name / license_link
    assert card_metadata_errors(
        "---\nmodel-index:\n- name: x\n  results:\n  - task: {type: text-generation}\n"
        "    dataset: {type: ReXVal judge, name: r}\n    metrics: [{type: kendall tau, value: 0.1}]\n---\n")


def test_local_base_is_named_in_the_text_not_in_base_model(tmp_path):
    base = tmp_path / "my-base"
    base.mkdir()
    training = {**TRAINING, "config": {**TRAINING["config"], "base_model": str(base)}}
    card = parsed_model_card(render_model_card("lab/judge", training, []))
    assert card.data.base_model is None
    assert str(tmp_path) not in str(card) and "`my-base`" in card.text
    # with the Hub id of the base given (hub push --base-model), it is the card's base_model
    card = parsed_model_card(render_model_card("lab/judge", training, [], base_model_id="meta-llama/Llama-2-7b-hf"))
    assert card.data.base_model == "meta-llama/Llama-2-7b-hf"
    assert hub_model_id("judge/merged", local=False) == "judge/merged"
    assert hub_model_id(str(base)) is None and hub_model_id("/abs/path", local=False) is None


def test_model_index_is_canonical_and_parsed_by_huggingface_hub(lm_eval_results):
    evaluations = evaluations_from_files([lm_eval_results])
    card = parsed_model_card(render_model_card("lab/tiny-judge", TRAINING, evaluations))
    assert card.data.base_model == "StanfordAIMI/GREEN-RadLlama2-7b" and card.data.library_name == "transformers"
    results = {r.metric_type: r for r in card.data.eval_results}
    assert set(results) == {"kendall_tau", "mae_significant_errors", "unparsed"}
    assert results["kendall_tau"].metric_value == 0.4123 and results["kendall_tau"].dataset_type == "rexval"
    assert results["kendall_tau"].task_type == "text-generation"
    raw = card.data.to_dict()["model-index"]
    assert len(raw) == 1 and len(raw[0]["results"]) == 1 and len(raw[0]["results"][0]["metrics"]) == 3  # grouped
    assert "| ReXVal (lm-eval task rexval_judge) | kendall_tau | 0.4123 | lm-eval |" in card.text
    # the dataset id can name the pushed evaluation set
    card = parsed_model_card(render_model_card(
        "lab/tiny-judge", TRAINING, evaluations_from_files([lm_eval_results], dataset_id="lab/rexval")))
    assert {r.dataset_type for r in card.data.eval_results} == {"lab/rexval"}


def test_eval_dataset_ids_name_each_expert_set_and_nan_results_are_not_published(tmp_path):
    """Review 19 (4): with results of several expert sets, --eval-dataset my-lab/rexval was written as the dataset of
    every result (RadEval's and RaTE-Eval's numbers published as ReXVal's), and a NaN τ went into model-index as
    `.nan`. Now each set gets its own id (SET=ID), one bare id is refused for several sets, and a NaN is n/a in the
    table and no model-index result."""
    from radmetrics.errors import RadmetricsError

    path = tmp_path / "results_all.json"
    path.write_text(json.dumps({"results": {
        "rexval_judge": {"kendall_tau,none": 0.41, "unparsed,none": 0.0},
        "radeval_judge": {"kendall_tau,none": 0.22, "unparsed,none": 0.1},
        "rate_eval_judge": {"kendall_tau,none": float("nan"), "unparsed,none": 1.0}},
        "configs": {"rexval_judge": {}, "radeval_judge": {}, "rate_eval_judge": {}}}))
    with pytest.raises(RadmetricsError, match="names one dataset, but the results are of radeval, rate_eval, rexval"):
        evaluations_from_files([path], dataset_id="lab/rexval")
    with pytest.raises(RadmetricsError, match="the results have no refisco set"):
        evaluations_from_files([path], dataset_id={"refisco": "lab/refisco"})
    evaluations = evaluations_from_files([path], dataset_id={"rexval": "lab/rexval", "radeval": "lab/radeval"})
    card = parsed_model_card(render_model_card("lab/j", TRAINING, evaluations))
    by_set = {(r.dataset_type, r.metric_type): r.metric_value for r in card.data.eval_results}
    assert by_set == {("lab/rexval", "kendall_tau"): 0.41, ("lab/rexval", "unparsed"): 0.0,
                      ("lab/radeval", "kendall_tau"): 0.22, ("lab/radeval", "unparsed"): 0.1,
                      ("rate_eval", "unparsed"): 1.0}  # RaTE-Eval keeps its short name; its NaN τ is no result
    assert ".nan" not in card.content and "| RaTE-Eval (lm-eval task rate_eval_judge) | kendall_tau | n/a |" in card.text


def test_meta_eval_results_give_metric_ids_without_spaces(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"dataset": "rexval", "metrics": {
        "green": {"kendall_tau_b": {"value": 0.5}, "spearman": {"value": 0.6}}}}))
    card = parsed_model_card(render_model_card("lab/j", TRAINING, evaluations_from_files([path])))
    assert {r.metric_type for r in card.data.eval_results} == {"green_kendall_tau_b", "green_spearman"}


@pytest.mark.parametrize("recipe", ["green", "vert"])
def test_a_model_card_shows_only_usage_that_runs(recipe):
    """Review 40b: the card of a judge trained with `--recipe vert` told readers to
    `evaluate.load("radmetrics/vert_ft", judge=...)`, a module that does not exist ("Unknown evaluate module
    'vert_ft'"): VERT's fine-tuned answer format is a scoring system (`--metric vert_ft`), not an evaluate module."""
    import re

    import radmetrics
    from radmetrics.hub.cards import RECIPES

    training = {**TRAINING, "config": {**TRAINING["config"], "recipe": recipe}}
    text = render_model_card("lab/judge", training, [])
    metric = RECIPES[recipe][0]
    modules = re.findall(r'evaluate\.load\("radmetrics/([\w-]+)"', text)
    for name in modules:
        assert os.path.isfile(radmetrics.evaluate_module_path(name))
    systems = re.findall(r'radmetrics\.score\("([\w-]+)"', text) + re.findall(r"--metric ([\w-]+)", text)
    assert set(systems) == {metric} and metric in radmetrics.list_scoring_systems()
    assert modules == (["green"] if recipe == "green" else [])
    assert 'judge="lab/judge"' in text and "--judge lab/judge" in text


def test_adapters_are_carded_as_peft():
    card = parsed_model_card(render_model_card("lab/judge-lora", TRAINING, [], adapter=True))
    assert card.data.library_name == "peft" and card.data.base_model == "StanfordAIMI/GREEN-RadLlama2-7b"


def test_eval_without_training_updates_the_existing_card(lm_eval_results):
    first = render_model_card("lab/judge", TRAINING, [])
    updated = parsed_model_card(update_model_card(first, "lab/judge", evaluations_from_files([lm_eval_results])))
    assert updated.data.base_model == "StanfordAIMI/GREEN-RadLlama2-7b"  # the rest of the card is kept
    assert {r.metric_type for r in updated.data.eval_results} == {"kendall_tau", "mae_significant_errors", "unparsed"}
    assert "Not evaluated yet" not in updated.text and "| kendall_tau | 0.4123 |" in updated.text
    assert "## Limitations" in updated.text
    fresh = parsed_model_card(update_model_card(None, "lab/judge", evaluations_from_files([lm_eval_results])))
    assert len(fresh.data.eval_results) == 3


@pytest.mark.parametrize("rows, expected", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (1500, "1K<n<10K"),
                                            (250_000, "100K<n<1M"), (10**13, "n>1T")])
def test_size_category_is_computed(rows, expected):
    assert size_category(rows) == expected


def test_dataset_card_is_accepted_with_licence_name_and_link(tmp_path):
    from huggingface_hub import DatasetCard

    from radmetrics.data import convert
    from radmetrics.data.schema import render_card
    from radmetrics.data.rexval import CARD

    text = (convert("rexval", FIXTURES / "rexval", tmp_path / "rexval") / "README.md").read_text()
    assert card_metadata_errors(text, "dataset") == []
    card = DatasetCard(text)
    assert card.data.license == "other" and card.data.license_name.startswith("physionet-credentialed")
    assert card.data.license_link.startswith("https://physionet.org/") and card.data.size_categories == ["n<1K"]
    big = DatasetCard(render_card({**CARD, "num_rows": "1500", "version": "0"}))
    assert big.data.size_categories == ["1K<n<10K"]


def hub_env(hub):
    return {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_test_token", "HF_HUB_OFFLINE": "0",
            "HF_HUB_DISABLE_TELEMETRY": "1"}


def test_push_of_a_card_the_hub_refuses_fails_before_creating_anything(tmp_path, monkeypatch):
    from radmetrics.hub import push_folder

    folder = tmp_path / "judge"
    folder.mkdir()
    # (a local base_model is no longer refused: the pushed card leaves it out, `_card_with_portable_base`)
    (folder / "README.md").write_text("---\nlicense: my-own-terms\n---\n# judge\n")
    with HubServer(tmp_path / "hub") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        import huggingface_hub.constants as constants

        monkeypatch.setattr(constants, "ENDPOINT", hub.endpoint)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        with pytest.raises(RadmetricsError, match="The Hub refuses the card .*license"):
            push_folder(folder, "lab/judge", token="hf_test_token")
        assert not hub.repos and hub.validated[0][0] == "model" and "license" in hub.validated[0][1][0]


def test_hub_push_eval_without_training_is_honoured(tmp_path, lm_eval_results):
    folder = tmp_path / "merged"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "README.md").write_text(render_model_card("lab/judge", TRAINING, []))
    with HubServer(tmp_path / "hub") as hub:
        out = subprocess.run([sys.executable, "-m", "radmetrics.cli", "hub", "push", str(folder), "lab/judge",
                              "--eval", str(lm_eval_results), "--eval-dataset", "lab/rexval"],
                             env=hub_env(hub), capture_output=True, text=True, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        card = parsed_model_card((hub.folder("model", "lab/judge") / "README.md").read_text())
        assert {r.dataset_type for r in card.data.eval_results} == {"lab/rexval"}
        assert hub.validated and all(v == ("model", []) for v in hub.validated)


def test_hub_push_eval_takes_only_this_models_results_and_refuses_what_is_not_a_result(tmp_path):
    """Review findings: `hub push --eval report/results.json` put every metric of a meta-eval report into the judge's
    model-index (ROUGE-L's and BLEU-2's correlations, another judge's GREEN); an --eval JSON with no results erased
    the card's evaluation and said pushed; unreadable --eval / --training files were tracebacks."""
    folder = tmp_path / "merged"
    folder.mkdir()
    (folder / "config.json").write_text("{}")

    def meta_eval(green_judge):
        stats = {"kendall_tau_b": {"value": 0.69}, "spearman": {"value": 0.8}}
        return {"dataset": "rexval", "metrics": {
            "green": {**stats, "fingerprint": {"judge": {"backend": "transformers", "model": green_judge}}},
            "rouge-l": {**stats, "fingerprint": {"library": "rouge-score"}}}}

    other, ours, bad, text, training = (tmp_path / n for n in ("other.json", "ours.json", "bad.json", "t.csv",
                                                                "training.json"))
    other.write_text(json.dumps(meta_eval("fake-judge")))
    ours.write_text(json.dumps(meta_eval(str(folder))))
    bad.write_text('{"x": 1}')
    text.write_text("")
    training.write_text('{"x": 1}')
    with HubServer(tmp_path / "hub") as hub:
        def push(*args):
            return subprocess.run([sys.executable, "-m", "radmetrics.cli", "hub", "push", str(folder), "lab/judge",
                                   *map(str, args)], env=hub_env(hub), capture_output=True, text=True, cwd=tmp_path)

        for args, expected in ((["--eval", other], "has no result judged by the model pushed (lab/judge"),
                               (["--eval", bad], "not an lm-eval results_*.json nor a meta-eval results.json"),
                               (["--eval", text], "not readable JSON"),
                               (["--training", training], "not the training.json `radmetrics train judge` writes")):
            out = push(*args)
            assert out.returncode == 2 and expected in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert not hub.repos  # nothing pushed
        out = push("--eval", ours)
        assert out.returncode == 0, out.stderr[-2000:]
        card = parsed_model_card((hub.folder("model", "lab/judge") / "README.md").read_text())
        assert {r.metric_type for r in card.data.eval_results} == {"green_kendall_tau_b", "green_spearman"}


def test_an_lm_eval_run_with_limit_is_not_put_in_a_card(tmp_path, lm_eval_results):
    """Review 27 (H2): `lm_eval --limit 6` graded 6 of ReXVal's 20 pairs, and `hub push --eval` published its numbers
    in model-index as the ReXVal result. lm-eval writes the subset in `n-samples` and `config.limit`."""
    data = json.loads(lm_eval_results.read_text())
    limited = tmp_path / "results_limited.json"
    limited.write_text(json.dumps({**data, "n-samples": {"rexval_judge": {"original": 20, "effective": 6}},
                                   "config": {"model_args": "pretrained=lab/judge", "limit": 6.0}}))
    with pytest.raises(RadmetricsError, match=r"graded 6 of the 20 documents of rexval_judge \(a --limit run\)"):
        evaluations_from_files([limited])
    full = tmp_path / "results_full.json"
    full.write_text(json.dumps({**data, "n-samples": {"rexval_judge": {"original": 20, "effective": 20}},
                                "config": {"model_args": "pretrained=lab/judge", "limit": None}}))
    assert {e["metric"] for e in evaluations_from_files([full])} == {"kendall_tau", "mae_significant_errors", "unparsed"}
    # a limit above the set's size (or 1.0, the whole of it) graded every document: what lm-eval counted decides
    whole = tmp_path / "results_limit_above_size.json"
    whole.write_text(json.dumps({**data, "n-samples": {"rexval_judge": {"original": 20, "effective": 20}},
                                 "config": {"model_args": "pretrained=lab/judge", "limit": 100.0}}))
    assert {e["metric"] for e in evaluations_from_files([whole])} == {"kendall_tau", "mae_significant_errors", "unparsed"}
    unknown = tmp_path / "results_limit_uncounted.json"  # no n-samples: the limit may have cut the set
    unknown.write_text(json.dumps({**{k: v for k, v in data.items() if k != "n-samples"},
                                   "config": {"model_args": "pretrained=lab/judge", "limit": 6.0}}))
    with pytest.raises(RadmetricsError, match=r"an lm-eval run with --limit 6.0 graded a subset"):
        evaluations_from_files([unknown])


def test_a_cards_local_base_is_named_by_its_hub_id_or_left_out_of_the_pushed_metadata():
    """peft writes an adapter's card with `base_model: /path/to/base` (and a `base_model:adapter:/path` tag), which
    the Hub refuses: the pushed card names the base's Hub id there, or leaves it out; ids and the text stay."""
    from radmetrics.hub import _card_with_portable_base

    card = ("---\nbase_model:\n- /home/me/base\n- meta/llama\nlibrary_name: peft\ntags:\n- base_model:adapter:/home/me/base"
            "\n- lora\n---\n\n# Model Card for /home/me/base adapter\n")
    path, pushed = _card_with_portable_base(card, "lab/base")
    assert path == "/home/me/base"
    assert pushed.startswith("---\nbase_model:\n- lab/base\n- meta/llama\nlibrary_name: peft\n")
    assert "- base_model:adapter:lab/base\n- lora\n---\n\n# Model Card for /home/me/base adapter\n" in pushed
    _, without = _card_with_portable_base(card.replace("- meta/llama\n", ""), None)
    assert "base_model" not in without.split("\n---")[0] and "- lora" in without
    # review 46: a card saved with a byte-order mark; metadata with nothing else left; a base named twice
    assert _card_with_portable_base("\ufeff---\nbase_model: /home/me/base\n---\n\n# Card\n", None) == (
        "/home/me/base", "# Card\n")
    assert _card_with_portable_base("---\nbase_model: [/a/base, lab/base, ../base]\n---\n", "lab/base")[1] == \
        "---\nbase_model:\n- lab/base\n---\n"
    # review 47: a tag list holding only the local base's tag is left out with it (not pushed as `tags: []`)
    assert _card_with_portable_base("---\nbase_model: /home/me/base\ntags:\n- base_model:adapter:/home/me/base\n---\n"
                                    "# Card\n", None) == ("/home/me/base", "# Card\n")
    assert _card_with_portable_base("---\nlicense: mit\ntags:\n- base_model:/home/me/base\n---\n", None)[1] == \
        "---\nlicense: mit\n---\n"
    for unchanged in ("---\nbase_model: meta/llama\n---\ntext", "no metadata", "---\n: [\n---\n", "---\nbase_model: x"):
        assert _card_with_portable_base(unchanged, "lab/base") is None


@pytest.mark.parametrize("recorded", ["C:\\Users\\me\\models\\llama-base", "D:/models/llama-base"])
def test_a_base_model_tag_naming_a_windows_path_is_replaced_whole(recorded):
    """Review 47: peft's tag `base_model:adapter:C:\\Users\\me\\base` was split at its last colon, the drive's, so the
    pushed card's tag read `base_model:adapter:C:lab/base` (part of the path beside the id); a tag is read from the
    left: `base_model:`, then peft's kind of relation."""
    from radmetrics.hub import _card_with_portable_base

    card = f"---\nbase_model: {recorded}\nlibrary_name: peft\ntags:\n- base_model:adapter:{recorded}\n- lora\n---\n# Card\n"
    assert _card_with_portable_base(card, "lab/base")[1] == (
        "---\nbase_model: lab/base\nlibrary_name: peft\ntags:\n- base_model:adapter:lab/base\n- lora\n---\n# Card\n")
    assert _card_with_portable_base(card, None)[1] == "---\nlibrary_name: peft\ntags:\n- lora\n---\n# Card\n"
    plain = f"---\ntags:\n- base_model:{recorded}\n- base_model:finetune:meta/llama\n---\n"
    assert _card_with_portable_base(plain, "lab/base")[1] == (
        "---\ntags:\n- base_model:lab/base\n- base_model:finetune:meta/llama\n---\n")
