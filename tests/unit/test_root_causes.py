"""Failures grouped by root cause: forty examples of one bug are one entry of forty tests, in the
certificate, the HTML report (collapsed, machinery frames left out) and the console."""

from __future__ import annotations

from harness.report import certificate, html
from harness.report.root_causes import console_lines, entry_point, group, signature


def _failure(test: str, message: str, rule: str = "OPS-1", requirements: tuple[str, ...] = ("POOL-5",)) -> dict:
    return {"id": test, "outcome": "failed", "fault": "driver", "requirements": list(requirements), "rule": rule,
            "message": message, "waiver": "", "skip": None, "reproducer": "", "details": ""}


ONE_BUG = [_failure(f"suites/memory_pools/test_handles.py::test_unusable_pool[{n}]",
                    f"[OPS-1] output 0 differs: element {n}: driver wrote np.float32({n}.5), reference np.float32({n}.0)")
           for n in range(5)]
OTHER_BUG = _failure("suites/memory_pools/test_layouts.py::test_padding",
                     "[POOL-2] request pool 1 (ashmem) byte 16 outside every output region changed from 0x00 to 0xff",
                     rule="POOL-2", requirements=("POOL-2",))


def test_a_signature_leaves_out_what_varies_between_examples() -> None:
    assert signature(ONE_BUG[0]["message"]) == signature(ONE_BUG[4]["message"])
    assert signature(ONE_BUG[0]["message"]) != signature(OTHER_BUG["message"])
    assert "[OPS-1]" not in signature(ONE_BUG[0]["message"])


def test_the_entry_point_is_the_call_the_message_names() -> None:
    assert entry_point(ONE_BUG[0]) == "execute"
    assert entry_point({"message": "[SVC-1] PreparedModel.execute(request of 2 inputs) raised"}) == "execute"
    assert entry_point({"message": "[POOL-4] wrong status INVALID_ARGUMENT\n  reference: GENERAL_FAILURE at prepare: x"}) \
        == "prepare_model"


def test_one_bug_is_one_root_cause_of_every_test_it_fails() -> None:
    causes = group([*ONE_BUG, OTHER_BUG])
    assert [(c["requirement"], c["count"]) for c in causes] == [("OPS-1", 5), ("POOL-2", 1)]
    assert causes[0]["tests"] == [f["id"] for f in ONE_BUG] and causes[0]["first"] == ONE_BUG[0]["id"]
    lines = console_lines(causes)
    assert lines[0].startswith("  OPS-1 in execute, 5 tests: [OPS-1] output 0 differs")


def test_the_certificate_and_report_group_failures_and_say_why_a_requirement_fails() -> None:
    document = certificate.build([*ONE_BUG, OTHER_BUG], {"driver": "d"}, "", "", True)
    assert [c["count"] for c in document["root_causes"]] == [5, 1]
    page = html.render(document)
    assert page.count('<details class="cause">') == 2 and "<details open" not in page
    row = page.split('href="#spec-ops-1">OPS-1</a></td>', 1)[1].split("</tr>", 1)[0]
    assert "5 tests fail it: [OPS-1] output 0 differs" in row


def test_a_traceback_leaves_out_the_machinerys_frames() -> None:
    details = ("    def test_x():\n>       check()\n\n/repo/suites/memory_pools/test_handles.py:23: \n"
               "_ _ _ _\n\n    def check():\n>       hook()\n\n/venv/lib/python3.12/site-packages/pluggy/_hooks.py:512: \n"
               "_ _ _ _\n\n    def hook():\n>       run()\n\n/venv/lib/python3.12/site-packages/_pytest/runner.py:9: \n"
               "_ _ _ _\n\n    def run():\n>       raise E\nE   ConformanceError: [POOL-2] x\n\n"
               "/repo/harness/judging/oracle.py:400: ConformanceError")
    shown = html.without_machinery(details)
    assert "test_handles.py:23" in shown and "oracle.py:400: ConformanceError" in shown
    assert "pluggy/_hooks.py" not in shown and "_pytest/runner.py" not in shown
    assert "2 frames of the harness, pytest, pluggy and hypothesis left out" in shown


