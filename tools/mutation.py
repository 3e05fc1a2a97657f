"""Mutation testing of radmetrics' pure core with mutmut, one module at a time, on a scratch copy.

    python tools/mutation.py                       # every module in MODULES
    python tools/mutation.py green/parse meta/stats --time-box 900

For each module: copy the working tree (tracked and untracked, not ignored files) to a scratch folder, write
a [tool.mutmut] section naming that module and its fast tests, run `nice mutmut run` under a time box and
print killed / survived / other counts. mutmut maps each mutant to the tests that call the mutated function
and runs only those, so a module takes minutes on one core. Survivors are written as diffs to
<scratch>/<module>.survivors.txt for review: each is either killed by a new test or listed as equivalent in
TESTING.md. The working tree itself is never modified.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# module (under radmetrics/) -> the fast tests that exercise it (no tiny judge, no lm_eval, no subprocess-only tests)
MODULES: dict[str, list[str]] = {
    "green/parse.py": ["tests/test_green_parse.py", "tests/test_green_drift.py", "tests/test_green_realistic.py",
                       "tests/test_caught_bugs.py"],
    "green/derived.py": ["tests/test_judge_metrics.py", "tests/test_green_realistic.py"],
    "green/system.py": ["tests/test_green_parse.py", "tests/test_green_realistic.py", "tests/test_caught_bugs.py"],
    "vert/parse.py": ["tests/test_vert_parse.py", "tests/test_judge_metrics.py", "tests/test_caught_bugs.py"],
    "meta/stats.py": ["tests/test_meta.py", "tests/test_stats_reference.py"],
    "judge/cache.py": ["tests/test_registry_and_cache.py"],
    "judge/replay.py": ["tests/test_caught_bugs.py", "tests/test_bad_input.py"],
    "errors.py": ["tests/test_caught_bugs.py", "tests/test_openai_backend.py"],
    "hub/__init__.py": ["tests/test_caught_bugs.py", "tests/test_hub_push.py"],
}
# tests that need the tiny judge, lm_eval or a long fuzz run: never part of a mutation selection
DESELECT = ["-k", "not tiny_judge and not max_input_tokens and not stop_sequences_end and not fuzzed "
                  "and not meta_eval_writes and not cli_run_with"]


def scratch_copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    if dest.exists():
        shutil.rmtree(dest)
    for name in files:
        src = REPO / name
        if src.is_file() and not name.startswith("tools/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    # mutmut looks for changes with git: give the copy a repository of its own
    subprocess.run("git init -q . && git add -A && git -c user.name=m -c user.email=m@x commit -qm base",
                   shell=True, cwd=dest, check=True)


def run_module(module: str, tests: list[str], scratch: Path, time_box: int) -> dict:
    work = scratch / module.replace("/", "_").removesuffix(".py")
    scratch_copy(work)
    tests = [t for t in tests if (work / t.split("::")[0]).exists()]
    selection = ", ".join(f'"{t}"' for t in tests + DESELECT)
    with (work / "pyproject.toml").open("a") as fh:
        fh.write(f'\n[tool.mutmut]\nsource_paths = ["radmetrics"]\nonly_mutate = ["radmetrics/{module}"]\n'
                 f"pytest_add_cli_args_test_selection = [{selection}]\n")
    started = time.time()
    mutmut = [sys.executable, "-m", "mutmut"]
    try:
        subprocess.run(["nice", *mutmut, "run"], cwd=work, timeout=time_box, capture_output=True)
        finished = True
    except subprocess.TimeoutExpired:
        finished = False
    results = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, capture_output=True,
                             text=True).stdout
    status = dict(re.findall(r"^\s*(\S+): (\w[\w ]*)$", results, re.M))
    counts: dict[str, int] = {}
    for verdict in status.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    survivors = [name for name, verdict in status.items() if verdict in {"survived", "no tests"}]
    with (scratch / f"{work.name}.survivors.txt").open("w") as fh:
        for name in survivors:
            fh.write(subprocess.run([*mutmut, "show", name], cwd=work, capture_output=True, text=True).stdout + "\n")
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    total = sum(counts.values())
    return {"module": module, "total": total, "killed": killed, "survivors": len(survivors), "counts": counts,
            "minutes": round((time.time() - started) / 60, 1), "finished": finished}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="e.g. green/parse (default: all)")
    parser.add_argument("--scratch", default="/tmp/radmetrics-mutation")
    parser.add_argument("--time-box", type=int, default=1200, help="seconds per module")
    args = parser.parse_args()
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    chosen = [m if m.endswith(".py") else m + ".py" for m in args.modules] or list(MODULES)
    print("| module | mutants | killed | survived | kill rate | minutes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for module in chosen:
        r = run_module(module, MODULES[module], scratch, args.time_box)
        rate = f"{100 * r['killed'] / r['total']:.1f}%" if r["total"] else "n/a"
        note = "" if r["finished"] else " (time box hit)"
        print(f"| radmetrics/{module} | {r['total']} | {r['killed']} | {r['survivors']} | {rate} | "
              f"{r['minutes']}{note} |", flush=True)
    print(f"Survivor diffs: {scratch}/*.survivors.txt")


if __name__ == "__main__":
    main()
