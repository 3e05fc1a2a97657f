"""Statistics against hand-derived values and scipy; the ReXVal converter; `radmetrics meta-eval`."""
from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import FIXTURES, LM_EVAL_TASKS, REPO
from scipy import stats as sp

from radmetrics.meta import stats


def test_kendall_tau_b_hand_derived():
    # x = [1, 2, 3, 4], y = [1, 3, 2, 4]: 5 concordant and 1 discordant pair of 6 -> (5 - 1) / 6
    assert stats.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4], resamples=0).value == pytest.approx(4 / 6)
    # ties: x = [1, 1, 2, 3], y = [1, 2, 2, 3]: nc = 4, nd = 0, one pair tied only in x, one only in y
    # tau_b = (nc - nd) / sqrt((nc + nd + t_x) (nc + nd + t_y)) = 4 / sqrt(5 * 5) = 0.8
    assert stats.kendall_tau([1, 1, 2, 3], [1, 2, 2, 3], resamples=0).value == pytest.approx(0.8)


def test_correlations_match_scipy_and_bootstrap_is_seeded():
    x = [0.1, 0.4, 0.35, 0.8, 0.5, 0.9, 0.2, 0.65, 0.7, 0.3]
    y = [1, 3, 2, 5, 3, 6, 1, 4, 6, 2]
    k = stats.kendall_tau(x, y, resamples=1000, seed=1)
    assert k.value == pytest.approx(sp.kendalltau(x, y, variant="b").statistic)
    assert k.p_value == pytest.approx(sp.kendalltau(x, y, variant="b").pvalue)
    assert k.ci_low <= k.value <= k.ci_high and k.resamples == 1000 and k.n == 10
    assert stats.kendall_tau(x, y, resamples=1000, seed=1) == k
    assert stats.kendall_tau(x, y, resamples=1000, seed=2).ci_low != k.ci_low
    s = stats.spearman(x, y, resamples=200)
    assert s.value == pytest.approx(sp.spearmanr(x, y).statistic)


def test_unscored_pairs_are_dropped_not_imputed():
    r = stats.kendall_tau([1, None, 2, 3, float("nan")], [1, 5, 2, 3, 4], resamples=0)
    assert r.n == 3 and r.value == pytest.approx(1.0)


def test_mae_hand_derived():
    # |1-2|, |2-2|, |3-5| = 1, 0, 2: mean 1, population std sqrt(2/3)
    out = stats.mae([1, 2, 3], [2, 2, 5])
    assert out["mae"] == 1 and out["std"] == pytest.approx(math.sqrt(2 / 3)) and out["n"] == 3


def test_error_type_f1_vert_appendix_c():
    # category 0: TP = min(2,1) + min(1,3) = 2, FP = 0 + 2 = 2, FN = 1 + 0 = 1 -> P 0.5, R 2/3, F1 4/7
    # category 1: TP = 1, FP = 0, FN = 0 -> 1, 1, 1; a category nobody counted -> 0 (defined as 0)
    out = stats.error_type_f1([[2, 0, 0], [1, 1, 0]], [[1, 0, 0], [3, 1, 0]])
    assert out[0]["precision"] == 0.5 and out[0]["recall"] == pytest.approx(2 / 3)
    assert out[0]["f1"] == pytest.approx(4 / 7)
    assert out[1]["f1"] == 1.0 and out[2] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0.0, "fp": 0.0,
                                              "fn": 0.0}