def test_values_of_other_types_are_one_signature() -> None:
    assert signature("[OPS-1] output 0 differs: element 3: driver wrote np.uint8(122), reference np.uint8(120)") == \
        signature("[OPS-1] output 0 differs: element 0: driver wrote np.float32(6.5), reference np.float32(6.0)")


def test_a_failing_run_says_why_it_took_longer() -> None:
    from harness.report.run_time import why_longer

    document = {"failures": [{**f, "duration": 2.0, "replays": True} for f in ONE_BUG],
                "run": {"duration_s": 52.0, "service": {"starts": 4}}}
    assert why_longer(document) == ("5 failed tests took 10 s of this 52 s run: hypothesis shrinks each failure to a "
                                    "minimal example, and 5 reproducers were run again to check that each fails alone; "
                                    "the driver service was started 4 times (a fresh one after each crash or hang)")
    assert why_longer({"failures": [], "run": {}}) == ""
    refused = [{**f, "duration": 0.01, "by_breaker": True} for f in ONE_BUG]
    assert "minimal example (but the 5 the circuit breaker refused: every example fails those alike)" in \
        why_longer({"failures": refused, "run": {"duration_s": 20.0}})


def test_a_native_traceback_leaves_out_the_machinerys_frames_but_each_error() -> None:
    """Python's own format (the harness's sessions' --tb=native), with a chained exception: each
    traceback keeps its last frame, the one that raised."""
    frame = '  File "{}", line {}, in {}\n    {}\n'
    details = ("Traceback (most recent call last):\n"
               + frame.format("/repo/harness/service/client.py", 7, "call", "raise RemoteError()")
               + "harness.service.client.RemoteError: gone\n\nDuring handling of the above exception, another exception "
                 "occurred:\n\nTraceback (most recent call last):\n"
               + frame.format("/repo/suites/memory_pools/test_handles.py", 23, "test_x", "check()")
               + frame.format("/venv/lib/python3.12/site-packages/hypothesis/core.py", 9, "run", "test()")
               + frame.format("/repo/harness/judging/oracle.py", 400, "_fail", "raise ConformanceError(...)")
               + "harness.api.errors.ConformanceError: [POOL-2] x\nFalsifying example: test_x()\n")
    shown = html.without_machinery(details)
    assert "client.py\", line 7" in shown and "RemoteError: gone" in shown and "During handling" in shown
    assert "test_handles.py\", line 23" in shown and "oracle.py\", line 400" in shown
    assert "hypothesis/core.py" not in shown and "Falsifying example: test_x()" in shown
    assert "1 frame of the harness, pytest, pluggy and hypothesis left out" in shown


def test_a_failure_in_pythons_format_starts_at_the_test_function() -> None:
    from harness.integration.tracebacks import from_the_test

    def the_test() -> None:
        raise ValueError("the driver's fault")

    def runner() -> None:  # stands for pytest's and the harness's hooks around the test
        the_test()

    import traceback

    try:
        runner()
    except ValueError as error:
        shown = from_the_test(error, the_test.__code__)
        # Python's own rendering of the frames from the test down, and of the error, nothing above
        expected = "".join(traceback.format_exception(type(error), error, error.__traceback__.tb_next.tb_next))
    assert shown == expected.rstrip("\n")
    assert "the_test()" not in shown and 'raise ValueError("the driver\'s fault")' in shown


def test_one_bug_in_many_golden_examples_is_one_signature() -> None:
    """Which example, variation and test kind, and how many elements are listed, vary with the example."""
    assert signature("[OPS-1] add_broadcast.mod.py:20 example 0 (add_broadcast_relu6), variation relu6, general in "
                     "ashmem: output 0 (TENSOR_FLOAT32): 2 of 4 elements beyond atol 1e-05 + rtol 5.96046e-07 x "
                     "|expected|: [0] expected 6 got 6.5, [2] expected 6 got 6.5") == \
        signature("[OPS-1] mul.mod.py:31 example 2 (mul_relu6_float16), variation float16+relu6, "
                  "dynamic_output_shape: output 0 (TENSOR_FLOAT16): 1 of 4 elements beyond atol 0.00488281 + rtol "
                  "0.00488281 x |expected|: [3] expected 6 got 6.5")
