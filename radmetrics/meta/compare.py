"""Compare report generators ("systems") on the same references: which is better, and is it significant?

`compare(systems, references, metrics)` scores every system with every metric (judge metrics on the shared judge
and cache, one judge call list per metric for all systems together; baselines by their libraries) and returns a
`CompareResult`, a plain data structure: per system mean [bootstrap CI] and scored/unscored counts, per pair of
systems mean difference [paired bootstrap CI], paired approximate-randomization p, Holm-adjusted p across the
pairs of each metric, win/tie/loss. `load_systems` reads candidate files and matches rows by id;
`write_outputs` writes results.json (strict JSON), per_row.csv, forest.png and report.html. Statistics: compare_stats.py.
"""
from __future__ import annotations

import contextlib
import csv
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError
from radmetrics.meta import compare_stats as cs
from radmetrics.meta.html_report import (Report, Table, interval_text, p_value_text, short_label, strict_json_ready,
                                         text_as_written, to_html)
from radmetrics.meta.runs import MetricRun, check_metrics_loadable, run_metric
from radmetrics.types import call_failed_for_now, context_too_short, cut_at_max_new_tokens

log = logging.getLogger(__name__)


# -- reading and matching the systems' files ------------------------------------------------------------------
@dataclass
class Alignment:
    ids: list[str]
    references: list[Any]
    candidates: dict[str, list[Any]]
    notes: list[str] = field(default_factory=list)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    from radmetrics.io import read_rows_strict

    rows = read_rows_strict(path, why="; rows must be matched by id, so every line must be readable")
    if not rows:
        raise InputError(f"{path} has no rows")
    return rows


def _column(rows: list[dict[str, Any]], aliases: tuple[str, ...], wanted: str | None, kind: str, path: Path,
            required: bool = True) -> str | None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if wanted:
        if wanted in columns:
            return wanted
        if required:
            raise InputError(f"{path}: no column '{wanted}' for the {kind}; columns are: {', '.join(columns)}")
        return None
    from radmetrics.io import alias_column

    found = alias_column(columns, aliases)  # as score picks: a file is read alike by both commands
    if found is None and required:
        raise InputError(f"{path}: no {kind} column (expected one of {', '.join(aliases)}); columns are: "
                         f"{', '.join(columns)}")
    return found


def _not_read(name: str, path: Path, unread: tuple[str, ...], reading: str, flags: str) -> str:
    """The note on a file's other reference/candidate columns, which were not read."""
    return (f"{name}: {path} also has {', '.join(map(repr, unread))}, not read (reading {reading}); pass {flags} to "
            "choose")


def _ids(rows: list[dict[str, Any]], id_column: str | None, path: Path) -> list[str]:
    if id_column is None:
        return [f"row-{i}" for i in range(len(rows))]
    # a blank cell (CSV's empty id, "", NaN) is no id: two files' blank rows were matched as the same row "" (review 29a)
    ids = [None if _blank_id(r.get(id_column)) else str(r.get(id_column)) for r in rows]
    missing = [i for i, v in enumerate(ids) if v is None]
    if missing:
        raise InputError(f"{path}: {len(missing)} row(s) without '{id_column}' (a missing, null or blank id; first: "
                         f"row {missing[0] + 1}, counting from 1)")
    from collections import Counter

    dupes = sorted(v for v, count in Counter(ids).items() if count > 1)
    if dupes:
        raise InputError(f"{path}: duplicate ids {', '.join(dupes[:5])}{' ...' if len(dupes) > 5 else ''}; "
                         "ids must be unique to match rows across systems")
    return ids  # type: ignore[return-value]


