"""Mutation testing of radmetrics' pure core with mutmut, one module at a time, on a scratch copy.

    python tools/mutation.py                       # every module in MODULES
    python tools/mutation.py green/parse meta/stats --time-box 900
    python tools/mutation.py green/parse --sample 300 --seed 18          # a seeded sample of a large module
    python tools/mutation.py judge/cache --survivors-of /tmp/radmetrics-mutation --scratch /tmp/rerun
                                                   # only the previous run's survivors, after new tests

For each module: copy the working tree (tracked and untracked, not ignored files) to a scratch folder, write
a [tool.mutmut] section naming that module and its fast tests, run `nice mutmut run` under a time box and
print killed / survived / other counts. mutmut maps each mutant to the tests that call the mutated function
and runs only those, so a module takes minutes on one core. Survivors are written as diffs to
<scratch>/<module>.survivors.txt for review: each is either killed by a new test or listed as equivalent in
TESTING.md. The working tree itself is never modified. Only in-process tests count: mutmut maps a test to a
mutant by the calls it sees in the test's own process, so a test that runs radmetrics in a subprocess (the CLI)
is never run against a mutant.
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

# module (under radmetrics/) -> the fast tests that exercise it: pure-function tests plus the few end-to-end ones
# that run in-process in seconds (no tiny judge, no lm_eval, no hub Space start-up, no slow fuzzing). mutmut runs,
# per mutant, only the tests of this list that call the mutated function, fastest first, stopping at the first
# failure.
SURVIVORS = "tests/test_mutation_survivors.py"
MODULES: dict[str, list[str]] = {
    "green/parse.py": ["tests/test_green_parse.py", "tests/test_green_drift.py", SURVIVORS],
    "green/derived.py": ["tests/test_judge_metrics.py", "tests/test_green_realistic.py"],
    "vert/parse.py": ["tests/test_vert_parse.py", SURVIVORS],
    "finerad_score/parse.py": ["tests/test_finerad_parse.py", SURVIVORS],
    "meta/stats.py": ["tests/test_stats_reference.py", "tests/test_meta.py", SURVIVORS],
    "judge/cache.py": ["tests/test_registry_and_cache.py", SURVIVORS],
    "judge/replay.py": ["tests/test_caught_bugs.py", "tests/test_bad_input.py", SURVIVORS],
    "errors.py": ["tests/test_caught_bugs.py", "tests/test_secrets.py", SURVIVORS],
    "hub/__init__.py": ["tests/test_caught_bugs.py", "tests/test_hub_push.py", SURVIVORS],
    "hub/privacy.py": ["tests/test_hub_push.py", SURVIVORS],
}
# tests that need the tiny judge, lm_eval, a Space start-up or a long fuzz run: never part of a mutation selection
DESELECT = ["-k", "not tiny_judge and not max_input_tokens and not stop_sequences_end and not fuzzed "
                  "and not meta_eval_writes and not space_app_loads and not publish_metrics"]


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


def mutant_names(work: Path) -> list[str]:
    """Every mutant mutmut generated in WORK (from its meta files)."""
    import json

    names: list[str] = []
    for meta in sorted((work / "mutants").rglob("*.meta")):
        names += sorted(json.loads(meta.read_text())["exit_code_by_key"])
    return names


def survivors_of(path: Path) -> list[str]:
    """The mutant names a previous run's <module>.survivors.txt lists."""
    return re.findall(r"^# (\S+): (?:survived|no tests|not checked)$", path.read_text(), re.M)


