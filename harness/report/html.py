"""report.html: one self-contained page (no network, no external assets).

It opens with a picture: the requirement × status matrix in colour, the count per status and
the run time, so the verdict and where it comes from are seen before anything is read.
"""

from __future__ import annotations

import html
import os
import re

from harness.api.requirements import REQUIREMENTS
from harness.report import contract
from harness.report.attribution import no_verdict_note
from harness.report.reproducer import check_note
from harness.report.root_causes import group
from harness.report.certificate import STATUSES

COLOURS = {"pass": "#2a8c2a", "fail": "#c62828", "waived": "#c99a00", "not-applicable": "#8a8a8a", "not-run": "#e06c00"}

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;overflow-wrap:anywhere}
h1 span{padding:.1em .5em;border-radius:4px;color:#fff}
.PASS{background:#2a8c2a}.FAIL{background:#c62828}.INCOMPLETE{background:#e06c00}.PASS-WITH-WAIVERS{background:#6d8c2a}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
table.requirements{table-layout:fixed;width:100%}
table.requirements col.id{width:7em}table.requirements col.status{width:8em}table.requirements col.asks{width:22%}
table.requirements col.why{width:30%}
td.status{color:#fff;font-weight:600;white-space:nowrap}
.counts span{display:inline-block;margin-right:1.2em}.counts b{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-1px}
pre{background:#f6f6f6;padding:.6em;overflow:auto;max-height:30em;white-space:pre-wrap;overflow-wrap:anywhere}
details.cause{border:1px solid #ddd;border-radius:4px;padding:.3em .6em;margin:.5em 0}
details.cause>summary{cursor:pointer}
""" + "".join(f"td.{status}{{background:{colour}}}" for status, colour in COLOURS.items())


def _e(value: object) -> str:
    return html.escape(str(value))


def _matrix(certificate: dict) -> str:
    """An inline SVG: one column per requirement, one row per status, the requirement's status filled in."""
    requirements = certificate["requirements"]
    cell, left, top = 22, 130, 92
    width, height = left + cell * len(requirements) + 10, top + cell * len(STATUSES) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="requirement by status matrix">']
    for row, status in enumerate(STATUSES):
        y = top + row * cell
        parts.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="12">{_e(status)} '
                     f'({certificate["counts"][status]})</text>')
        for column, (requirement, entry) in enumerate(requirements.items()):
            x = left + column * cell
            filled = entry["status"] == status
            fill = COLOURS[status] if filled else "#f4f4f4"
            parts.append(f'<rect x="{x + 1}" y="{y + 1}" width="{cell - 2}" height="{cell - 2}" fill="{fill}">'
                         f'<title>{_e(requirement)}: {_e(entry["status"])}</title></rect>')
    for column, requirement in enumerate(requirements):
        label_x = left + column * cell + cell // 2 + 4
        parts.append(f'<text transform="translate({label_x},{top - 6}) rotate(-60)" font-size="11">{_e(requirement)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _platform(certificate: dict) -> str:
    platform = dict(certificate["platform"])
    system = platform.pop("system", "")
    machine = platform.pop("machine", "")
    versions = ", ".join(f"{name} {version}" for name, version in platform.items())
    return f"{system} ({machine}); {versions}" if machine else f"{system}; {versions}"


def _why(entry: dict, requirement: str = "", causes: list[dict] | None = None) -> str:
    """The reasons shown beside a requirement that does not pass: for a failed one, the root
    causes that fail it (`harness.report.root_causes`)."""
    if entry["status"] == "fail":
        failing = [c for c in causes or () if requirement in c["requirement"].split(", ")]
        return "; ".join(f"{c['count']} test{'s' if c['count'] != 1 else ''} fail it: {_first_line(c['message'])}"
                         for c in failing) or "a test failed on it (see the failures below)"
    if entry["status"] == "not-applicable":
        return (f"the driver's declared {', '.join(entry['capabilities'])} exclude it: "
                + "; ".join(entry["reasons"]))
    if entry["status"] == "not-run":
        return "; ".join(entry["reasons"]) + ". To run it: " + "; ".join(entry["fixes"])
    if entry["status"] == "waived":
        return "waived: " + "; ".join(entry["reasons"])
    return ""


def _first_line(message: str) -> str:
    return next((line for line in message.splitlines() if line.strip()), "")


#: Where a traceback frame's file is, for the frames a reader of a failure does not need: the
#: harness's own machinery, pytest's, pluggy's and hypothesis'.  The suites' frames stay.
_MACHINERY = re.compile(r"/(?:_pytest|pluggy|hypothesis|harness/(?!suites/)(?:[a-z_]+/)*[a-z_]+\.py)")
_FRAME_END = re.compile(r"^(\S+\.py):\d+: .*$", re.MULTILINE)
#: a frame in Python's own format (--tb=native, the harness's sessions): its line, then its source, indented
_NATIVE_FRAME = re.compile(r'^  File "([^"]+)", line \d+, in .*\n(?:    .*\n)*', re.MULTILINE)


def _native_without_machinery(details: str) -> tuple[str, int]:
    """A traceback in Python's own format without the machinery's frames, but the last of each
    traceback in it (chained exceptions have one each), and how many it left out."""
    frames = list(_NATIVE_FRAME.finditer(details))
    kept, at, dropped = [], 0, 0
    for index, frame in enumerate(frames):
        kept.append(details[at:frame.start()])
        last_of_its_traceback = index == len(frames) - 1 or frames[index + 1].start() != frame.end()
        if last_of_its_traceback or not _MACHINERY.search(frame.group(1)):
            kept.append(frame.group(0))
        else:
            dropped += 1
        at = frame.end()
    return "".join(kept) + details[at:], dropped


def _long_without_machinery(details: str) -> tuple[str, int]:
    """The same for pytest's long format, whose frames end with their file and line."""
    frames, start = [], 0
    for end in _FRAME_END.finditer(details):
        frames.append((details[start:end.end()], end.group(1)))
        start = end.end()
    if not frames:
        return details, 0
    kept = [text for index, (text, path) in enumerate(frames)
            if index == len(frames) - 1 or not _MACHINERY.search(path)]
    return "".join(kept).strip("\n_ ") + details[start:], len(frames) - len(kept)


def without_machinery(details: str) -> str:
    """A failure's traceback (pytest's long format or Python's own) with the harness's, pytest's,
    pluggy's and hypothesis' frames left out (the last frame, which holds the error, always
    stays), and a line saying how many."""
    shown, dropped = (_native_without_machinery if _NATIVE_FRAME.search(details) else _long_without_machinery)(details)
    note = f"\n({dropped} frame{'s' if dropped != 1 else ''} of the harness, pytest, pluggy and hypothesis left out)" \
        if dropped else ""
    return shown + note


def _isolation(driver: dict) -> str:
    """How the driver ran: in its own service process with its limits, or in the harness's."""
    if driver.get("isolation") != "process":
        return "in the harness's process (inline): no call deadline, no memory limit"
    limit = driver.get("driver_memory_limit_mib")
    memory = "no memory limit" if not limit else f"{limit} MiB of address space"
    return f"in its own service process: each call cut off after {driver.get('driver_timeout_s')} s, {memory}"


def _duration(run: dict) -> str:
    seconds = run.get("duration_s")
    if seconds is None:
        return "unknown"
    minutes, seconds = divmod(float(seconds), 60)
    return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"


def render(certificate: dict) -> str:
    verdict = certificate["verdict"]
    driver, run = certificate["driver"], certificate["run"]
    counts = "".join(f'<span><b style="background:{COLOURS[status]}"></b>{_e(status)}: {n}</span>'
                     for status, n in certificate["counts"].items())
    rows = []
    causes = certificate.get("root_causes")
    if causes is None:  # a certificate of the schema before root causes: grouped here
        causes = group(certificate["failures"])
    for requirement, entry in certificate["requirements"].items():
        shown = entry["tests"][:_TESTS_SHOWN]
        tests = "<br>".join(f"{_e(t['test'])}: {_e(t['outcome'])}" for t in shown) or "—"
        if len(entry["tests"]) > len(shown):
            tests += f"<br>… and {len(entry['tests']) - len(shown)} more (certificate.json lists them all)"
        rows.append(f"<tr><td>{_spec_link(requirement)}</td><td>{_e(entry['summary'])}</td>"
                    f"<td class=\"status {_e(entry['status'])}\">{_e(entry['status'])}</td>"
                    f"<td>{_e(_why(entry, requirement, causes))}</td><td>{tests}</td></tr>")
    records = {failure["id"]: failure for failure in certificate["failures"]}
    failures = [_cause(cause, records.get(cause["first"], {})) for cause in causes]
    fixes = "".join(f"<li><code>{_e(fix)}</code></li>" for fix in certificate["fixes"])
    left_out = certificate.get("files_left_out") or []
    left_out_note = (f"<p>Files left out of the run, their tests unrecorded: {_e(', '.join(left_out))}</p>"
                     if left_out else "")
    to_complete = f"<h2>To complete the certificate</h2>{left_out_note}<ul>{fixes}</ul>" if fixes else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Certificate: {_e(driver['driver'])} — {_e(verdict)}</title>
<style>{_STYLE}</style></head><body>
<h1>{_e(driver['driver'])}: <span class="{_e(verdict)}">{_e(verdict)}</span></h1>
{_matrix(certificate)}
<p class="counts">{counts}<span>run time: {_e(_duration(run))}</span></p>
{to_complete}
<table>
<tr><th>driver</th><td>{_e(driver.get('device_name'))} {_e(driver.get('device_version'))} ({_e(driver.get('description'))}),
 {_e(_isolation(driver))}</td></tr>
<tr><th>harness</th><td>{_e(certificate['harness']['version'])} at {_e(certificate['harness']['git_commit'])}</td></tr>
<tr><th>run</th><td>profile {_e(run['profile'])}, seed {_e(run['seed'])}, {_e(run['tests'])} tests, {_e(run['failed'])} failed,
 {_e(run['started'])} to {_e(run['ended'])}</td></tr>
<tr><th>platform</th><td>{_e(_platform(certificate))}</td></tr>
</table>
<h2>Requirements</h2>
<table class="requirements"><colgroup><col class="id"><col class="asks"><col class="status"><col class="why"><col></colgroup>
<tr><th>requirement</th><th>what it asks</th><th>status</th><th>why</th><th>tests</th></tr>
{''.join(rows)}
</table>
{_golden(certificate)}
<h2>Failures by root cause</h2>
{_causes_note(certificate, causes)}{''.join(failures) or '<p>none</p>'}
{_contract_text(certificate)}
</body></html>
"""


_TESTS_SHOWN = 40


def _causes_note(certificate: dict, causes: list[dict]) -> str:
    failed = len(certificate["failures"])
    if not causes:
        return ""
    return (f"<p>{failed} failed test{'s' if failed != 1 else ''}, {len(causes)} root cause{'s' if len(causes) != 1 else ''}: "
            f"the same requirement broken, in the same call, with the same message but for its values.</p>")


def _cause(cause: dict, failure: dict) -> str:
    """One root cause, collapsed: its requirement, call and count; inside, its tests and the first
    failure's message, traceback (machinery left out), reproducer and driver output."""
    reproducer = ""
    path = cause.get("reproducer")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            check = check_note(failure)
            alone = f" <small>({_e(check)})</small>" if check else ""
            reproducer = (f"<details><summary>reproducer ({_e(os.path.basename(path))}){alone}</summary>"
                          f"<pre>{_e(f.read())}</pre></details>")
    note = no_verdict_note(cause.get("fault", "driver"))
    whose = f" <small>({_e(note)})</small>" if note else ""
    where = f" in {_e(cause['entry_point'])}" if cause["entry_point"] else ""
    count = cause["count"]
    tests = "".join(f"<li>{_e(test)}</li>" for test in cause["tests"][:_TESTS_SHOWN])
    more = f"<li>… and {count - _TESTS_SHOWN} more (certificate.json)</li>" if count > _TESTS_SHOWN else ""
    broken = ", ".join(_spec_link(r) if r in REQUIREMENTS else _e(r) for r in cause["requirement"].split(", "))
    return (f"<details class=\"cause\"><summary><b>{broken}</b>{where}, "
            f"{count} test{'s' if count != 1 else ''}: {_e(_first_line(cause['message']))}{whose}</summary>"
            f"<p>Tests: </p><ul>{tests}{more}</ul><p>The first, {_e(cause['first'])}:</p><pre>{_e(cause['message'])}</pre>"
            f"<details><summary>traceback and minimal example</summary><pre>{_e(without_machinery(failure.get('details', '')))}</pre>"
            f"</details>{reproducer}{_driver_output(failure)}</details>")


def _golden(certificate: dict) -> str:
    """The golden corpus's coverage: operation x operand type -> tests passed / run, and reported unsupported."""
    golden = certificate.get("golden") or {}
    coverage, corpus = golden.get("coverage") or {}, golden.get("corpus")
    if not coverage and not corpus:
        return ""
    rows = "".join(f"<tr><td>{_e(op)}</td><td>{_e(t)}</td><td>{c['passed']} / {c['run']}</td><td>{c['unsupported']}</td></tr>"
                   for op, types in coverage.items() for t, c in types.items())
    head = ""
    if corpus:
        needs = ", ".join(f"{_e(k)}: {v}" for k, v in list(corpus["not_declared_by_need"].items())[:12])
        head = (f"<p>{corpus['files']} spec files, {corpus['examples']} examples: {corpus['declared']} declared by the "
                f"driver, {corpus['not_declared']} not declared ({needs}), {len(corpus['unexpressed'])} the harness "
                f"could not read.</p>")
        unread = "".join(f"<li><code>{_e(u['reason'])}</code></li>" for u in corpus["unexpressed"][:_TESTS_SHOWN])
        more = len(corpus["unexpressed"]) - _TESTS_SHOWN
        if unread:
            head += (f"<p>Could not be read (their examples did not run):</p><ul>{unread}"
                     f"{f'<li>and {more} more (certificate.json)</li>' if more > 0 else ''}</ul>")
    return (f"<h2>Golden examples (NNAPI CTS)</h2>{head}<table><tr><th>operation</th><th>first input type</th>"
            f"<th>tests passed / run</th><th>tests the driver reported unsupported</th></tr>{rows}</table>")


def _driver_output(failure: dict) -> str:
    output = failure.get("driver_output") or ""
    return f"<details><summary>what the driver printed during the test (last 4 KiB)</summary><pre>{_e(output)}</pre></details>" \
        if output else ""


def _spec_link(requirement: str) -> str:
    """The requirement's ID, linked to its text at the end of the page."""
    return f'<a href="#spec-{_e(contract.anchor(requirement))}">{_e(requirement)}</a>'


def _inline(markdown: str) -> str:
    """The contract's Markdown as HTML: code spans and emphasis; a link keeps its text only."""
    escaped = _e(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown))
    escaped = re.sub(r"`([^`]*)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", escaped)


def _contract_text(certificate: dict) -> str:
    """The text of every requirement in the certificate (and of the CHOICEs it cites), each under
    an anchor its row links to, so the page needs nothing beside it to say what a rule asks."""
    texts = contract.sections()
    shown = [r for r in certificate["requirements"] if r in texts] + [r for r in texts if r.startswith("CHOICE-")]
    parts = []
    for requirement in shown:
        paragraphs = "".join(f"<p>{_inline(paragraph)}</p>" for paragraph in texts[requirement].split("\n\n"))
        parts.append(f'<section id="spec-{_e(contract.anchor(requirement))}"><h3>{_e(requirement)}</h3>{paragraphs}</section>')
    return (f"<h2>The requirements' text</h2><p>From the contract, {_e(contract.DOCUMENT)} "
            f"(installed as harness/spec.md).</p>{''.join(parts)}")