def _blank_id(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or (isinstance(value, str)
                                                                            and not value.strip())


def _short(ids: Sequence[str]) -> str:
    return ", ".join(list(ids)[:5]) + (f" (and {len(ids) - 5} more)" if len(ids) > 5 else "")


def _as_number(text: str) -> Any:
    """The number an id spells ("1", "1.0", "01" -> 1.0), or the id itself."""
    try:
        value = float(text)
    except ValueError:
        return text
    return value if value == value and abs(value) != float("inf") else text


def _ids_that_only_look_alike(order: list[str], others: list[list[str]]) -> str | None:
    """How unmatched ids that print the same differ ("Unicode normalization (NFC vs NFD), e.g. 'café-1'", or
    surrounding spaces), or None: two lists of ids that look identical need saying why they do not match."""
    import unicodedata

    wanted = set(order)
    forms = [("Unicode normalization (one file writes accents as one character, another as a letter and a combining "
              "mark: NFC vs NFD)", lambda x: unicodedata.normalize("NFC", x)), ("surrounding spaces", str.strip),
             ("how a number is written (ids are matched as written: JSON numbers are not converted, so 1 and 1.0, or "
              "1 and \"01\", are different ids)", _as_number)]
    for form, same in forms:
        seen = {same(w) for w in wanted}
        unmatched = (i for ids in others for i in ids if i not in wanted)
        example = next((i for i in unmatched if same(i) in seen), None)
        if example is not None:
            return f"{form}, e.g. {example!r}; make the ids alike in every file"
    return None


def _reordered_key_column(tables: Mapping[str, list[dict[str, Any]]], id_column: str) -> str | None:
    """Why matching these files by position would pair different reports, or None: a column every row of every file
    has, holding one distinct value per row and the same values in every file, but in another order (the ids under
    another name than --id-column, e.g. a typo or `study_id`). Review 29c: compare matched such files by position
    with only a note, and every difference it reported was between different reports."""
    names = list(tables)
    shared = set.intersection(*(set.intersection(*(set(r) for r in rows)) for rows in tables.values() if rows))
    for column in sorted(shared):
        columns = {n: [json.dumps(r[column], sort_keys=True, default=str) for r in tables[n]] for n in names}
        first = columns[names[0]]
        if len(set(first)) != len(first) or any(sorted(v) != sorted(first) for v in columns.values()):
            continue  # not one distinct value per row, or not the same values in every file: no key
        other = next((n for n in names if columns[n] != first), None)
        if other is not None:
            row = next(i for i, (a, b) in enumerate(zip(first, columns[other])) if a != b)
            return (f"no file has a '{id_column}' column, so rows would be matched by position, but column "
                    f"'{column}' holds the same {len(first)} distinct values in every file in another order (row "
                    f"{row + 1}: {names[0]} {tables[names[0]][row][column]!r}, {other} "
                    f"{tables[other][row][column]!r}): by position, rows would pair different reports; match them "
                    f"by it with --id-column {column}")
    return None


def load_systems(systems: Mapping[str, str | Path], references: str | Path | None = None, id_column: str = "id",
                 reference_column: str | None = None, candidate_column: str | None = None,
                 on_mismatch: str = "error") -> Alignment:
    """Read each system's candidates and the shared references, matched by `id_column`.

    References come from `references` (a file with id + reference columns) or else from the first system's file;
    any other system file that also has references must agree with them for every id. When the systems do not
    hold the same ids, on_mismatch="error" raises an InputError naming the differences; "intersect" keeps the ids
    every file has (the dropped ones are listed in `notes`). Files without the id column are matched by position,
    which needs equal row counts."""
    from radmetrics.io import (CANDIDATE_ALIASES, REFERENCE_ALIASES, check_pair_columns, other_alias_columns,
                               other_pair_columns)

    check_pair_columns(reference_column, candidate_column)
    if len(systems) < 2:
        raise InputError(f"compare needs at least two systems, got {len(systems)}")
    if on_mismatch not in {"error", "intersect"}:
        raise InputError(f"on_mismatch must be 'error' or 'intersect', not {on_mismatch!r}")
    notes: list[str] = []
    tables: dict[str, tuple[list[str], dict[str, Any], dict[str, Any]]] = {}
    files = {name: Path(p) for name, p in systems.items()}
    all_rows = {name: _read_rows(p) for name, p in files.items()}
    ref_path = Path(references) if references is not None else None
    ref_rows = _read_rows(ref_path) if ref_path else None
    has_ids = {name: any(id_column in r for r in rows) for name, rows in all_rows.items()}
    if ref_rows is not None:
        has_ids["--references"] = any(id_column in r for r in ref_rows)
    by_position = not any(has_ids.values())
    if not by_position and not all(has_ids.values()):
        lacking = [n for n, v in has_ids.items() if not v]
        raise InputError(f"{', '.join(lacking)} has no '{id_column}' column but the other files do; rows are "
                         f"matched by id (name the id column with --id-column)")
    if by_position:
        counts = {n: len(r) for n, r in all_rows.items()}
        if ref_rows is not None:
            counts["--references"] = len(ref_rows)
        if len(set(counts.values())) > 1:
            raise InputError("no file has an id column, so rows are matched by position, but the row counts differ: "
                             + ", ".join(f"{n} {c}" for n, c in counts.items()) + f" (add an '{id_column}' column)")
        tables_read = {**all_rows, **({"--references": ref_rows} if ref_rows is not None else {})}
        if (reordered := _reordered_key_column(tables_read, id_column)) is not None:
            raise InputError(reordered)
        notes.append(f"no '{id_column}' column: rows matched by position")
    for name, rows in all_rows.items():
        path = files[name]
        ids = _ids(rows, None if by_position else id_column, path)
        cand = _column(rows, CANDIDATE_ALIASES, candidate_column, "candidate", path)
        ref = _column(rows, REFERENCE_ALIASES, reference_column, "reference", path,
                      required=ref_rows is None and name == next(iter(all_rows)))
        check_pair_columns(ref, cand, f"{path}: ")
        unread = other_pair_columns(dict.fromkeys(k for r in rows for k in r), (cand, ref, id_column),
                                    reference_column, candidate_column)
        if unread:  # review 24 (L11): two exports merged into one file, read without a word
            reading = (f"reference = '{ref}', " if ref else "") + f"candidate = '{cand}'"
            notes.append(_not_read(name, path, unread, reading, "--reference-column / --candidate-column"))
        tables[name] = (ids, {i: r.get(cand) for i, r in zip(ids, rows)},
                        {i: r.get(ref) for i, r in zip(ids, rows)} if ref else {})
    if ref_rows is not None:
        ref_ids = _ids(ref_rows, None if by_position else id_column, ref_path)
        ref_col = _column(ref_rows, REFERENCE_ALIASES, reference_column, "reference", ref_path)
        unread = other_alias_columns(dict.fromkeys(k for r in ref_rows for k in r), (ref_col, id_column),
                                     () if reference_column else REFERENCE_ALIASES)
        if unread:  # as a system's file: the references read from one of two merged exports are named
            notes.append(_not_read("--references", ref_path, unread, f"reference = '{ref_col}'",
                                   "--reference-column"))
        ref_by_id = {i: r.get(ref_col) for i, r in zip(ref_ids, ref_rows)}
        order, ref_source = ref_ids, "--references"
    else:
        first = next(iter(tables))
        order, ref_by_id, ref_source = tables[first][0], tables[first][2], first
    # every system must hold the reference file's ids and no others
    problems, common = [], set(order)
    for name, (ids, _, _) in tables.items():
        lacking, extra = [i for i in order if i not in set(ids)], [i for i in ids if i not in ref_by_id]
        if lacking:
            problems.append(f"{name} lacks {len(lacking)} id(s) of {ref_source}: {_short(lacking)}")
        if extra:
            problems.append(f"{name} has {len(extra)} id(s) not in {ref_source}: {_short(extra)}")
        common &= set(ids)
    if problems:
        look_alike = _ids_that_only_look_alike(order, [ids for ids, _, _ in tables.values()])
        if look_alike:
            problems.append(f"ids that differ only in {look_alike}")
        if on_mismatch == "error":
            fix = (f"Fix the files, or compare on the {len(common)} shared ids with --on-mismatch intersect." if common
                   else "No id is in every file, so --on-mismatch intersect would leave nothing to compare: fix the "
                        "files.")
            raise InputError("the systems do not cover the same rows: " + "; ".join(problems) + f". {fix}")
        notes += problems + [f"compared on the {len(common)} ids every file has"]
    ids = [i for i in order if i in common]
    if not ids:
        raise InputError("no id is shared by every system")
    # a system's own reference column, when present, must say the same as the shared references
    for name, (_, _, own_refs) in tables.items():
        if name == ref_source or not own_refs:
            continue
        differ = [i for i in ids if i in own_refs and _norm(own_refs[i]) != _norm(ref_by_id[i])]
        if differ:
            raise InputError(f"{name}'s reference differs from {ref_source}'s for {len(differ)} id(s): {_short(differ)}; "
                             "every system must be scored against the same references (pass --references)")
    candidates = {n: [t[1][i] for i in ids] for n, t in tables.items()}
    from radmetrics.runner import MISSING_MARKERS

    for name, texts in candidates.items():  # review 12: "NA" outputs left a system's mean, quietly
        markers = [repr(t.strip()) for t in texts if isinstance(t, str) and t.strip() in MISSING_MARKERS]
        # review 18: null, a missing candidate field or an empty CSV cell (NaN) favour a system the same way
        missing = [t is None or (isinstance(t, float) and t != t) for t in texts]
        markers += ["null" for gone in missing if gone]
        # review 24 (M1): so does a number, list or object where a report should be
        others = [type(t).__name__ for t, gone in zip(texts, missing) if not gone and not isinstance(t, str)]
        empty = sum(isinstance(t, str) and not t.strip() and isinstance(ref_by_id[i], str) and bool(ref_by_id[i].strip())
                    for i, t in zip(ids, texts))
        if empty:  # as `score` says it, with the system named (review 24 L3)
            notes.append(f"{name}: {empty} candidate report(s) are empty: scored as written (an empty report counts "
                         f"against {name})")
        for found, what in ((markers, "missing-value markers"), (others, "not text")):
            if found:
                notes.append(f"{name}: {len(found)} candidate(s) are {what} ({', '.join(sorted(set(found)))}), "
                             f"unscored: the paired tests leave those ids out; if they are {name}'s real outputs, "
                             f"this favours {name}")
    return Alignment(ids, [ref_by_id[i] for i in ids], candidates, notes)


def _norm(text: Any) -> Any:
    return " ".join(text.split()) if isinstance(text, str) else text


# -- scoring and statistics ----------------------------------------------------------------------------------
@dataclass
class CompareResult:
    ids: list[str]
    systems: list[str]
    #: metric -> system -> per-row scores with reasons
    runs: dict[str, dict[str, MetricRun]]
    #: metric -> {"higher_is_better", "error", "fingerprint", "systems": {...}, "pairs": [...]}
    metrics: dict[str, dict[str, Any]]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-ready: NaN never appears (missing values are None with a reason)."""
        return strict_json_ready({"n_rows": len(self.ids), "systems": self.systems, "settings": self.settings,
                        "notes": self.notes, "metrics": self.metrics})


def _top_reasons(reasons: Sequence[str | None], limit: int = 5) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in reasons:
        if r:
            counts[r] = counts.get(r, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:limit])


def analyse_metric(per_system: dict[str, MetricRun], resamples: int = 1000, seed: int = 0,
                   confidence: float = 0.95, alpha: float = 0.05) -> dict[str, Any]:
    """One metric's table: per system and per pair. Pairs are (earlier, later) in the systems' order; the
    difference is A − B in the metric's own units; "better" follows the metric's direction."""
    runs = list(per_system.values())
    higher = runs[0].higher_is_better
    error = next((r.error for r in runs if r.error), None)
    systems = {}
    for name, run in per_system.items():
        interval = cs.mean_ci(run.scores, resamples, seed, confidence)
        systems[name] = {**interval.to_dict(), "num_scored": run.num_scored,
                         "num_unscored": len(run.scores) - run.num_scored,
                         "unscored_reasons": _top_reasons(run.reasons)}
    pairs, interval_reasons, rows_notes, differing = [], [], [], []
    trials = cs.randomization_trials(resamples, len(per_system) * (len(per_system) - 1) // 2, alpha)
    for a, b in combinations(per_system, 2):
        sa, sb = per_system[a].scores, per_system[b].scores
        diff = cs.paired_difference_ci(sa, sb, resamples, seed, confidence)
        p = cs.paired_randomization_p(sa, sb, trials, seed)
        # a test without an interval (too few rows, zero variance) says why its interval is n/a
        interval_reasons.append(diff.reason if p is not None and diff.ci_low is None else None)
        # the difference, its interval and test use the rows both scored; the systems' means use each one's own
        # rows, so with rows unscored on one side mean(A) − mean(B) need not be the difference (even in sign)
        x, y = cs.paired_rows(sa, sb)
        paired_means = (float(x.mean()), float(y.mean())) if len(x) else (None, None)
        scored = (systems[a]["n"], systems[b]["n"])
        rows_notes.append(None if not len(x) or len(x) == max(scored) else
                          f"on the {len(x)} rows both scored, {a} {paired_means[0]:.4g} and {b} {paired_means[1]:.4g} "
                          f"(the systems' means use {scored[0]} and {scored[1]} rows)")
        # no p-value: the metric failed, fewer than 2 rows both scored (the interval says which), or --resamples 0
        reason = None if p is not None else f"metric failed: {error}" if error else diff.reason or "no test: --resamples 0"
        # scipy enumerates every swap when there are no more than the trials asked for: then p is exact
        how = None if p is None else (f"exact: all {2 ** diff.n} swaps" if 2 ** diff.n <= trials
                                      else f"{trials} random swaps")
        differing.append(sum(abs(u - v) > cs.TIE_TOLERANCE for u, v in zip(x, y)))  # tied rows add nothing to the test
        pairs.append({"a": a, "b": b, "difference": diff.value, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
                      "n_paired": diff.n, "mean_a_paired": paired_means[0], "mean_b_paired": paired_means[1],
                      "p_value": p, "randomization": how, **cs.win_tie_loss(sa, sb, higher),
                      "reason": reason})
    tested = sum(p["p_value"] is not None for p in pairs)
    p_values = [p["p_value"] for p in pairs]
    for k, (pair, adjusted) in enumerate(zip(pairs, cs.holm(p_values))):
        pair["p_holm"] = adjusted
        pair["significant"] = None if adjusted is None else bool(adjusted < alpha)
        smallest = cs.smallest_p(pair["n_paired"], trials, differing[k])
        if adjusted is not None and _cannot_be_significant(p_values, k, smallest, alpha):
            # too few rows both scored for any difference to be significant: "not significant" says nothing here
            rows = (f"{pair['n_paired']} paired rows" if differing[k] == pair["n_paired"] else
                    f"{pair['n_paired']} paired rows ({differing[k]} that differ)")
            pair["reason"] = (f"{rows}: the smallest p the test can give, {smallest:.3g}, is not significant after "
                              f"Holm across {tested} pairs at α = {alpha}")
        pair["note"] = "; ".join(filter(None, [_interval_and_test_disagree(pair, tested, confidence, alpha)
                                               or interval_reasons[k], rows_notes[k]])) or None
        if pair["significant"] and pair["difference"]:
            pair["better"] = pair["a"] if (pair["difference"] > 0) == higher else pair["b"]
        else:
            pair["better"] = None
    return {"higher_is_better": higher, "error": error, "fingerprint": runs[0].fingerprint,
            "randomization_trials": trials, "systems": systems, "pairs": pairs,
            "interval_note": _thin_tails_note([*systems.values(), *pairs], resamples, confidence)}


def _thin_tails_note(entries: list[dict[str, Any]], resamples: int, confidence: float) -> str | None:
    """A note when some of a metric's intervals could not be given `cs.MIN_RESAMPLES_PER_TAIL` resamples beyond each
    end (`cs.thin_tails`: a high confidence over many rows, where raising them would cost over
    `cs.MAX_RAISED_DRAWS` resampled scores, or past what `cs.MAX_RESAMPLES` can give): their ends rest on a resample
    or two and move with the seed. It says which --resamples would steady them, or that a lower --confidence
    would where no --resamples allowed does."""
    thin = []
    for entry in entries:  # a system's interval counts its rows as "n", a pair's as "n_paired"
        rows = entry["n"] if "n" in entry else entry["n_paired"]
        found = cs.thin_tails(resamples, rows, confidence) if entry["ci_low"] is not None else None
        if found:
            thin.append((rows, found))
    if not thin:
        return None
    used = min(found[0] for _, found in thin)
    steadied = [found[1] for _, found in thin if found[1] is not None]
    beyond_allowed = len(thin) - len(steadied)
    too_many = f"the {cs.MAX_RESAMPLES:,} resamples --resamples allows"
    reasons = []
    if steadied:
        reasons.append(f"raising them would cost over {cs.MAX_RAISED_DRAWS:,} resampled scores")
    if beyond_allowed:
        reasons.append(f"5 would take more than {too_many}" if not steadied else
                       f"for {beyond_allowed} of them 5 would take more than {too_many}")
    why = ", and ".join(reasons)
    if not beyond_allowed:
        advice = f"--resamples {max(steadied):,} steadies them"
    elif not steadied:
        advice = "a lower --confidence steadies them"
    else:
        advice = (f"--resamples {max(steadied):,} steadies {len(steadied)} of them, a lower --confidence the "
                  f"{'other' if beyond_allowed == 1 else 'others'}")
    return (f"{len(thin)} of its {level_text(confidence)} intervals (over up to {max(n for n, _ in thin):,} rows) "
            f"rest on as few as {used:,} resamples, fewer than {cs.MIN_RESAMPLES_PER_TAIL} beyond each end ({why}): "
            f"their ends move with --seed; {advice}")


def _cannot_be_significant(p_values: list[float | None], k: int, smallest: float, alpha: float) -> bool:
    """Whether pair k would not be significant after Holm even with the smallest p its rows allow, the other pairs'
    p-values as they are (Holm is monotone: its own p, no smaller, is then not significant either). Pairs × smallest
    p >= α said this of a pair ranked last behind highly significant ones, where Holm multiplies its p by 1: a pair
    significant at p_Holm = 0.031 read "not significant after Holm" in results.json (review 29a)."""
    best = list(p_values)
    best[k] = smallest
    return cs.holm(best)[k] >= alpha


def across_metrics_text(metrics: int) -> str:
    """What Holm does not cover when several metrics are compared: each metric's p-values are corrected across its
    pairs only, so a reader counting "significant" cells over metrics must correct again."""
    return "" if metrics <= 1 else (f"p-values are per metric: Holm corrects across each metric's pairs, not across "
                                    f"the {metrics} metrics")


def level_text(confidence: float) -> str:
    """0.95 -> "95%", 0.975 -> "97.5%"."""
    return f"{confidence * 100:.10g}%"


def _interval_and_test_disagree(pair: dict[str, Any], tested: int, confidence: float, alpha: float = 0.05) -> str | None:
    """A note when the pair's bootstrap interval and its test point different ways (the interval excludes 0 and
    the test is not significant, or the reverse). They answer different questions: the interval is per pair and
    uncorrected, the test is corrected across the pairs, and near the threshold a bootstrap interval and a
    randomization test can fall on different sides of it. The test makes the call; the note keeps a reader from
    taking the interval for it."""
    if pair["significant"] is None or pair["ci_low"] is None or pair["reason"]:
        return None
    excludes_zero = pair["ci_low"] > 0 or pair["ci_high"] < 0
    if excludes_zero == pair["significant"]:
        return None
    level = level_text(confidence)
    other_level = abs((1 - confidence) - alpha) > 1e-9  # e.g. a 90% interval beside a test at α = 0.05
    why = [f"the interval is {level}, the test's level is α = {alpha:g}"] if other_level else []
    if excludes_zero:
        why += [f"the test is corrected for {tested} pairs (Holm), the interval is not"] if tested > 1 else []
        why = why or ["a bootstrap interval and a randomization test differ near the threshold"]
        return (f"the {level} interval excludes 0 but the test is not significant: {'; '.join(why)}; "
                "the test decides")
    return (f"significant, though the {level} interval includes 0: " + "; ".join(why or ["a difference near the "
                                                                                          "threshold"])
            + "; the test decides")


def missing_results(result: CompareResult) -> dict[str, dict[str, str]]:
    """metric -> {system: why} for each requested metric that gave a system no result: the metric failed as a whole,
    or it scored none of the system's rows (why: its most frequent unscored reason). The CLI exits non-zero on any."""
    missing: dict[str, dict[str, str]] = {}
    for metric, per_system in result.runs.items():
        for system, run in per_system.items():
            if run.error:
                missing.setdefault(metric, {})[system] = f"metric failed: {run.error}"
            elif run.num_scored == 0:
                top = next(iter(_top_reasons(run.reasons, 1)), "no reason recorded")
                missing.setdefault(metric, {})[system] = f"no row scored ({top})"
    return missing


