"""LLM data steps through the shared judge (fake judge plugged in through the plugin manager)."""
from __future__ import annotations

import pytest

import radmetrics
from radmetrics.data import steps

REPORTS = ["No acute cardiopulmonary process. Heart size normal.", "Small left effusion. NEVER satisfied."]


def test_standardize_uses_the_rexamine_prompt(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    out = steps.standardize(judge, REPORTS[:1])
    assert out[0].output.startswith("Findings: No acute") and "Impression:" in out[0].output
    assert steps.STANDARDIZE_PROMPT.startswith("Pretend you are a radiologist and format the content")


def test_inject_validates_and_retries_up_to_five_attempts(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    out = steps.inject_errors(judge, REPORTS, "a", k=2, modality="XR", region="chest")
    first, second = out
    # attempt 1: a thyroid finding on a chest X-ray -> rejected by the validation prompt; attempt 2: accepted
    assert first.attempts == 2 and first.output.endswith("Lung nodule number 0. Lung nodule number 1.")
    assert len(first.details["changes"]) == 2
    # always k + 1 changes -> never exactly k: failed after 5 attempts, with the reason
    assert second.output is None and second.attempts == 5
    assert second.reason == "no valid injection after 5 attempts: 3 changes instead of exactly 2"


def test_inject_rejects_unknown_error_type(fake_judge):
    with pytest.raises(radmetrics.InputError, match="'a' or 'b'"):
        steps.inject_errors(radmetrics.get_judge("fake", cache=False), REPORTS, "c", k=1)


def test_green_modify_is_seeded(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    one = steps.green_modify(judge, REPORTS * 3, seed=5)
    two = steps.green_modify(judge, REPORTS * 3, seed=5)
    assert [r.details for r in one] == [r.details for r in two]
    assert one[0].output.endswith("Possible small effusion.")
    prompt = steps.green_modify_prompt("Ref.", "no errors", subtle=False)
    assert "slightly rephrased" in prompt and prompt.endswith("[Candidate]: <Candidate Report>")


def test_cli_transform_writes_a_dataset_with_provenance(tmp_path, monkeypatch):
    """Through the CLI entry point in-process (the fake judge is registered in this process)."""
    import json

    import datasets
    from click.testing import CliRunner

    from radmetrics.cli import cli
    from radmetrics.plugins import register_plugin, unregister_plugin

    import fake_judge

    register_plugin(fake_judge, name="fake-judge-cli")
    try:
        src = tmp_path / "reports.jsonl"
        src.write_text("\n".join(json.dumps({"reference": r, "candidate": "x"}) for r in REPORTS))
        out = tmp_path / "injected"
        result = CliRunner().invoke(cli, ["data", "transform", "inject", "-i", str(src), "-o", str(out), "--k", "1",
                                          "--modality", "XR", "--region", "chest", "--backend", "fake"])
        assert result.exit_code == 0, result.output
        assert "1/2 rows done, 1 failed" in result.output
        data = datasets.load_from_disk(str(out))
        assert data[0]["reference_inject"].endswith("Lung nodule number 0.") and data[0]["step_attempts"] == 2
        assert data[1]["reference_inject"] is None and "instead of exactly 1" in data[1]["step_failure"]
        provenance = json.loads(data[0]["provenance"])
        assert provenance["step"] == "inject" and provenance["k"] == 1 and provenance["judge"]["backend"] == "fake"
    finally:
        unregister_plugin(name="fake-judge-cli")
