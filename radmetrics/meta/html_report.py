"""One self-contained HTML page for a report (meta-eval, compare): tables, warnings and the plots embedded
as base64 PNGs, inline CSS, no scripts and no external resources, so it opens from an e-mail attachment or
a paper-review upload without a server and without network.

Reports describe their content once as `Table`s and notes; `to_markdown` and `to_html` render the same
content, so summary.md and report.html never disagree.
"""
from __future__ import annotations

import base64
import functools
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radmetrics.io import strict_json_ready  # noqa: F401 - the reports' strict JSON; defined beside the results writer


def text_as_written(plot):
    """A plot function whose labels (system, metric and site names) are drawn as written: matplotlib reads text
    between two "$" as math, so a system named "x$\\foo$" was a ParseFatalException traceback before any report
    file was written, and "a$b$" was drawn in italics without its "$" (review 29a)."""

    @functools.wraps(plot)
    def plain(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)

    return plain


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[Any]]
    #: a sentence under the title: what the numbers are, which rows they use
    note: str = ""
    #: column indices that hold numbers (right-aligned)
    numeric: set[int] = field(default_factory=set)


@dataclass
class Report:
    title: str
    intro: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    #: (file name inside the report folder, caption)
    plots: list[tuple[str, str]] = field(default_factory=list)


def cell_text(value: Any) -> str:
    """How a value reads in a table: numbers to 3 decimals, missing/NaN as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "n/a" if math.isnan(value) or math.isinf(value) else f"{value:.3f}"
    return str(value)


def p_value_text(p: float | None) -> str:
    """A p-value for a table: 3 decimals, or 2 significant digits below 0.001. A randomization p of 2/11201 read
    "0.000" in compare's tables and report (ReXamine's and meta-eval's too): a p the test can never give, and one
    that hid which side of a Bonferroni threshold such as 0.05/40 = 0.00125 it fell (review 29a)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 or p == 0 else f"{p:.1e}"


def to_markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    for para in report.intro:
        lines += [para, ""]
    for warning in report.warnings:
        lines += [f"> **Warning:** {warning}", ""]
    for table in report.tables:
        lines += [f"## {table.title}", ""]
        if table.note:
            lines += [table.note, ""]
        lines.append("| " + " | ".join(table.headers) + " |")
        lines.append("| " + " | ".join("---:" if i in table.numeric else "---"
                                        for i in range(len(table.headers))) + " |")
        lines += ["| " + " | ".join(cell_text(v).replace("|", "\\|") for v in row) + " |" for row in table.rows]
        lines.append("")
    if report.plots:
        lines += ["## Plots", ""] + [f"![{caption}]({name})" for name, caption in report.plots] + [""]
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
color:#1a1a1a;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.3rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f5f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#444;font-size:.9rem}.warn{background:#fff4e0;border-left:4px solid #e69500;padding:.5rem .8rem;
margin:.5rem 0}figure{margin:1rem 0;display:inline-block;vertical-align:top}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85rem;color:#444}
footer{margin-top:2rem;font-size:.8rem;color:#666}
"""


def to_html(report: Report, folder: str | Path) -> str:
    """The report as one HTML document; plots are read from `folder` and embedded."""
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(report.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(report.title)}</h1>"]
    parts += [f'<p class="note">{esc(p)}</p>' for p in report.intro]
    parts += [f'<div class="warn" role="alert"><strong>Warning:</strong> {esc(w)}</div>' for w in report.warnings]
    for table in report.tables:
        parts.append(f"<h2>{esc(table.title)}</h2>")
        if table.note:
            parts.append(f'<p class="note">{esc(table.note)}</p>')
        parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.headers) + "</tr></thead><tbody>")
        for row in table.rows:
            parts.append("<tr>" + "".join(
                f'<td{" class=num" if i in table.numeric else ""}>{esc(cell_text(v))}</td>'
                for i, v in enumerate(row)) + "</tr>")
        parts.append("</tbody></table>")
    if report.plots:
        parts.append("<h2>Plots</h2>")
        for name, caption in report.plots:
            data = base64.b64encode((Path(folder) / name).read_bytes()).decode("ascii")
            parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{esc(caption)}">'
                         f"<figcaption>{esc(caption)} ({esc(name)})</figcaption></figure>")
    parts.append("<footer>Written by radmetrics. Self-contained: the plots are embedded; "
                 "results.json holds every number with its settings.</footer></body></html>")
    return "\n".join(parts)


def interval_text(stat: dict[str, Any] | None) -> str:
    """'0.412 [0.301, 0.520]' or 'n/a'."""
    if not stat or stat.get("value") is None or (isinstance(stat["value"], float) and math.isnan(stat["value"])):
        return "n/a"
    return f"{cell_text(stat['value'])} [{cell_text(stat.get('ci_low'))}, {cell_text(stat.get('ci_high'))}]"


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters for a log line or a table cell: cut at a word boundary and ended with
    "…" when it is longer (mid-word only when its first word alone is longer than the limit). Files keep the
    whole text."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > 0 and text[limit - 1] != " ":  # the cut falls inside a word: end at the space before it
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"


def short_label(name: str, limit: int = 40) -> str:
    """A metric label that fits a plot title: a local module path becomes its last part."""
    label = name.rstrip("/\\")
    if label.startswith(("/", ".", "~")) or label.count("/") > 1 or "\\" in label:
        label = Path(label).name or label
    return label if len(label) <= limit else label[: limit - 1] + "…"