def failed_calls(result: CompareResult) -> dict[str, dict[str, int]]:
    """metric -> {system: rows whose judge call failed} (no answer at all: a server error, a timeout; not an answer
    that could not be read). Such rows leave their pairs, and failures that follow a system (longer outputs time
    out) bias the comparison: the CLI names them and exits non-zero, as `score` does. A prompt the judge's context
    cannot hold is counted by `past_context` instead: a rerun fails it the same."""
    return _rows_where(result, call_failed_for_now)


def cut_answers(result: CompareResult) -> dict[str, dict[str, int]]:
    """metric -> {system: rows whose answer ran into the token limit} (unscored, never read as complete). They leave
    their pairs as failed calls do, and follow a system as surely (longer reports, longer analyses): named, and the
    CLI exits non-zero (review 17). An answer stopped by the end of the judge's context is `past_context`'s."""
    return _rows_where(result, cut_at_max_new_tokens)


def past_context(result: CompareResult) -> dict[str, dict[str, int]]:
    """metric -> {system: rows the judge's context was too short for}: a prompt it cannot hold (not sent), or an
    answer that reached its end. Neither a rerun nor a higher max_new_tokens helps; shorter reports or a judge
    with a longer context do. They follow the system with the longer reports."""
    return _rows_where(result, context_too_short)


