"""report.html: one self-contained page (no network, no external assets)."""

from __future__ import annotations

import html
import os

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
h1 span{padding:.1em .5em;border-radius:4px;color:#fff}
.PASS{background:#2a7d2a}.FAIL{background:#b22}.INCOMPLETE{background:#b67a00}.PASS-WITH-WAIVERS{background:#5a6d2a}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
td.pass{background:#e6f4e6}td.fail{background:#fbe3e3}td.waived{background:#f5f0d8}td.skipped,td.not-covered{background:#eee}
pre{background:#f6f6f6;padding:.6em;overflow:auto;max-height:30em}
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def render(certificate: dict) -> str:
    verdict = certificate["verdict"]
    driver, run = certificate["driver"], certificate["run"]
    rows = []
    for requirement, entry in certificate["requirements"].items():
        tests = "<br>".join(f"{_e(t['test'])}: {_e(t['outcome'])}" + (f" (waived: {_e(t['waiver'])})" if t["waiver"] else "")
                            for t in entry["tests"]) or "—"
        rows.append(f"<tr><td>{_e(requirement)}</td><td>{_e(entry['summary'])}</td>"
                    f"<td class=\"{_e(entry['status'])}\">{_e(entry['status'])}</td><td>{tests}</td></tr>")
    failures = []
    for failure in certificate["failures"]:
        reproducer = ""
        path = failure.get("reproducer")
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                reproducer = f"<details><summary>reproducer ({_e(os.path.basename(path))})</summary><pre>{_e(f.read())}</pre></details>"
        failures.append(f"<h3>{_e(failure['id'])}</h3><p>{_e(failure['message'])}</p>"
                        f"<details open><summary>minimal example and details</summary><pre>{_e(failure.get('details', ''))}</pre></details>"
                        f"{reproducer}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Certificate: {_e(driver['driver'])} — {_e(verdict)}</title>
<style>{_STYLE}</style></head><body>
<h1>{_e(driver['driver'])}: <span class="{_e(verdict)}">{_e(verdict)}</span></h1>
<table>
<tr><th>driver</th><td>{_e(driver.get('device_name'))} {_e(driver.get('device_version'))} ({_e(driver.get('description'))})</td></tr>
<tr><th>harness</th><td>{_e(certificate['harness']['version'])} at {_e(certificate['harness']['git_commit'])}</td></tr>
<tr><th>run</th><td>profile {_e(run['profile'])}, seed {_e(run['seed'])}, {_e(run['tests'])} tests, {_e(run['failed'])} failed,
 {_e(run['started'])} to {_e(run['ended'])}</td></tr>
<tr><th>platform</th><td>{_e(certificate['platform'])}</td></tr>
<tr><th>waived</th><td>{_e(', '.join(certificate['waived']) or 'none')}</td></tr>
<tr><th>not covered</th><td>{_e(', '.join(certificate['not_covered']) or 'none')}</td></tr>
</table>
<h2>Requirements</h2>
<table><tr><th>requirement</th><th>what it asks</th><th>status</th><th>tests</th></tr>
{''.join(rows)}
</table>
<h2>Failures</h2>
{''.join(failures) or '<p>none</p>'}
</body></html>
"""