def test_preference_accuracy_interval_is_wilson_and_never_the_point_itself():
    """preference-eval's CI was a percentile bootstrap of the share of pairs right: 20 pairs all right printed
    "1.00 [1.00, 1.00]", and at a true accuracy of 0.95 on 20 pairs it held the truth 59% of the time. It is now the
    Wilson score interval (scipy's binomtest), checked here against its formula."""
    from radmetrics.meta import compare_stats as cs
    from radmetrics.meta.preference import preference_accuracy

    def wilson(k, n, z=1.959963984540054):
        centre, half = (k + z * z / 2) / (n + z * z), z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
        return centre - half, centre + half

    for k, n in ((20, 20), (17, 20), (0, 5), (1, 1)):
        out = cs.proportion_ci([True] * k + [False] * (n - k))
        assert out.value == k / n and (out.ci_low, out.ci_high) == pytest.approx(wilson(k, n), abs=1e-9)
        assert out.ci_low < out.ci_high
    assert cs.proportion_ci([]).reason == "no pairs" and cs.proportion_ci([True], resamples=0).ci_low is None
    refs = [f"left pleural effusion number {i} noted" for i in range(20)]
    rows = [{"reference": r, "candidate_a": r, "candidate_b": "heart size normal", "preferred": "a"} for r in refs]
    entry = preference_accuracy(rows, ["rouge-l"], {}, resamples=1000)["metrics"]["rouge-l"]
    assert entry["accuracy"] == 1.0 and (entry["ci_low"], entry["ci_high"]) == pytest.approx(wilson(20, 20))


def test_category_accuracy_rounds_expert_mean():
    assert stats.category_accuracy([[1, 0], [2, 1]], [[1.4, 0.2], [1.6, 0.0]]) == [1.0, 0.5]


def test_preference_accuracy():
    # pair 1: metric and expert prefer A; pair 2: both prefer B; pair 3: metric ties -> counted wrong
    assert stats.preference_accuracy([0.9, 0.2, 0.5], [0.1, 0.8, 0.5], [True, False, True]) == pytest.approx(2 / 3)
    # error counts: lower is better
    assert stats.preference_accuracy([1, 3], [2, 1], [True, False], higher_is_better=False) == 1.0


def test_paired_randomization_test():
    expert = list(range(20))
    same = stats.paired_randomization_test(expert, expert, expert, trials=200)
    assert same["difference"] == 0 and same["p_value"] == 1.0
    noise = [((i * 7) % 20) for i in range(20)]
    different = stats.paired_randomization_test(expert, noise, expert, trials=500, seed=3)
    assert different["difference"] > 0.5 and different["p_value"] < 0.01


def test_paired_randomization_p_value_depends_on_the_rankings_not_the_units():
    """Review 24 (H1): the test swapped raw scores, so a 0..1 metric against a 0..5 error count (or the same
    metric times 100) gave other p-values for the very same two rankings (0.007 against 0.128)."""
    expert = [float((i * 7) % 11) for i in range(30)]
    a = [e + ((i * 5) % 7) for i, e in enumerate(expert)]  # close to the experts
    b = [float((i * 3) % 13) for i in range(30)]  # far from them
    base = stats.paired_randomization_test(a, b, expert, trials=300, seed=2)
    for rescaled_b in ([100 * x for x in b], [x - 5 for x in b], [x**3 for x in b], [0.01 * x + 7 for x in b]):
        out = stats.paired_randomization_test(a, rescaled_b, expert, trials=300, seed=2)
        assert out == base  # the same rankings: the same difference and the same p-value
    assert base["difference"] == pytest.approx(stats.kendall_tau(a, expert).value - stats.kendall_tau(b, expert).value)
    scaled_a = stats.paired_randomization_test([x / 50 for x in a], b, expert, trials=300, seed=2)
    assert scaled_a == base