def _rows_where(result: CompareResult, unscored_because) -> dict[str, dict[str, int]]:
    found = {metric: _count_per_system(per_system, unscored_because) for metric, per_system in result.runs.items()}
    return {metric: counts for metric, counts in found.items() if counts}


def _count_per_system(per_system: dict[str, MetricRun], unscored_because) -> dict[str, int]:
    """system -> rows of one metric unscored for that reason (a metric that failed as a whole is reported as such)."""
    counts = {system: sum(map(unscored_because, run.reasons)) for system, run in per_system.items() if not run.error}
    return {system: n for system, n in counts.items() if n}


#: rows a metric left unscored because of the judge, said per system after each metric: (which, what, what helps)
_LEFT_OUT = [
    (call_failed_for_now, "no judge answer (judge call failed)", ", and a rerun with a cache asks only them"),
    (cut_at_max_new_tokens, "the judge's answer reached the token limit",
     ": raise the judge's max_new_tokens (--max-new-tokens)"),
    (context_too_short, "the judge's context too short for the prompt and its answer",
     ": shorten the reports, or use a judge with a longer context"),
]


@contextlib.contextmanager
def _said_per_system():
    """`score` warns of judge calls that failed, answers cut at the token limit and empty candidates counted over the
    rows it was given, here every system's together; compare says them per system instead."""
    from radmetrics.runner import PER_SYSTEM_RECORD
    from radmetrics.runner import log as runner_log

    def keep(record: logging.LogRecord) -> bool:
        return not getattr(record, PER_SYSTEM_RECORD, False)

    runner_log.addFilter(keep)
    try:
        yield
    finally:
        runner_log.removeFilter(keep)


