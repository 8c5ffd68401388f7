"""report.html fits a 1400 px window: no horizontal scrolling, even with every failure opened and
test IDs, messages and tracebacks far wider than the window (measured in headless Chromium)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.report import certificate, html

WINDOW = (1400, 900)
#: Opens every <details>, then writes how wide the laid-out page is into the DOM that --dump-dom prints.
_MEASURE = ("<script>document.querySelectorAll('details').forEach(d => d.open = true);"
            "document.body.setAttribute('data-scroll-width', document.documentElement.scrollWidth);"
            "document.body.setAttribute('data-client-width', document.documentElement.clientWidth);</script></body>")


def _wide_failure(n: int) -> dict:
    test = f"suites/memory_pools/test_layouts.py::test_generated_scenarios_match_the_reference[{'x' * 120}-{n}]"
    message = f"[OPS-1] output 0 differs: element {n}: driver wrote {'9' * 300}, reference 1.0"
    details = ("E   " + "scenario=" + "Scenario(" * 60 + "\n") * 20 + "/repo/suites/memory_pools/test_layouts.py:30: ConformanceError"
    return {"id": test, "outcome": "failed", "fault": "driver", "requirements": ["POOL-2", "POOL-5"], "rule": "OPS-1",
            "message": message, "waiver": "", "skip": None, "reproducer": "", "details": details,
            "driver_output": "printed " + "y" * 500}


def test_the_report_fits_1400_px_without_horizontal_scrolling(tmp_path: Path, chromium) -> None:
    records = [_wide_failure(n) for n in range(45)]
    records += [{**_wide_failure(99), "id": f"suites/x.py::test_passing_{'z' * 150}_{n}", "outcome": "passed",
                 "requirements": ["POOL-1", "POOL-2", "POOL-3"], "rule": "", "message": ""} for n in range(50)]
    document = certificate.build(records, {"driver": "a-driver-" + "w" * 200}, "start", "end", True, 12.0)
    page = tmp_path / "report.html"
    page.write_text(html.render(document).replace("</body>", _MEASURE), encoding="utf-8")
    dom = chromium.dom(page.as_uri(), *WINDOW)
    found = re.search(r'data-scroll-width="(\d+)" data-client-width="(\d+)"', dom.stdout)
    assert found, f"Chromium did not run the measuring script: {dom.stderr[-2000:]}"
    scroll_width, client_width = map(int, found.groups())
    assert 0 < client_width <= WINDOW[0]
    assert scroll_width <= client_width, f"the page is {scroll_width} px wide in a {client_width} px window"
