"""Peak memory of `radmetrics score` against the number of rows: it must not grow with the input.

    python benchmarks/streaming_memory.py --rows 10000 100000 1000000

For each size, writes an input of that many report pairs (the bundled sample's pairs, repeated with fresh ids),
fills a response cache with their answers once (the GREEN replay outputs of the sample), then runs
`radmetrics score --metric green` in a fresh process against that cache (every row a cache hit: what is measured
is the pipeline's own memory, reading -> prompts -> cache -> parse -> results file -> summary) and reports the
process's peak RSS (``ru_maxrss`` of the child). The ratio is to the smallest size.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "radmetrics" / "sample_data"


def write_input(path: Path, rows: int) -> None:
    pairs = [json.loads(line) for line in (SAMPLE / "pairs.jsonl").read_text().splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows):
            pair = dict(pairs[i % len(pairs)], id=f"row-{i}")
            fh.write(json.dumps(pair) + "\n")


def write_replay(path: Path, metric: str) -> Path:
    """Recorded answers for METRIC: GREEN's bundled judge outputs; for another system, its own `sample_answer`
    (a realistic answer in its format, scored) for each distinct pair of the sample."""
    if metric == "green":
        return SAMPLE / "green_replay.jsonl"
    import radmetrics

    system = radmetrics.get_scoring_system(metric)
    pairs = [json.loads(line) for line in (SAMPLE / "pairs.jsonl").read_text().splitlines()]
    with open(path, "w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps({"prompt": system.build_prompt(p["reference"], p["candidate"]),
                                 "response": system.sample_answer(p["reference"], p["candidate"])}) + "\n")
    return path


def run(rows: int, work: Path, cache: Path, suffix: str = ".jsonl", metric: str = "green") -> dict:
    source = work / f"pairs-{rows}.jsonl"
    write_input(source, rows)
    out = work / f"results-{rows}{suffix}"
    replay = write_replay(work / f"replay-{metric}.jsonl", metric)
    cmd = [sys.executable, "-m", "radmetrics.cli", "score", "--metric", metric, "--input", str(source),
           "--output", str(out), "--backend", "replay", "--replay", str(replay),
           "--cache", str(cache), "--no-progress"]
    start = time.perf_counter()
    with open(work / "stderr.txt", "w+") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ, HF_HUB_OFFLINE="1"))
        # wait4: this child's own rusage (RUSAGE_CHILDREN would be the max over every child so far)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(err.read()[-3000:])
    peak = usage.ru_maxrss  # KiB on Linux
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        written = pq.ParquetFile(out).metadata.num_rows
    else:
        with open(out, encoding="utf-8") as fh:
            written = sum(1 for _ in fh)
    source.unlink()
    out.unlink()
    return {"rows": rows, "metric": metric, "format": suffix[1:], "written": written, "peak_rss_mib": peak / 1024, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--metric", default="green", help="scoring system (GREEN: the bundled judge outputs; "
                        "others: their own sample answers)")
    parser.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl", help="results file format")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="radmetrics-memory-") as tmp:
        work = Path(tmp)
        cache = work / "cache.sqlite"
        results = []
        for rows in sorted(args.rows):
            results.append(run(rows, work, cache, "." + args.format, args.metric))
            print(json.dumps(results[-1]), flush=True)
    base = results[0]["peak_rss_mib"]
    print("\n| rows | peak RSS MiB | ratio to smallest | seconds |")
    print("| ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['rows']:,} | {r['peak_rss_mib']:.0f} | {r['peak_rss_mib'] / base:.2f}× | {r['seconds']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