def compare(systems: Mapping[str, Sequence[Any]], references: Sequence[Any], metrics: Sequence[str],
            ids: Sequence[str] | None = None, *, backend: str = "transformers", judge: str | None = None,
            judge_options: dict[str, Any] | None = None, cache: Any = None, config: Any = None,
            system_options: dict[str, Any] | None = None, progress: bool = False, resamples: int = 1000,
            seed: int = 0, confidence: float = 0.95, alpha: float = 0.05, notes: Sequence[str] = (), on_metric=None,
            metrics_checked: bool = False) -> CompareResult:
    """Score each system's candidates against the shared references with every metric and compare them.

    systems: name -> candidates in the order of `references` (see `load_systems` for files matched by id).
    A metric that cannot load (a typo, a baseline whose model or corpus is not here, er2score without model=)
    raises RadmetricsError before any judging, with the CLI's one line; one that loads and then fails gives "n/a"
    cells with its reason, and the other metrics are kept. metrics_checked=True skips that check, for a caller that
    has just made it with `check_metrics_loadable` (the CLI, which checks the metrics before the judges): each check
    loads every evaluate module, seconds each.
    on_metric(name, result_so_far) is called after each metric (progress, partial outputs)."""
    names = list(systems)
    if len(names) < 2:
        raise InputError(f"compare needs at least two systems, got {len(names)}")
    n = len(references)
    for name in names:
        if len(systems[name]) != n:
            raise InputError(f"system '{name}' has {len(systems[name])} candidates for {n} references")
    if not metrics:
        raise InputError("name at least one metric")
    cs.check_settings(resamples, seed, confidence, alpha)
    if not metrics_checked:
        check_metrics_loadable(metrics)
    ids = [str(i) for i in ids] if ids is not None else [f"row-{i}" for i in range(n)]
    # review 29a: ids of another length cut per_row.csv short (or raised IndexError writing it, after all the
    # judging), and an id given twice made two rows per_row.csv could not tell apart
    if len(ids) != n:
        raise InputError(f"{len(ids)} ids for {n} references: give one id per reference")
    if len(set(ids)) != n:
        raise InputError(f"ids must be unique, and {_short(sorted({i for i in ids if ids.count(i) > 1}))} "
                         "are given more than once")
    judge_kwargs = {"backend": backend, "judge": judge, "judge_options": judge_options or {}, "cache": cache,
                    "progress": progress}
    if config is not None:
        judge_kwargs["config"] = config
    if system_options:
        judge_kwargs["system_options"] = dict(system_options)
    settings = {"resamples": resamples, "seed": seed, "confidence": confidence, "alpha": alpha,
                "correction": "Holm across the pairs of each metric" + (", not across metrics" if len(metrics) > 1
                                                                          else ""),
                "test": ("paired randomization (two-sided; exact where every swap is enumerated) on rows both "
                         "systems scored"),
                "interval": ("percentile bootstrap over rows, expanded on few rows (Hesterberg 2015), with at least "
                             "5 resamples beyond each end where that is cheap")}
    result = CompareResult(ids, names, {}, {}, settings, list(notes))
    for metric in metrics:
        # all systems in one call: the judge batches and de-duplicates across them
        with _said_per_system():  # reasons name a row by its id (the stacked list's index is no row's)
            run = run_metric(metric, list(references) * len(names), [c for s in names for c in systems[s]],
                             {**judge_kwargs, "row_labels": [f"id {i}" for _ in names for i in ids]})
        per_system = {}
        for k, name in enumerate(names):
            rows = slice(k * n, (k + 1) * n)
            per_system[name] = MetricRun(metric, run.scores[rows], run.higher_is_better,
                                         run.counts[rows] if run.counts else [], run.fingerprint,
                                         run.reasons[rows] if run.reasons else [None] * n, run.error)
        result.runs[metric] = per_system
        result.metrics[metric] = analyse_metric(per_system, resamples, seed, confidence, alpha)
        if result.metrics[metric]["interval_note"]:
            result.notes.append(f"{metric}: {result.metrics[metric]['interval_note']}")
        for unscored_because, what, remedy in _LEFT_OUT:
            counts = _count_per_system(per_system, unscored_because)
            if counts:
                log.warning("%s: %s for %s; those rows leave their pairs%s", metric, what,
                            ", ".join(f"{count} of {system}'s rows" for system, count in counts.items()), remedy)
        if on_metric:
            on_metric(metric, result)
    return result


