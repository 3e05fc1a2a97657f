"""`radmetrics rexamine` end to end: missing standardized references and candidates written through a judge on
127.0.0.1 with ReXamine-Global's App. A prompts (provenance kept), per-site t-tests in the paper's sign convention
with Bonferroni (recomputed here with scipy from per_row.csv), Table 3, per-site Spearman, Fig. 3, disagreements,
and a one-row site reported as n/a."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import FIXTURES, REPO
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer
from scipy import stats as sp

import radmetrics

from radmetrics.data.steps import PERTURB_PROMPT, STANDARDIZE_PROMPT

BROKEN = str(FIXTURES / "broken_metric")  # an evaluate module that loads and fails in compute


def answer(prompt: str) -> str:
    """The fake judge, plus App. A step 2: the perturbation flips left and right in the template report."""
    if prompt.endswith(PERTURB_PROMPT.split("{report}", 1)[1]):
        report = prompt[: -len(PERTURB_PROMPT.split("{report}", 1)[1])]
        return report.replace("right", "LEFT").replace("left", "right").replace("LEFT", "left") + " New nodule."
    return analysis_for(prompt)


def test_rexamine_run_end_to_end(tmp_path):
    out = tmp_path / "rex"
    with FakeOpenAIServer(answer) as server:
        run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "rexamine", "-i",
                              str(FIXTURES / "rexamine" / "sites.jsonl"), "-m", "bleu-2", "-m", "rouge-l", "-m", "green",
                              "-m", BROKEN, "-m", "finerad_score", "--backend", "openai", "--base-url", server.base_url, "--judge", "judge-x",
                              "--cache", str(tmp_path / "c.sqlite"), "--resamples", "50", "-o", str(out)],
                             capture_output=True, text=True, cwd=REPO, env=os.environ.copy(), timeout=900)
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    # a metric that fails on the rows: n/a in the report, the others kept, exit 2 as meta-eval does
    assert run.returncode == 2 and f"1 metric(s) failed ({BROKEN})" in run.stderr, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "site Germany has 1 row" in run.stderr
    # the two rows without standardized reference / candidate were written with the App. A prompts
    assert sum(p.startswith(STANDARDIZE_PROMPT.split("{report}")[0]) for p in prompts) == 2
    data = [json.loads(line) for line in (out / "rexamine_data.jsonl").read_text().splitlines()]
    written = {d["id"]: d for d in data}["au-3"]
    # every reference and judge text: readable by its owner only, as score's results (review 24 L9)
    assert {p.name: oct(p.stat().st_mode) for p in [out, *out.iterdir()] if p.stat().st_mode & 0o077} == {}
    assert written["reference_standardized"].startswith("Findings: Cardiomegaly. Mild congestion.")
    assert written["candidate"].endswith("New nodule.") and written["provenance"]["judge"]["model"] == "judge-x"
    results = json.loads((out / "results.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert results["failed_metrics"][BROKEN] == "RuntimeError: scorer weights not found at /models/scorer"
    # Bonferroni over the tests run: 4 metrics x the 2 sites with 2+ rows, less zero-variance differences (review 12:
    # a one-row site, with no test, tightened the others' threshold)
    run_tests = sum(t["p_value"] is not None for t in results["t_tests"])
    assert 6 <= run_tests <= 8 and all(t["threshold"] == pytest.approx(0.05 / run_tests) for t in results["t_tests"])
    with (out / "per_row.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    # FineRadScore as ReXamine-Global scores it (Sec. 2.2): the number of lines the judge corrects
    assert "finerad_score is the number of lines the judge corrects" in run.stderr
    finerad = radmetrics.get_scoring_system("finerad_score")
    for row in rows:
        pair = next(d for d in data if d["id"] == row["id"])
        lines = finerad.configure(report_score="lines").parse(finerad.sample_answer(pair["reference"],
                                                                                   pair["candidate"])).score
        assert float(row["finerad_score:original"]) == lines
    for metric, higher_is_better in (("bleu-2", True), ("rouge-l", True), ("green", True)):
        for site in ("Australia", "Taiwan"):
            here = [r for r in rows if r["site"] == site and r[f"{metric}:original"] and r[f"{metric}:standardized"]]
            sign = -1 if higher_is_better else 1  # the paper's orientation: higher = worse
            std = [sign * float(r[f"{metric}:standardized"]) for r in here]
            orig = [sign * float(r[f"{metric}:original"]) for r in here]
            ours = next(t for t in results["t_tests"] if t["metric"] == metric and t["site"] == site)
            if np.allclose(std, orig):
                assert ours["t"] == 0.0
                continue
            if np.allclose(np.subtract(std, orig), std[0] - orig[0]):  # zero variance: no t, said why
                assert ours["t"] is None and "zero variance" in ours["reason"]
                continue
            expected = sp.ttest_rel(std, orig)
            assert ours["t"] == pytest.approx(expected.statistic) and ours["p_value"] == pytest.approx(expected.pvalue)
            assert ours["significant"] == (expected.pvalue < 0.05 / run_tests)
        germany = next(t for t in results["t_tests"] if t["metric"] == metric and t["site"] == "Germany")
        assert germany["t"] is None and "has 1 row(s)" in germany["reason"]
        assert results["spearman"]["original"][metric]["Germany"]["value"] is None
        # Table 3 means are the per-site means of per_row.csv
        au = [float(r[f"{metric}:original"]) for r in rows if r["site"] == "Australia" and r[f"{metric}:original"]]
        assert results["table3"]["Australia"][metric]["original"]["mean"] == pytest.approx(np.mean(au))
    # Spearman with the experts, oriented higher = worse on both sides
    au = [r for r in rows if r["site"] == "Australia"]
    rho = sp.spearmanr([-float(r["bleu-2:original"]) for r in au], [float(r["expert_errors"]) for r in au]).statistic
    assert results["spearman"]["original"]["bleu-2"]["Australia"]["value"] == pytest.approx(rho)
    assert results["largest_disagreements"]["bleu-2"] and (out / "fig3_spearman.png").read_bytes()[:4] == b"\x89PNG"
    summary = (out / "summary.md").read_text()
    assert "Table 2" in summary and "Table 3" in summary and f"| {BROKEN} | n/a: RuntimeError" in summary


def rexamine_cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", "rexamine", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=os.environ.copy(), timeout=600)


def test_rexamine_says_what_it_could_not_write_and_never_counts_a_row_twice(tmp_path):
    """Review findings: with the judge unreachable the run retried for a minute, then dropped the two rows it could
    not write from every test without a word and exited 0 (one site's verdict changed); a perturbation was asked
    for a row whose standardization had failed; an expert count "two" was dropped silently and a repeated id
    counted twice."""
    src = FIXTURES / "rexamine" / "sites.jsonl"
    run = rexamine_cli("-i", src, "-m", "bleu-2", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                       "--judge", "x", "--no-cache", "-o", tmp_path / "closed", cwd=tmp_path)
    assert run.returncode == 2 and "Cannot connect to the judge server" in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "closed").exists()

    def blank_standardization(prompt):  # the judge answers nothing when asked to standardize
        return "  " if prompt.endswith(STANDARDIZE_PROMPT.split("{report}", 1)[1]) else answer(prompt)

    with FakeOpenAIServer(blank_standardization) as server:
        run = rexamine_cli("-i", src, "-m", "bleu-2", "--backend", "openai", "--base-url", server.base_url,
                           "--judge", "x", "--judge-option", "max_retries=0", "--no-cache", "--resamples", "20",
                           "-o", tmp_path / "rex", cwd=tmp_path)
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert not any(p.endswith(PERTURB_PROMPT.split("{report}", 1)[1]) for p in prompts)  # nothing to perturb
    assert run.returncode == 2, run.stderr[-2000:]
    assert "rows the judge could not write are left out (the warnings above)" in run.stderr
    expected = ["2 rows have no standardized reference (judge call failed: gave up after 1 attempt: unusable "
                "response body (the answer is empty))",
                "2 rows have no candidate (no standardized reference to write a candidate from)"]
    summary = (tmp_path / "rex" / "summary.md").read_text()
    results = json.loads((tmp_path / "rex" / "results.json").read_text())
    for line in expected:
        assert f"Warning: {line}" in run.stderr and f"**Warning:** {line}" in summary
        assert any(w.startswith(line) for w in results["warnings"])

    rows = [json.loads(line) for line in src.read_text().splitlines()]
    bad = tmp_path / "bad.jsonl"
    for edit, message in ((lambda r: r[0].update(expert_errors="two"), "expert_errors must be a number of errors "
                           "(0 or more), not 'two'"), (lambda r: r.append(dict(r[0])), "appears more than once"),
                          # review 12: a negative count was taken; a row without a site became a site "unknown"
                          (lambda r: r[0].update(expert_errors=-5), "(0 or more), not -5"),
                          (lambda r: r[0].pop("site"), "1 row(s) have no site: au-1")):
        copy = [dict(r) for r in rows if r.get("candidate") and r.get("reference_standardized")]
        edit(copy)
        bad.write_text("".join(json.dumps(r) + "\n" for r in copy))
        run = rexamine_cli("-i", bad, "-m", "bleu-2", "-o", tmp_path / "bad", cwd=tmp_path)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]


def test_rexamine_a_number_as_candidate_or_standardized_reference_is_an_unscored_row(tmp_path):
    """Review 25 M3: a number as `candidate` or `reference_standardized` was `AttributeError: 'int' object has no
    attribute 'strip'` (rc 1). It is a row unscored with the reason score and compare give, and the report says so;
    a reference that is a number is not sent to be standardized."""
    rows = [{"id": "a", "site": "A", "reference": "x y", "reference_standardized": "x", "candidate": 5, "expert_errors": 1},
            {"id": "b", "site": "A", "reference": "x y", "reference_standardized": 7, "candidate": "x", "expert_errors": 2},
            {"id": "c", "site": "A", "reference": "x y z", "reference_standardized": "x y", "candidate": "x y",
             "expert_errors": 3},
            {"id": "d", "site": "A", "reference": "w v", "reference_standardized": "w", "candidate": "w",
             "expert_errors": 0}]
    src = tmp_path / "numbers.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = rexamine_cli("-i", src, "-m", "rouge-l", "--resamples", "20", "-o", tmp_path / "o", cwd=tmp_path)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    per_row = {r["id"]: r for r in csv.DictReader((tmp_path / "o" / "per_row.csv").open())}
    assert per_row["a"]["rouge-l:original"] == per_row["a"]["rouge-l:standardized"] == ""
    assert per_row["b"]["rouge-l:original"] != "" and per_row["b"]["rouge-l:standardized"] == ""
    note = json.loads((tmp_path / "o" / "results.json").read_text())["unscored"]["rouge-l"]
    assert note.startswith("rouge-l left 3 score(s) unscored (candidate is int, not text): a (original), "
                           "a (standardized), b (standardized)"), note
    assert note in run.stderr and note in (tmp_path / "o" / "summary.md").read_text()
    # a number as the reference, with no standardized one: not sent to the judge (none is named), left out with why
    rows[2] = {**rows[2], "reference": 3, "reference_standardized": None}
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(answer) as server:
        run = rexamine_cli("-i", src, "-m", "rouge-l", "--backend", "openai", "--base-url", server.base_url,
                           "--judge", "x", "--no-cache", "--resamples", "20", "-o", tmp_path / "o2", cwd=tmp_path)
        assert not server.requests
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "Warning: 1 row has no standardized reference (reference is int, not text)" in run.stderr


def test_rexamine_disagreements_leave_out_rank_agreement_and_constant_metrics(tmp_path):
    """Review 25 L4: a rank gap of 0 was listed as "metric finds more errors", and a metric giving every row one
    score had three "disagreements" (its ranks are all tied: the list was the experts' ranking read backwards)."""
    rows = [{"id": f"r{i}", "site": "A", "reference": "a b c d", "reference_standardized": "a b c d",
             "candidate": candidate, "expert_errors": errors}
            for i, (candidate, errors) in enumerate([("a b c d", 0), ("a b c", 1), ("a b", 2), ("q", 3)])]
    src = tmp_path / "agree.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    constant = str(FIXTURES / "constant_metric") + ":scores"
    run = rexamine_cli("-i", src, "-m", "rouge-l", "-m", constant, "--resamples", "20", "-o", tmp_path / "o",
                       cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    assert results["largest_disagreements"] == {"rouge-l": [], constant: []}
    assert results["largest_disagreements_notes"] == {
        "rouge-l": "the metric ranks every row as the experts do",
        constant: "the same score (1) for every row: it ranks nothing"}
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert f"- {constant}: none listed: the same score (1) for every row: it ranks nothing" in summary
    assert "metric finds more errors" not in summary
    rows[0]["candidate"], rows[1]["candidate"] = rows[1]["candidate"], rows[0]["candidate"]  # one swap: 2 gaps, 2 not
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = rexamine_cli("-i", src, "-m", "rouge-l", "--resamples", "20", "-o", tmp_path / "o2", cwd=tmp_path)
    listed = json.loads((tmp_path / "o2" / "results.json").read_text())["largest_disagreements"]["rouge-l"]
    assert sorted(d["id"] for d in listed) == ["r0", "r1"] and all(d["rank_gap"] != 0 for d in listed)


def test_rexamine_reruns_from_its_own_rexamine_data_into_the_same_folder(tmp_path):
    """rexamine_data.jsonl is written "to re-run": read back as the input of a run into the same folder it is the
    earlier report's own file, replaced with the rest of that report (review 24 M6), and the user's notes stay."""
    rows = [json.loads(line) for line in (FIXTURES / "rexamine" / "sites.jsonl").read_text().splitlines()]
    complete = [r for r in rows if r.get("reference_standardized") and r.get("candidate")]  # no judge needed
    src = tmp_path / "sites.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in complete))
    out = tmp_path / "rex"
    first = rexamine_cli("-i", src, "-m", "bleu-2", "-m", "rouge-l", "--resamples", "20", "-o", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (out / "notes.txt").write_text("precious")
    again = rexamine_cli("-i", out / "rexamine_data.jsonl", "-m", "rouge-l", "--resamples", "20", "-o", out,
                         cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Note: {out} holds an earlier report; this run replaces it." in again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["fig3_spearman.png", "notes.txt", "per_row.csv",
                                                     "results.json", "rexamine_data.jsonl", "summary.md"]
    data = [json.loads(line) for line in (out / "rexamine_data.jsonl").read_text().splitlines()]
    assert [d["id"] for d in data] == [r["id"] for r in complete]
    assert json.loads((out / "results.json").read_text())["radmetrics_report"]["command"] == "rexamine"


def test_rexamine_from_python_checks_its_report_folder_before_any_work(tmp_path):
    """The CLI refused a folder holding files no rexamine report wrote (review 24 M6); run_rexamine, its Python entry,
    overwrote them. Now it refuses them first, with the CLI's line, and overwrite=True replaces them."""
    from radmetrics.meta.rexamine_run import run_rexamine

    rows = tmp_path / "sites.jsonl"
    rows.write_text("".join(json.dumps({"id": f"r{i}", "site": site, "reference": f"no effusion {i}.",
                                        "reference_standardized": f"Findings: no effusion {i}.",
                                        "candidate": f"small effusion {i}.", "expert_errors": i % 3}) + "\n"
                            for i, site in enumerate(["US", "US", "AU", "AU"])))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.json").write_text('{"my": "numbers"}')
    with pytest.raises(radmetrics.InputError, match="holds results.json, which no radmetrics rexamine report there "
                                                    "wrote.*pass --overwrite \\(overwrite=True from Python\\)"):
        run_rexamine(rows, ["bleu-2"], out, resamples=20, echo=lambda _: None)
    assert [p.name for p in out.iterdir()] == ["results.json"] and "my" in (out / "results.json").read_text()
    notes = []
    run_rexamine(rows, ["bleu-2"], out, overwrite=True, resamples=20, echo=notes.append)
    assert f"Note: --overwrite: this run replaces results.json in {out}." in notes
    assert json.loads((out / "results.json").read_text())["radmetrics_report"]["command"] == "rexamine"