def test_paired_randomization_test_has_no_p_value_where_a_correlation_is_undefined():
    """Review 10: a metric with one score for every row has no τ, so no difference; the test still gave
    p = 1/(trials+1) = 0.001 (a NaN difference compared as never reached), the most significant p there is."""
    import warnings

    expert = [float(i % 5) for i in range(20)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no raw scipy warning reaches the user
        out = stats.paired_randomization_test([1.0] * 20, expert, expert, trials=200)
        tau = stats.kendall_tau([1.0] * 20, expert)
    assert math.isnan(out["difference"]) and math.isnan(out["p_value"]) and out["trials"] == 0
    assert math.isnan(tau.value) and tau.n == 20


def test_rexamine_paired_t_test_with_bonferroni():
    original = {"green": {"A": [0.5, 0.6, 0.7, 0.8], "B": [0.2, 0.4, 0.3, 0.5]},
                "vert": {"A": [0.1, 0.2, 0.3, 0.4], "B": [0.3, 0.3, 0.4, 0.4]}}
    standardized = {"green": {"A": [0.6, 0.72, 0.79, 0.93], "B": [0.2, 0.41, 0.3, 0.5]},
                    "vert": {"A": [0.1, 0.2, 0.3, 0.41], "B": [0.3, 0.31, 0.4, 0.4]}}
    rows = stats.rexamine_site_tests(original, standardized)
    assert len(rows) == 4 and all(r["threshold"] == pytest.approx(0.05 / 4) for r in rows)
    first = rows[0]
    expected = sp.ttest_rel(original["green"]["A"], standardized["green"]["A"])
    assert first["p_value"] == pytest.approx(expected.pvalue) and first["t"] == pytest.approx(expected.statistic)
    assert first["significant"] == (expected.pvalue < 0.05 / 4)
    # the paper's sign (ReXamine-Global Sec. 2): scores oriented higher = worse, t of standardized - original.
    # GREEN is higher-is-better: standardized references raise it, so oriented scores fall: t < 0, as Table 2.
    assert first["t"] < 0 and first["t_convention"] == "paper"
    # a lower-is-better metric (an error count) that falls against standardized references: also t < 0 ...
    errors = {"green_ec": {"A": [3, 2, 4, 3]}}
    fewer = {"green_ec": {"A": [2, 1, 2, 2]}}
    paper = stats.rexamine_site_tests(errors, fewer, higher_is_better={"green_ec": False})[0]
    assert paper["t"] < 0
    assert paper["t"] == pytest.approx(sp.ttest_rel(fewer["green_ec"]["A"], errors["green_ec"]["A"]).statistic)
    # ... where the raw convention (original - standardized on the scores as given) flips its sign
    raw = stats.rexamine_site_tests(errors, fewer, higher_is_better={"green_ec": False}, convention="raw")[0]
    assert raw["t"] == pytest.approx(-paper["t"]) and raw["p_value"] == pytest.approx(paper["p_value"])


def test_paired_t_test_with_zero_variance_gives_no_t_rather_than_p_zero():
    """Review: a shift that is the same for every report gave t = ±inf and p = 0, "significant" for any shift
    however small. Now n/a with the reason, in the stats API and in the rexamine command's tests alike."""
    from radmetrics.meta.rexamine import site_t_tests
    from radmetrics.meta.runs import MetricRun

    shifted = stats.paired_t_test([0.51, 0.61, 0.71], [0.5, 0.6, 0.7])
    assert shifted["t"] is None and shifted["p_value"] is None
    assert shifted["reason"] == "every pair differs by the same +0.01: zero variance, the t-test is undefined"
    assert stats.paired_t_test([1, 2], [1, 2]) == {"t": 0.0, "p_value": 1.0,
                                                    "reason": "identical scores under both references"}
    assert stats.paired_t_test([1], [2])["t"] is None
    # review 29a: differences near 10 that vary by 1e-4 are not "the same" (a relative tolerance said so)
    near_ten = stats.paired_t_test([10.0001, 10.0, 10.0002, 10.00005], [0.0, 0.0, 0.0, 0.0])
    assert near_ten["t"] == pytest.approx(sp.ttest_rel([10.0001, 10.0, 10.0002, 10.00005], [0.0] * 4).statistic)
    assert stats.paired_t_test([0.1, 0.3], [0.0, 0.2])["reason"].startswith("every pair differs by the same +0.1")
    varied = stats.paired_t_test([0.52, 0.61, 0.75], [0.5, 0.6, 0.7])
    assert varied["t"] == pytest.approx(sp.ttest_rel([0.52, 0.61, 0.75], [0.5, 0.6, 0.7]).statistic)
    row = stats.rexamine_site_tests({"m": {"A": [0.5, 0.6, 0.7]}}, {"m": {"A": [0.51, 0.61, 0.71]}})[0]
    assert row["t"] is None and row["significant"] is None and "zero variance" in row["reason"]
    original = {"m": MetricRun("m", [0.5, 0.6, 0.7, 0.2, 0.3], True)}
    standardized = {"m": MetricRun("m", [0.51, 0.61, 0.71, 0.3, 0.35], True)}
    rows = site_t_tests(original, standardized, ["A", "A", "A", "B", "B"])
    assert rows[0]["t"] is None and rows[0]["significant"] is None and "zero variance" in rows[0]["reason"]
    expected = sp.ttest_rel([-0.3, -0.35], [-0.2, -0.3])
    assert rows[1]["t"] == pytest.approx(expected.statistic) and rows[1]["p_value"] == pytest.approx(expected.pvalue)


def test_ensembles():
    avg = stats.ensemble_average([[1, 2, 3], [10, 20, 30]])
    assert avg == pytest.approx([-1.2247, 0.0, 1.2247], abs=1e-4)  # both z-score to the same values
    # y = 1 + 2 a - b fitted exactly on train, applied to test
    train = [[0, 1, 2, 3], [1, 0, 2, 1]]
    fit = stats.ensemble_linear(train, [1 + 2 * a - b for a, b in zip(*train)], [[5], [1]])
    assert fit["intercept"] == pytest.approx(1) and fit["weights"] == pytest.approx([2, -1])
    assert fit["test_predictions"] == pytest.approx([10])


# -- ReXVal converter -----------------------------------------------------------------------------------------
def test_rexval_converter_round_trips_its_fixture(tmp_path):
    import datasets

    from radmetrics.data import convert

    out = convert("rexval", FIXTURES / "rexval", tmp_path / "rexval")
    data = datasets.load_from_disk(str(out))
    assert len(data) == 20 and (out / "README.md").read_text().startswith("---\nlicense: other")
    with (FIXTURES / "rexval" / "50_samples_gt_and_candidates.csv").open() as fh:
        reports = list(csv.DictReader(fh))
    with (FIXTURES / "rexval" / "6_valid_raters_per_rater_error_categories.csv").open() as fh:
        raters = list(csv.DictReader(fh))
    for row in data:
        source = reports[row["study_number"]]
        assert row["reference"] == source["gt_report"] and row["candidate"] == source[row["candidate_type"]]
        assert row["study_id"] == source["study_id"] and len(row["rater_significant"]) == 6
    # one pair by hand: rater 2, study 1, radgraph, category 1 (a), significant
    row = next(r for r in data if r["id"] == "rexval-1-radgraph")
    n = sum(int(r["num_errors"]) for r in raters if r["study_number"] == "1" and r["candidate_type"] == "radgraph"
            and r["rater_index"] == "2" and r["error_category"] == "1" and r["clinically_significant"] == "True")
    assert row["rater_significant"][2][0] == n
    means = [sum(rs[c] for rs in row["rater_significant"]) / 6 for c in range(6)]
    assert row["expert_significant"] == pytest.approx(means) and row["expert_score"] == pytest.approx(sum(means))


def test_rexval_bad_files_name_the_problem(tmp_path):
    from radmetrics.data.rexval import read_rexval
    from radmetrics.errors import InputError

    (tmp_path / "50_samples_gt_and_candidates.csv").write_text("study_id,gt_report,radgraph\n1,ref,cand\n")
    (tmp_path / "6_valid_raters_per_rater_error_categories.csv").write_text(
        "study_number,candidate_type,rater_index,error_category,clinically_significant,num_errors\n0,radgraph,0,9,True,1\n")
    with pytest.raises(InputError, match="line 2: .*error_category 9, num_errors 1 out of range"):
        read_rexval(tmp_path)


@pytest.mark.parametrize("name, file", [("rexval", "50_samples_gt_and_candidates.csv"),
                                        ("rexval", "6_valid_raters_per_rater_error_categories.csv"),
                                        ("radeval", "reader_study_final_with_annotationsv3.csv"),
                                        ("refisco", "refisco_annotations.csv")])
def test_a_download_cut_inside_its_last_quoted_field_is_an_error_naming_its_line(tmp_path, name, file):
    """Session 33 (review 39b's left item): cut inside the last column's quotes, the last row still has the header's
    number of fields, and its cut text was converted as if whole. Now an error naming the line; nothing written."""
    import shutil

    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    with open(folder / file, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    text = buffer.getvalue().rstrip("\n")
    last = rows[-1][-1]
    cut = len(text) - len(last.replace('"', '""')) - 1 + min(5, len(last) // 2)  # inside the last field's quotes
    (folder / file).write_text(text[:cut], encoding="utf-8")
    lines = text[:cut].count("\n") + 1
    source = folder if name == "rexval" else folder / file
    line = _one_line_error(_convert(name, source, "-o", tmp_path / "out", cwd=tmp_path))
    assert f"{file} line " in line and "ends inside a quoted field" in line and "cut short" in line, line
    assert int(line.split(f"{file} line ")[1].split(":")[0]) <= lines
    assert not (tmp_path / "out").exists()


def _convert(*args, cwd):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", "data", "convert", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=os.environ.copy())


def _one_line_error(run):
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return run.stderr.strip().splitlines()[-1]


def test_rexval_duplicated_or_non_whole_counts_are_errors_never_added_or_truncated(tmp_path):
    """Review 25 M1: a rater line given twice was added twice (expert_score 4.83 -> 5.17, no word); num_errors 2.7
    became 2; inf was an OverflowError traceback."""
    source = FIXTURES / "rexval"
    reports = (source / "50_samples_gt_and_candidates.csv").read_bytes()
    raters = (source / "6_valid_raters_per_rater_error_categories.csv").read_text().splitlines()
    for case, lines, needle in (
            ("dup", [*raters, raters[1]], f"line {len(raters) + 1} repeats line 2 (study_number 0, candidate_type "
                                          f"'radgraph', rater_index 0, error_category 1, clinically_significant True)"),
            ("frac", [raters[0], raters[1].replace(",2", ",2.7"), *raters[2:]], "line 2: num_errors = '2.7' is not a count"),
            ("inf", [raters[0], raters[1].replace(",2", ",inf"), *raters[2:]], "line 2: num_errors = 'inf' is not a count"),
            ("nan", [raters[0], raters[1].replace(",2", ",nan"), *raters[2:]], "line 2: num_errors = 'nan' is not a count")):
        folder = tmp_path / case
        folder.mkdir()
        (folder / "50_samples_gt_and_candidates.csv").write_bytes(reports)
        (folder / "6_valid_raters_per_rater_error_categories.csv").write_text("\r\n".join(lines) + "\r\n")
        line = _one_line_error(_convert("rexval", folder, "-o", tmp_path / f"out_{case}", cwd=tmp_path))
        assert needle in line, line
        assert not (tmp_path / f"out_{case}").exists()
    # a whole count written as 2.0 is still 2
    folder = tmp_path / "whole"
    folder.mkdir()
    (folder / "50_samples_gt_and_candidates.csv").write_bytes(reports)
    (folder / "6_valid_raters_per_rater_error_categories.csv").write_text(
        "\n".join([raters[0], raters[1].replace(",2", ",2.0"), *raters[2:]]) + "\n")
    from radmetrics.data.rexval import read_rexval

    assert read_rexval(folder) == read_rexval(source)


@pytest.mark.parametrize("name, file", [("rexval", "50_samples_gt_and_candidates.csv"),
                                        ("radeval", "reader_study_final_with_annotationsv3.csv"),
                                        ("refisco", "refisco_annotations.csv")])
def test_a_download_cut_inside_a_quoted_field_is_an_error_naming_its_line(tmp_path, name, file):
    """Review 39b: a ReXVal reports file cut inside its last row's radgraph text (an interrupted download) was
    converted without a word: that candidate was the cut text and the row's other three candidates None (lm_eval
    then died on them with an AttributeError); RadEval's cut row became an unannotated pair. A row with other than
    the header's number of fields is now an error naming its line, and nothing is written."""
    import shutil

    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    with open(folder / file, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)  # the same data, every field quoted
    text = buffer.getvalue()
    line_no, first, start, quoted = 1, 1, 0, False  # where the last record starts: after a newline outside quotes
    for at, char in enumerate(text.rstrip("\n")):
        quoted ^= char == '"'
        if char == "\n":
            line_no += 1
            first, start = (first, start) if quoted else (line_no, at + 1)
    field = next(i for i, value in enumerate(rows[-1][:-1]) if len(value) > 30)  # a report, not the last column
    before = "".join('"' + value.replace('"', '""') + '",' for value in rows[-1][:field])
    cut = start + len(before) + 15  # inside that report
    assert text[start:].startswith(before) and text[:cut].count('"') % 2
    (folder / file).write_text(text[:cut], encoding="utf-8")
    source = folder if name == "rexval" else folder / file
    line = _one_line_error(_convert(name, source, "-o", tmp_path / "out", cwd=tmp_path))
    assert f"{file} line {first}: " in line and "fields, the header has" in line and "cut short" in line, line
    assert not (tmp_path / "out").exists()


def test_refisco_report_repeated_after_other_reports_is_an_error(tmp_path):
    """Review 25 M1, the same pattern in ReFiSco: a file concatenated twice added every line's severity twice."""
    lines = (FIXTURES / "refisco" / "refisco_annotations.csv").read_text().splitlines()
    doubled = tmp_path / "doubled.csv"
    doubled.write_text("\n".join([*lines, *lines[1:]]) + "\n")
    line = _one_line_error(_convert("refisco", doubled, "-o", tmp_path / "out", cwd=tmp_path))
    assert f"doubled.csv line {len(lines) + 1}: report_id '0' again, after other reports (its lines start at " \
           "line 2)" in line, line


# -- meta-eval --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_meta_eval_writes_the_report(tiny_judge, tmp_path):
    out = tmp_path / "report"
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "meta-eval", "-m", "green", "-m", "green_ec",
                          "-m", str(FIXTURES / "word_overlap") + ":scores", "-d", str(FIXTURES / "rexval"), "--judge", str(tiny_judge),
                          "--max-new-tokens", "256", "--cache", str(tmp_path / "c.sqlite"), "--resamples", "200",
                          "-o", str(out)], capture_output=True, text=True, cwd=REPO, env=os.environ.copy())
    # the tiny judge runs into the token limit on some rows: the report is written, and the run exits 2 naming them
    results = json.loads((out / "results.json").read_text())
    cut = results["metrics"]["green"]["answers_cut"]
    assert (run.returncode, "Traceback" in run.stderr) == ((2, False) if cut else (0, False)), run.stderr[-3000:]
    assert not cut or f"green: {cut} judge answer(s) reached the token limit" in run.stderr.splitlines()[-1]
    assert set(results["metrics"]) == {"green", "green_ec", str(FIXTURES / "word_overlap") + ":scores"}
    green = results["metrics"]["green"]
    assert green["kendall_tau_b"]["resamples"] == 200 and "error_type_f1" in green
    # the report's τ equals scipy's on per_sample.csv (GREEN up = better, expert errors down = better)
    with (out / "per_sample.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    kept = [(float(r["green"]), -float(r["expert_score"])) for r in rows if r["green"]]
    assert len(kept) >= 5
    assert green["kendall_tau_b"]["value"] == pytest.approx(sp.kendalltau(*zip(*kept), variant="b").statistic,
                                                           abs=1e-12)
    assert green["kendall_tau_b"]["n"] == len(kept)
    # green_ec counts errors (lower is better): oriented the same way, so its τ sign is comparable
    assert len(results["pairwise_randomization"]) == 3
    for png in ("scatter_green.png", "error_counts_green.png", "scatter_green_ec.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    summary = (out / "summary.md").read_text()
    assert "| green |" in summary and "Error-type F1 for green" in summary


def test_radeval_converter_parses_annotations_and_reports_malformed(tmp_path):
    import datasets

    from radmetrics.data import convert
    from radmetrics.data.radeval import parse_annotation

    out = convert("radeval", FIXTURES / "radeval", tmp_path / "radeval")
    data = datasets.load_from_disk(str(out))
    assert len(data) == 12  # 4 studies x 3 candidates, malformed ones kept
    first = data[0]
    assert first["expert_significant"] == [1, 2, 0, 1, 0, 0] and first["expert_score"] == 4
    assert first["grammar_insignificant"] == 1 and first["site"] == "mimic-cxr"
    problems = {r["id"]: r["annotation_problem"] for r in data if r["annotation_problem"]}
    assert problems == {"radeval-2-2": "reader_study_final_with_annotationsv3.csv line 4, annotation2: blank annotation",
                        "radeval-3-3": "reader_study_final_with_annotationsv3.csv line 5, annotation3: no count in "
                                       "'1. several'"}
    assert data[7]["expert_score"] is None and data[7]["expert_significant"] == []  # never zero-filled
    assert parse_annotation("Significant errors:\n1) 2\n\nInsignificant errors:\n7) 1")[0][0] == 2
    with pytest.raises(ValueError, match="before any significant/insignificant header"):
        parse_annotation("1. False prediction: 2")


def test_rate_eval_converter_round_trips(tmp_path):
    import datasets

    from radmetrics.data import convert

    data = datasets.load_from_disk(str(convert("rate_eval", FIXTURES / "rate_eval", tmp_path / "r")))
    with (FIXTURES / "rate_eval" / "rate_eval_paragraph_test.csv").open() as fh:
        source = list(csv.DictReader(fh))
    assert [r["reference"] for r in data] == [s["gt_report"] for s in source]
    assert [r["expert_score"] for r in data] == pytest.approx([float(s["Score"]) / 5 for s in source])
    assert all(r["expert_higher_is_better"] for r in data)


@pytest.mark.parametrize("dataset, key, folder, n", [("radeval", "radeval_path", "radeval", 12),
                                                    ("rate_eval", "rate_eval_path", "rate_eval", 6)])
def test_lm_eval_loaders_for_every_dataset(dataset, key, folder, n):
    sys.path.insert(0, str(LM_EVAL_TASKS))
    import utils

    docs = utils.load_judge_dataset(dataset=dataset, scoring_system="green", chat_format="green",
                                    **{key: str(FIXTURES / folder)})["test"]
    assert len(docs) == n and docs[0]["judge_prompt"].startswith("<|user|>\nObjective:")
    out = utils.process_results(dict(docs[0]), ["garbage"])
    assert out["unparsed"] == 1.0 and out["kendall_tau"][0] is None


def test_refisco_converter_matches_finerad_paper_examples(tmp_path):
    """The fixture holds FineRadScore's own annotated examples 1, 3, 4 and 5 as annotation-sheet rows."""
    import datasets

    from radmetrics.data import convert

    data = datasets.load_from_disk(str(convert("refisco", FIXTURES / "refisco", tmp_path / "refisco")))
    assert [r["expert_score"] for r in data] == [5.0, 5.0, 4.0, 0.0]  # = FineRadScore sums of the examples
    assert [r["expert_severity_max"] for r in data] == [2, 3, 2, 0]
    assert data[0]["inserted_lines"] == 1 and data[0]["corrected_lines"] == 2
    assert json.loads(data[1]["line_annotations"])[3]["corrected"] == "[delete]"


def test_a_constant_metric_is_na_without_a_warning_about_resamples():
    """A metric with the same score on every row has no τ or ρ: n/a, with the table's note saying it ranks nothing.
    Before, two warnings also said its CI was 'made of 0 of 300 resamples (the others drew rows with one distinct
    value)', as if resampling bad luck, not the metric, were why. A metric with a correlation keeps n and its CI."""
    from datasets import Dataset

    from radmetrics.meta.report import analyse, build_report
    from radmetrics.meta.runs import MetricRun

    counts = [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 2, 1]
    data = Dataset.from_dict({"id": [str(i) for i in range(12)], "expert_score": [float(c) for c in counts],
                              "expert_higher_is_better": [False] * 12})
    agreeing = [1 - c / 6 for c in counts]
    agreeing[3] = None  # unscored: left out of this metric's correlations only
    results = analyse([MetricRun("agreeing", agreeing, True), MetricRun("constant", [0.5] * 12, True)], data,
                      resamples=300, seed=0)
    assert not any("resamples" in w for w in results["warnings"]), results["warnings"]
    constant = results["metrics"]["constant"]
    assert math.isnan(constant["kendall_tau_b"]["value"]) and math.isnan(constant["spearman"]["value"])
    agreeing_tau = results["metrics"]["agreeing"]["kendall_tau_b"]
    assert agreeing_tau["n"] == 11 and agreeing_tau["value"] == pytest.approx(1.0)  # oriented: agreement is +1
    note = build_report(results, "fixture", []).tables[0].note
    assert "n/a for constant: the scores (or the expert values) are the same on every row" in note


def test_meta_eval_pairwise_tests_carry_holm_adjusted_p_values():
    """With several metrics meta-eval tests every pair; each raw p below 0.05 was read as a difference, though with 5
    equally good metrics (10 pairs) some raw p is that low in far more than 5% of runs. Each tested pair now has
    p_holm (Holm across the pairs tested; a skipped pair neither gets one nor counts), and the table shows it."""
    from datasets import Dataset

    from radmetrics.meta.compare_stats import holm
    from radmetrics.meta.report import analyse, build_report
    from radmetrics.meta.runs import MetricRun

    rng = np.random.default_rng(5)
    counts = rng.integers(0, 7, 25)
    data = Dataset.from_dict({"id": [str(i) for i in range(25)], "expert_score": counts.astype(float).tolist(),
                              "expert_higher_is_better": [False] * 25})
    runs = [MetricRun(f"m{k}", (-counts + rng.normal(0, 1 + k, 25)).tolist(), True) for k in range(3)]
    runs.append(MetricRun("constant", [1.0] * 25, True))  # its 3 pairs are skipped: not in Holm's count
    results = analyse(runs, data, resamples=200, seed=0)
    tested = [t for t in results["pairwise_randomization"] if "skipped" not in t]
    skipped = [t for t in results["pairwise_randomization"] if "skipped" in t]
    assert len(tested) == 3 and len(skipped) == 3
    assert [t["p_holm"] for t in tested] == holm([t["p_value"] for t in tested])
    assert all(t["p_holm"] >= t["p_value"] for t in tested) and all(t["p_holm"] is None for t in skipped)
    table = next(t for t in build_report(results, "fixture", []).tables if "randomization" in t.title)
    assert table.headers[-1] == "p (Holm)" and "adjusted across the 3 pairs tested" in table.note


def test_meta_eval_says_when_rows_share_studies_and_resamples_whole_studies_with_resample_by():
    """Review 36c: on ReXVal's layout (4 candidate reports per study) the row bootstrap's CIs are narrower than their
    level, with no word. meta-eval now says so where the dataset's study_id repeats, and `--resample-by study_id`
    (analyse's resample_by) resamples whole studies: the same τ, an interval that says how it was made; a column
    the dataset lacks is one line."""
    from datasets import Dataset

    from radmetrics.errors import InputError
    from radmetrics.meta.report import analyse, build_report
    from radmetrics.meta.runs import MetricRun

    rng = np.random.default_rng(7)
    counts = rng.integers(0, 7, 24)
    data = Dataset.from_dict({"id": [str(i) for i in range(24)], "expert_score": counts.astype(float).tolist(),
                              "expert_higher_is_better": [False] * 24, "study_id": [f"s{i // 4}" for i in range(24)]})
    run = MetricRun("m", (-counts + rng.normal(0, 1, 24)).tolist(), True)
    plain = analyse([run], data, resamples=100, seed=0)
    assert plain["resampled"] == "rows" and any("--resample-by study_id" in w for w in plain["warnings"])
    by_study = analyse([run], data, resamples=100, seed=0, resample_by="study_id")
    assert by_study["resampled"] == "study_id" and not any("resample-by" in w for w in by_study["warnings"])
    tau, plain_tau = by_study["metrics"]["m"]["kendall_tau_b"], plain["metrics"]["m"]["kendall_tau_b"]
    assert tau["resampled_groups"] == "study_id: 6 groups" and tau["value"] == plain_tau["value"]
    assert (tau["ci_low"], tau["ci_high"]) != (plain_tau["ci_low"], plain_tau["ci_high"])
    assert "whole groups of rows by study_id" in build_report(by_study, "fixture", []).intro[1]
    with pytest.raises(InputError, match="'studyid': the dataset has no such column"):
        analyse([run], data, resamples=10, resample_by="studyid")