# -- outputs -------------------------------------------------------------------------------------------------
def write_outputs(result: CompareResult, folder: str | Path, overwrite: bool = False) -> dict[str, Path]:
    """results.json (strict JSON), per_row.csv (long format: id, system, metric, score, unscored_reason),
    forest.png and report.html in `folder`, replacing an earlier compare report there whole; returns their paths.
    A folder holding another command's report or files no compare report wrote (your own results.json) is refused
    before anything is written, as the CLI refuses it, unless `overwrite`."""
    from radmetrics.meta.report_folder import ReportWriter, check_report_folder

    check_report_folder(folder, "compare", overwrite)
    with ReportWriter(folder, "compare") as report:  # staged: a kill while writing leaves no half report
        paths = {"per_row": report.path("per_row.csv"), "forest": report.path("forest.png")}
        with paths["per_row"].open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "system", "metric", "score", "unscored_reason"])
            for metric, per_system in result.runs.items():
                for system, run in per_system.items():
                    for i, row_id in enumerate(result.ids):
                        score = run.scores[i]
                        writer.writerow([row_id, system, metric, "" if score is None else repr(float(score)),
                                         "" if score is not None else (run.reasons[i] or "unscored")])
        forest_plot(result, paths["forest"])
        paths["html"] = report.path("report.html")
        paths["html"].write_text(to_html(compare_report(result), report.staging), encoding="utf-8")
        paths["results"] = report.finish(result.to_dict())
    return {key: report.folder / paths[key].name for key in ("results", "per_row", "forest", "html")}


