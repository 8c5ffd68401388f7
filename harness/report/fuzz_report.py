"""fuzz-report.html: a picture of a `harness fuzz` run, one self-contained page.

Per suite, an inline SVG plot over the run's time: examples per second (between successive
samples) and distinct failures found so far, and a table of the failures, each linked to its
reproducer.  No scripts, no external resources: it opens from a CI artifact store as it is.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence

from harness.report.attribution import no_verdict_note
from harness.report.reproducer import check_note

__all__ = ["render_fuzz_report"]

_WIDTH, _HEIGHT, _MARGIN = 640, 180, 44
RATE_COLOUR = "#1f6fb2"
FAILURE_COLOUR = "#c62828"


def _rates(timeline: Sequence[dict], suite: str) -> list[tuple[float, float]]:
    points = []
    for before, after in zip(timeline, timeline[1:]):
        span = after["t"] - before["t"]
        if span > 0:
            added = after["examples"].get(suite, 0) - before["examples"].get(suite, 0)
            points.append((after["t"], max(added, 0) / span))
    return points


def _failures(timeline: Sequence[dict], suite: str) -> list[tuple[float, float]]:
    return [(sample["t"], float(sample["failures"].get(suite, 0))) for sample in timeline]


def _polyline(points: list[tuple[float, float]], t_end: float, top: float, colour: str, step: bool) -> str:
    if not points:
        return ""
    inner_w, inner_h = _WIDTH - 2 * _MARGIN, _HEIGHT - 2 * _MARGIN

    def xy(t: float, v: float) -> str:
        return f"{_MARGIN + inner_w * t / t_end:.1f},{_HEIGHT - _MARGIN - inner_h * v / top:.1f}"

    coordinates = []
    for number, (t, v) in enumerate(points):
        if step and number:
            coordinates.append(xy(t, points[number - 1][1]))  # a count holds until the next failure
        coordinates.append(xy(t, v))
    return f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(coordinates)}"/>'


def _axes(left: str, left_colour: str, right_label: str, right_colour: str, t_end: float) -> str:
    """A plot's axes, its two series' labels (left and right, in their lines' colours) and its time span."""
    bottom, right = _HEIGHT - _MARGIN, _WIDTH - _MARGIN
    return (f'<line x1="{_MARGIN}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#555"/>'
            f'<line x1="{_MARGIN}" y1="{_MARGIN}" x2="{_MARGIN}" y2="{bottom}" stroke="#555"/>'
            f'<text x="{_MARGIN}" y="{_MARGIN - 8}" fill="{left_colour}" font-size="12">{html.escape(left)}</text>'
            f'<text x="{right}" y="{_MARGIN - 8}" fill="{right_colour}" font-size="12" text-anchor="end">'
            f'{html.escape(right_label)}</text>'
            f'<text x="{right}" y="{bottom + 16}" font-size="11" text-anchor="end">{t_end:,.0f} s</text>'
            f'<text x="{_MARGIN}" y="{bottom + 16}" font-size="11">0 s</text>')


def _plot(timeline: Sequence[dict], suite: str) -> str:
    rates, failures = _rates(timeline, suite), _failures(timeline, suite)
    t_end = max((sample["t"] for sample in timeline), default=0.0) or 1.0
    rate_top = max((v for _, v in rates), default=0.0) * 1.1 or 1.0
    failure_top = max(max((v for _, v in failures), default=0.0), 1.0)
    axes = _axes(f"examples/s (max {rate_top / 1.1:,.0f})", RATE_COLOUR,
                 f"distinct failures ({int(failures[-1][1]) if failures else 0})", FAILURE_COLOUR, t_end)
    lines = (_polyline(rates, t_end, rate_top, RATE_COLOUR, step=False)
             + _polyline(failures, t_end, failure_top, FAILURE_COLOUR, step=True))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" role="img" '
            f'aria-label="examples per second and distinct failures of {html.escape(suite)} over time">{axes}{lines}</svg>')


COVERAGE_COLOUR = "#2e7d32"


def _coverage_plot(timeline: Sequence[dict], findings: Sequence[dict]) -> str:
    """Edges the driver reached (each worker's line) and root causes found, over the run."""
    t_end = max((sample["t"] for sample in timeline), default=0.0) or 1.0
    workers = sorted({w for sample in timeline for w in sample.get("coverage", {})})
    lines = {w: [(sample["t"], float(sample["coverage"][w]["edges"])) for sample in timeline if w in sample.get("coverage", {})]
             for w in workers}
    edge_top = max((v for points in lines.values() for _, v in points), default=0.0) * 1.1 or 1.0
    times = sorted(f["found_at_s"] for f in findings if f.get("found_at_s") is not None)
    found = [(0.0, 0.0)] + [(t, float(n)) for n, t in enumerate(times, 1)] + ([(t_end, float(len(times)))] if times else [])
    found_top = max(float(len(times)), 1.0)
    axes = _axes(f"driver edges reached, per worker (max {edge_top / 1.1:,.0f})", COVERAGE_COLOUR,
                 f"root causes found ({len(times)})", FAILURE_COLOUR, t_end)
    drawn = "".join(_polyline(points, t_end, edge_top, COVERAGE_COLOUR, step=False) for points in lines.values())
    drawn += _polyline(found, t_end, found_top, FAILURE_COLOUR, step=True)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" role="img" '
            f'aria-label="driver coverage and root causes found over time">{axes}{drawn}</svg>')


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} s"


