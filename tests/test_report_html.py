"""The meta-eval report a researcher shares: one self-contained report.html, checked in a real headless browser
(Chromium from Debian's packages; .ci/run installs it), and plots that say what they show."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from radmetrics.meta.html_report import cell_text
from radmetrics.meta.report import CATEGORY_NAMES, MetricRun, write_report


def expert_dataset():
    import datasets

    rows = []
    for i in range(12):
        sig = [i % 2, (i // 2) % 2, 0, i % 3 == 0, 0, i % 4 == 0]
        rows.append({"id": f"r{i}", "dataset": "rexval", "reference": f"ref {i}", "candidate": f"cand {i}",
                     "expert_score": float(sum(sig)), "expert_higher_is_better": False,
                     "expert_significant": [float(v) for v in sig], "site": "site-A" if i < 6 else "site-B"})
    return datasets.Dataset.from_list(rows), rows


def runs_for(rows):
    counts = [[int(v) for v in r["expert_significant"]] for r in rows]
    counts[0] = [c + 1 for c in counts[0]]  # the judge over-counts one report
    green = MetricRun("green", [1 / (1 + sum(c)) for c in counts], True, counts, {"judge": "tiny"}, [None] * 12)
    local = "/tmp/some/very/long/path/to/a/local/evaluate/module/word_overlap_with_a_long_name"
    overlap = MetricRun(local, [0.1 * (i % 5) for i in range(12)], True, [None] * 12, {}, [None] * 12)
    half = MetricRun("radcliq", [None if i % 2 else float(i % 3) for i in range(12)], False, [None] * 12, {},
                     ["judge output truncated" if i % 2 else None for i in range(12)])
    failed = MetricRun.failed("bertscore", 12, "ConnectionError: Hub unreachable")
    return [green, overlap, half, failed]


def browser() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium") or shutil.which("chromium-browser")


def test_plots_have_titles_labels_full_category_names_and_direction(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    seen = {}
    original = Figure.savefig

    def record(fig, fname, *args, **kwargs):
        ax = fig.axes[0]
        seen[os.path.basename(str(fname))] = {
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "yticks": [t.get_text() for t in ax.get_yticklabels()], "size": fig.get_size_inches().tolist()}
        return original(fig, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    data, rows = expert_dataset()
    write_report(runs_for(rows), data, tmp_path / "r", resamples=50)
    scatter = seen["scatter_green.png"]
    assert scatter["title"] == "green vs experts (n = 12)"
    assert "clinically significant errors" in scatter["xlabel"] and "lower is better" in scatter["xlabel"]
    assert scatter["ylabel"] == "green (higher is better)"
    assert seen["scatter_radcliq.png"]["ylabel"] == "radcliq (lower is better)"
    counts = seen["error_counts_green.png"]
    assert counts["title"] and counts["xlabel"].startswith("clinically significant errors")
    assert counts["yticks"] == [f"({c}) {CATEGORY_NAMES[c]}" for c in "abcdef"]
    # a local module path becomes a short label that fits the figure
    long_titles = [v["title"] for k, v in seen.items() if k.startswith("scatter_word_overlap")]
    assert long_titles and all(len(t) < 70 for t in long_titles)
    site = seen["per_site.png"]
    assert "Spearman" in site["ylabel"] and site["xlabel"] == "site"  # per-site agreement, not score boxes


def test_report_html_is_self_contained_and_renders_in_a_browser(tmp_path):
    data, rows = expert_dataset()
    folder = write_report(runs_for(rows), data, tmp_path / "r", resamples=50)
    html = (folder / "report.html").read_text()
    assert "<script" not in html and not re.search(r'(src|href)="(?!data:)', html)  # nothing to fetch
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    pngs = sorted(p.name for p in folder.glob("*.png"))
    assert len(images) == len(pngs) >= 5
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    for name in ("green", "radcliq", "bertscore", "Hub unreachable", "Per-site Spearman", "Error-type F1"):
        assert name in html
    exe = browser()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium-headless-shell (see .ci/run)")
        pytest.skip("no Chromium here: apt-get install chromium-headless-shell")
    shot = tmp_path / "shot.png"
    common = [exe, "--no-sandbox", "--disable-gpu", "--headless", "--enable-logging=stderr", "--v=0",
              "--hide-scrollbars", "--window-size=1200,2400"]
    run = subprocess.run(common + [f"--screenshot={shot}", (folder / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    console = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln or "Failed to load" in ln]
    assert console == [], console
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    dom = subprocess.run(common + ["--dump-dom", (folder / "report.html").as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    assert dom.count("<img") == len(pngs) and "Meta-evaluation on rexval" in dom
    assert dom.count("<table") >= 4


def test_compare_writes_the_same_numbers_as_one_html_page(tmp_path):
    """radmetrics compare's report.html: every metric's systems and pairs, the forest plot embedded."""
    from radmetrics.meta.compare import compare, write_outputs

    refs = [f"no effusion. small nodule {i}." for i in range(10)]
    systems = {"A": [f"no effusion. nodule {i}." for i in range(10)], "B": [f"effusion {i}." for i in range(10)]}
    # a metric that loads and then fails is "not computed" (one that cannot load stops compare before it runs)
    broken = str(Path(__file__).parent / "fixtures" / "broken_metric")
    result = compare(systems, refs, ["rouge-l", "bleu-2", broken], [f"r{i}" for i in range(10)],
                     resamples=200, seed=0)
    paths = write_outputs(result, tmp_path / "cmp")
    html = paths["html"].read_text()
    data = json.loads(paths["results"].read_text())
    for metric in ("rouge-l", "bleu-2"):
        assert f"{metric}: systems" in html and f"{metric}: pairs" in html
        pair = data["metrics"][metric]["pairs"][0]
        assert cell_text(pair["difference"]) in html and cell_text(pair["p_value"]) in html
    assert "broken_metric: not computed: RuntimeError: scorer weights not found" in html
    assert html.count('src="data:image/png;base64,') == 1 and "<script" not in html


def test_compare_html_says_win_tie_loss_is_from_each_pairs_first_system(tmp_path):
    """Review 24 L10: the pairs table said win/tie/loss is "from A's side" for every pair; for the B − C row it is
    from B's side (the pair's first system), and counts follow the metric's direction."""
    from radmetrics.meta.compare import compare, write_outputs

    refs = [f"no effusion. small nodule {i}." for i in range(6)]
    systems = {"A": [f"no effusion. nodule {i}." for i in range(6)], "B": [f"effusion {i}." for i in range(6)],
               "C": [f"no effusion. small nodule {i}." for i in range(6)]}
    result = compare(systems, refs, ["rouge-l"], [f"r{i}" for i in range(6)], resamples=0, seed=0)
    html = write_outputs(result, tmp_path / "cmp")["html"].read_text()
    assert "from A's side" not in html
    assert "first system (column A) scored better / the same / worse (higher is better)" in html
    (b_c,) = [p for p in result.to_dict()["metrics"]["rouge-l"]["pairs"] if (p["a"], p["b"]) == ("B", "C")]
    assert (b_c["win"], b_c["loss"]) == (0, 6)  # B's side: C, a copy of the references, beats B on every row


def test_write_report_checks_its_report_folder_as_the_cli_does(tmp_path):
    """meta-eval refused a folder holding files no meta-eval report wrote (review 24 M6); write_report, the Python way
    to write its report, replaced them (a user's own results.json). Now it refuses before writing anything, with the
    CLI's line, as compare's write_outputs does; overwrite=True replaces them."""
    from radmetrics.errors import InputError

    data, rows = expert_dataset()
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.json").write_text('{"my": "numbers"}')
    with pytest.raises(InputError, match="holds results.json, which no radmetrics meta-eval report there "
                                         "wrote.*pass --overwrite \\(overwrite=True from Python\\)"):
        write_report(runs_for(rows), data, out, resamples=20)
    assert [p.name for p in out.iterdir()] == ["results.json"] and "my" in (out / "results.json").read_text()
    folder = write_report(runs_for(rows), data, out, resamples=20, overwrite=True)
    assert json.loads((folder / "results.json").read_text())["radmetrics_report"]["command"] == "meta-eval"
    write_report(runs_for(rows), data, out, resamples=20)  # its own earlier report is replaced without overwrite