def compare_report(result: CompareResult) -> Report:
    """The comparison as one self-contained page (report.html): the same numbers as results.json."""
    data = result.to_dict()
    level = level_text(result.settings["confidence"])
    report = Report(title=f"Comparison of {', '.join(result.systems)} on {len(result.ids)} reports",
                    intro=[f"Means with bootstrap {level} CIs (at least {data['settings'].get('resamples', '?')} resamples, more "
                           "where an interval needs them for 5 beyond each end); pairs: mean "
                           "difference (A − B) with a paired-bootstrap CI, paired randomization p (at least "
                           "20 × pairs / α random swaps, so that Holm's correction can reach α; exact, every swap, "
                           "when there are no more: results.json says which per pair) and "
                           "Holm-adjusted p across the pairs of a metric. Each number uses only the rows its "
                           "metric scored (n)."] + [t for t in [across_metrics_text(len(data["metrics"]))] if t]
                          + list(data.get("notes") or []),
                    plots=[("forest.png", f"difference between systems per metric, with {level} CIs")])
    for metric, entry in data["metrics"].items():
        label = short_label(metric)
        if entry.get("error"):
            report.warnings.append(f"{label}: not computed: {entry['error']}")
            continue
        direction = "higher" if entry["higher_is_better"] else "lower"
        report.tables.append(Table(
            f"{label}: systems ({direction} is better)", ["system", f"mean [{level} CI]", "scored", "unscored"],
            [[name, interval_text(s), s.get("num_scored"), s.get("num_unscored")]
             for name, s in entry["systems"].items()], numeric={2, 3}))
        report.tables.append(Table(
            f"{label}: pairs", ["A", "B", "n", f"A − B [{level} CI]", "p", "p (Holm)", "win / tie / loss", "better"],
            [[pr["a"], pr["b"], pr.get("n_paired"), interval_text({**pr, "value": pr.get("difference")}),
              p_value_text(pr.get("p_value")), p_value_text(pr.get("p_holm")), f"{pr.get('win')} / {pr.get('tie')} / {pr.get('loss')}",
              "; ".join(filter(None, [pr.get("better") or pr.get("reason") or "no significant difference",
                                      pr.get("note")]))] for pr in entry["pairs"]],
            # per pair, from the side of its first system: for the B − C row B's wins, not A's (review 24 L10)
            note="win / tie / loss: of the rows both systems of a pair scored, those where the pair's first system "
                 f"(column A) scored better / the same / worse ({direction} is better).", numeric={2, 4, 5}))
    return report