def _link(reproducer: str, out: str) -> str:
    if not reproducer:
        return "-"
    target = os.path.relpath(reproducer, out) if os.path.isabs(reproducer) else reproducer
    return f'<a href="{html.escape(target)}">{html.escape(os.path.basename(reproducer))}</a>'


def _no_verdict(failure: dict) -> str:
    """A failure that is no verdict on the driver (a fault of the harness or the run) says so."""
    note = no_verdict_note(failure.get("fault", "driver"))
    return f" <em>({html.escape(note)})</em>" if note else ""


#: After the message of a failure recorded from its first failing example (recording: the run ended mid-shrink).
_UNSHRUNK = " <em>(as first found: the run ended before it was shrunk)</em>"


def _unshrunk(failure: dict) -> str:
    """The note after a failure recorded from its first failing example: the run stopped while it
    was shrunk, or hypothesis ended its test in its own error (``hidden_by``) instead."""
    if failure.get("hidden_by"):
        return (f" <em>(as first found: hypothesis ended the test in its own {html.escape(failure['hidden_by'])} while "
                f"shrinking it; the driver's outcome depended on earlier calls)</em>")
    return _UNSHRUNK if failure.get("unshrunk") else ""


def _check_of(failure: dict) -> str:
    """After the link of a reproducer: how its check on a fresh driver went, when a reader must know."""
    note = check_note(failure)
    return f" <em>({html.escape(note)})</em>" if note else ""


def render_fuzz_report(summary: dict, out: str) -> str:
    """The page for a fuzz-summary.json document; reproducer links are relative to ``out``."""
    timeline = summary.get("timeline", [])
    examples = summary.get("examples_per_suite", {})
    failures = summary.get("failures", [])
    sections = []
    for suite in summary.get("suites", []):
        found = [f for f in failures if f.get("suite") == suite]
        rows = "".join(
            f"<tr><td>{html.escape(f['test'])}</td><td>{html.escape(', '.join(f['requirements']))}{_no_verdict(f)}</td>"
            f"<td>{_seconds(f.get('found_at_s'))}</td>"
            f"<td>{html.escape(f['message'][:300])}{_unshrunk(f)}</td>"
            f"<td>{_link(f.get('reproducer', ''), out)}{_check_of(f)}</td></tr>"
            for f in found)
        table = (f"<table><tr><th>test</th><th>requirements</th><th>found at</th><th>message</th><th>reproducer</th></tr>"
                 f"{rows}</table>" if found else "<p>no failures</p>")
        rate = examples.get(suite, 0) / summary["seconds"] if summary.get("seconds") else 0.0
        sections.append(f'<section id="{html.escape(suite)}"><h2>{html.escape(suite)}</h2>'
                        f"<p>{examples.get(suite, 0):,} examples ({rate:,.1f}/s over the run), {len(found)} distinct "
                        f"failures</p>{_plot(timeline, suite)}{table}</section>")
    findings = summary.get("findings", [])
    finding_rows = "".join(
        f"<tr><td>{n}</td><td>{html.escape(f['requirement'] or '-')}</td><td>{html.escape(f.get('entry_point') or '-')}</td>"
        f"<td>{_seconds(f.get('found_at_s'))}</td><td>{len(f['tests'])}</td><td>{html.escape(f['message'][:300])}</td>"
        f"<td>{_link(f.get('reproducer', ''), out)}</td></tr>" for n, f in enumerate(findings, 1))
    finding_table = (f"<table><tr><th>#</th><th>requirement</th><th>entry point</th><th>found at</th><th>tests</th>"
                     f"<th>message</th><th>reproducer</th></tr>{finding_rows}</table>" if findings else "<p>no findings</p>")
    if summary.get("mode") == "blind":
        reached = "<p>Blind: the driver's coverage was not collected.</p>"
    elif any(c.get("edges") for c in summary.get("coverage", {}).values()):
        reached = "<p>" + ", ".join(f"worker {w}: {c['edges']:,} edges, corpus {c['corpus']:,}"
                                    for w, c in sorted(summary["coverage"].items())) + "</p>"
    else:
        reached = "<p>The driver reported no coverage: fuzzed blind.</p>"
    overview = (f'<section id="findings"><h2>Findings and coverage</h2>{reached}'
                f"{_coverage_plot(timeline, findings)}{finding_table}</section>")
    verdict = f"{len(failures)} distinct failures" if failures else "no failures"
    title = f"harness fuzz: {summary['driver']}: {verdict}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: left; vertical-align: top; font-size: 0.9em; }}
svg {{ background: #fafafa; border: 1px solid #ddd; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(summary.get('mode', 'guided'))} fuzzing for {summary['seconds']:,.1f} s with {summary['workers']} worker(s):
{sum(examples.values()):,} examples, {summary.get('examples_per_second', 0):,.1f}/s. Database {html.escape(str(summary['database']))}.</p>
{overview}
{''.join(sections)}
</body></html>
"""
