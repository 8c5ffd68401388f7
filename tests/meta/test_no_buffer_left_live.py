"""Every memory-domain test releases the buffers it allocated, on both drivers, however its
examples end.  A driver may refuse allocations past a memory limit (DOM-ALLOC-3); buffers the
harness left live used up a correct driver's limit, and the tests after them were not run, or
drew other examples from the same choices and failed."""

from __future__ import annotations

import json

import pytest

#: After each test call, the buffers still live in each in-process driver that has a token table.
_CHECK = '''
import json
import pytest

LEFT = []
CHECKED = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    for side in ("driver", "reference"):
        device = item.funcargs.get(side)
        tokens = getattr(device, "tokens", None)
        if tokens is None:
            continue
        CHECKED.append(item.nodeid)
        live = tokens.live_tokens()
        if live:
            LEFT.append({"test": item.nodeid, "side": side, "live": len(live)})
            for token in live:  # the next test starts clean, and shows its own leftovers only
                tokens.remove(token)


def pytest_sessionfinish(session):
    with open("live_buffers.json", "w") as f:
        json.dump({"left": LEFT, "checked": sorted(set(CHECKED))}, f)
'''


@pytest.mark.parametrize("profile", ["certify"])  # ci finds a subset of what certify finds
def test_no_memory_domain_test_leaves_a_buffer_live(pytester: pytest.Pytester, profile: str) -> None:
    pytester.makepyfile(live_buffers_check=_CHECK)
    result = pytester.runpytest_subprocess("--pyargs", "harness.suites.memory_domains", "--driver=reference",
                                           "--driver-isolation=inline", f"--harness-profile={profile}",
                                           "--harness-seed=0", "-p", "live_buffers_check", "-p", "no:cacheprovider",
                                           "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()[-2000:]
    found = json.loads((pytester.path / "live_buffers.json").read_text())
    assert len(found["checked"]) >= 40, f"only {len(found['checked'])} memory-domain tests were checked"
    assert found["left"] == [], "tests that left buffers live in a driver: " + "; ".join(
        f"{left['test']} ({left['live']} on the {left['side']})" for left in found["left"])