@text_as_written
def forest_plot(result: CompareResult, path: str | Path) -> Path:
    """One panel per metric: each pair's mean difference A − B with its paired bootstrap CI; filled markers
    are significant after Holm; pairs without a value are listed as n/a."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [m for m, entry in result.metrics.items() if not entry["error"]]
    failed = [m for m in result.metrics if m not in metrics]
    if not metrics:  # still a figure that says why, rather than no file
        fig, ax = plt.subplots(figsize=(7, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no metric could be computed: " + ", ".join(failed), ha="center", va="center")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return Path(path)
    pairs_per_metric = max(1, max((len(m["pairs"]) for m in result.metrics.values()), default=1))
    fig, axes = plt.subplots(len(metrics), 1, figsize=(7, 1.2 + 0.55 * pairs_per_metric * len(metrics) + 0.6 * len(metrics)),
                             squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        entry = result.metrics[metric]
        labels = []
        for y, pair in enumerate(entry["pairs"]):
            labels.append(f"{pair['a']} − {pair['b']}")
            if pair["difference"] is None:
                ax.text(0.5, y, f"n/a: {pair['reason']}", va="center", ha="center", fontsize=8,
                        transform=ax.get_yaxis_transform())
                continue
            low = pair["ci_low"] if pair["ci_low"] is not None else pair["difference"]
            high = pair["ci_high"] if pair["ci_high"] is not None else pair["difference"]
            ax.errorbar(pair["difference"], y, xerr=[[max(0.0, pair["difference"] - low)], [max(0.0, high - pair["difference"])]],
                        fmt="o", color="black", mfc="black" if pair["significant"] else "white", capsize=4)
            p = pair["p_holm"]
            ax.annotate("" if p is None else f"p_Holm={p:.3g}", (high, y), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=8)
        ax.axvline(0, color="grey", linestyle="--", linewidth=1)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.invert_yaxis()
        direction = "higher" if entry["higher_is_better"] else "lower"
        ax.set_xlabel(f"mean difference in {metric} ({direction} is better); "
                      f"{level_text(result.settings['confidence'])} paired bootstrap CI")
        ax.set_title(metric, fontsize=10)
    fig.suptitle(f"{len(result.systems)} systems on {len(result.ids)} reports: pairwise differences "
                 "(filled = significant after Holm)" + (f"\nn/a (failed): {', '.join(failed)}" if failed else ""),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