def run_module(module: str, tests: list[str], scratch: Path, time_box: int, sample: int = 0, seed: int = 18,
               only: list[str] | None = None) -> dict:
    work = scratch / module.replace("/", "_").removesuffix(".py")
    scratch_copy(work)
    tests = [t for t in tests if (work / t.split("::")[0]).exists()]
    selection = ", ".join(f'"{t}"' for t in tests + DESELECT)
    # mutmut runs the tests in <work>/mutants/, a copy of radmetrics/ and tests/: the data folders the package
    # and the tests read (hub_cards/, lm_eval_tasks/, fixtures beside the README ...) go with them
    extra = ", ".join(f'"{p.name}"' for p in sorted(work.iterdir())
                      if p.name not in {"radmetrics", "tests", "mutants", ".git"})
    with (work / "pyproject.toml").open("a") as fh:
        fh.write(f'\n[tool.mutmut]\nsource_paths = ["radmetrics"]\nonly_mutate = ["radmetrics/{module}"]\n'
                 f"also_copy = [{extra}]\npytest_add_cli_args_test_selection = [{selection}]\n")
    started = time.time()
    mutmut = [sys.executable, "-m", "mutmut"]
    chosen: list[str] = []
    if sample:
        # generate every mutant and run only the first of each function, then draw the sample with a fixed seed
        subprocess.run(["nice", *mutmut, "run", "*__mutmut_1"], cwd=work, capture_output=True)
        import random

        every = mutant_names(work)
        chosen = sorted(random.Random(seed).sample(every, min(sample, len(every))))
    if only:
        chosen = only
    try:
        subprocess.run(["nice", *mutmut, "run", *chosen], cwd=work, timeout=time_box, capture_output=True)
        finished = True
    except subprocess.TimeoutExpired:
        finished = False
    results = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, capture_output=True,
                             text=True).stdout
    status = dict(re.findall(r"^\s*(\S+): (\w[\w ]*)$", results, re.M))
    if chosen:
        status = {name: verdict for name, verdict in status.items() if name in set(chosen)}
    counts: dict[str, int] = {}
    for verdict in status.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    survivors = [name for name, verdict in status.items() if verdict in {"survived", "no tests"}]
    with (scratch / f"{work.name}.survivors.txt").open("w") as fh:
        for name in survivors:
            fh.write(subprocess.run([*mutmut, "show", name], cwd=work, capture_output=True, text=True).stdout + "\n")
        # mutants a time box left unrun: listed so that a later --survivors-of run checks them too
        fh.writelines(f"# {name}: not checked\n" for name, verdict in status.items() if verdict == "not checked")
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    total = sum(counts.values())
    return {"module": module, "total": total, "killed": killed, "survivors": len(survivors), "counts": counts,
            "minutes": round((time.time() - started) / 60, 1), "finished": finished}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="e.g. green/parse (default: all)")
    parser.add_argument("--scratch", default="/tmp/radmetrics-mutation")
    parser.add_argument("--time-box", type=int, default=1200, help="seconds per module")
    parser.add_argument("--sample", type=int, default=0, help="run only this many mutants per module, drawn with "
                        "--seed (for modules too large to finish; say so with the figures)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--survivors-of", metavar="FOLDER", help="re-run only the mutants that survived a previous "
                        "run (FOLDER/<module>.survivors.txt), after new tests were written: killed mutants stay "
                        "killed, since tests are only added")
    args = parser.parse_args()
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    chosen = [m if m.endswith(".py") else m + ".py" for m in args.modules] or list(MODULES)
    print("| module | mutants | killed | survived | kill rate | minutes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for module in chosen:
        only = None
        if args.survivors_of:
            only = survivors_of(Path(args.survivors_of) / f"{module.replace('/', '_').removesuffix('.py')}.survivors.txt")
            if not only:
                continue
        r = run_module(module, MODULES[module], scratch, args.time_box, args.sample, args.seed, only)
        rate = f"{100 * r['killed'] / r['total']:.1f}%" if r["total"] else "n/a"
        note = "" if r["finished"] else " (time box hit)"
        print(f"| radmetrics/{module} | {r['total']} | {r['killed']} | {r['survivors']} | {rate} | "
              f"{r['minutes']}{note} |", flush=True)
    print(f"Survivor diffs: {scratch}/*.survivors.txt")


if __name__ == "__main__":
    main()
