"""The insights report as text, for `python -m shared insights` (pure): the lists a docs team acts on first."""

from __future__ import annotations

from shared.insights.report import InsightsReport

SHOWN = 20
"""Entries of each list the text shows (`--format json` has them all)."""


def insights_text(report: InsightsReport) -> str:
    where = f" on {report.site}" if report.site else ""
    version = f" ({report.version})" if report.version else ""
    lines = [
        f"Usage insights{where}{version}, the last {report.days} days "
        f"(questions asked by at least {report.min_callers} callers)",
        *([] if report.complete else ["(more events than a report reads: the most recent days only)"]),
        "",
        "Totals:",
    ]
    for total in report.totals:
        lines.append(
            f"  {_place(total.site, total.version)}: {total.searches} searches ({total.empty_share:.0%} empty, "
            f"{total.floored_share:.0%} below the floor), {total.reads} reads ({total.reads_after_search} after a "
            f"search), {total.feedback} feedback, {total.callers} callers"
        )
    lines += ["", "Asked and not answered:"]
    lines += [
        f"  {a.callers} callers, {a.searches}x  {a.question}  [{_place(a.site, a.version)}]"
        for a in report.unanswered[:SHOWN]
    ] or ["  (none)"]
    lines += ["", "Read after a search:"]
    for page in report.read_after_search[:SHOWN]:
        lines.append(f"  {page.location}  [{_place(page.site, page.version)}]: {page.reads} reads")
        lines += [f"      rank {q.rank}, {q.callers} callers: {q.question}" for q in page.questions[:5]]
    if not report.read_after_search:
        lines.append("  (none)")
    lines += ["", "Searched, never followed by a read:"]
    lines += [f"  {a.callers} callers, {a.searches}x  {a.question}" for a in report.searched_not_read[:SHOWN]] or [
        "  (none)"
    ]
    lines += ["", f"Pages no search returned: {len(report.never_found)}"]
    lines += [f"  {page.location}  [{_place(page.site, page.version)}]" for page in report.never_found[:SHOWN]]
    lines += ["", "Code languages asked for:"]
    lines += [f"  {lang.language or '(any)'}: {lang.searches}" for lang in report.languages] or ["  (none)"]
    lines += ["", "Feedback:"]
    lines += [f"  {f.location}  {f.kind}: {f.text}" for f in report.feedback[:SHOWN]] or ["  (none)"]
    return "\n".join(lines)


def _place(site: str | None, version: str | None) -> str:
    return f"{site or 'every site'}{' ' + version if version else ''}"
