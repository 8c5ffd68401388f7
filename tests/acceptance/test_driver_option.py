"""Real pytest runs (subprocesses): --driver resolution, bad input, a buggy out-of-tree driver."""

from __future__ import annotations

import json
import textwrap

import pytest

CI = ("-p", "no:cacheprovider", "--harness-profile=ci")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*CI, *args, timeout=600)


def output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def failed_tests(pytester: pytest.Pytester) -> list[dict]:
    """The records (``--harness-record=record.jsonl``) of the run's failed tests."""
    lines = map(json.loads, (pytester.path / "record.jsonl").read_text().splitlines())
    return [line for line in lines if line.get("outcome") == "failed"]


def usage_error(pytester: pytest.Pytester, driver: str, **files: str) -> str:
    """What a run of the suites with ``--driver=driver`` (and these driver files) says: it must stop
    as a usage error, before any test."""
    if files:
        pytester.makepyfile(**files)
    result = run(pytester, "--pyargs", "harness.suites", f"--driver={driver}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    return output(result)


def test_unknown_driver_lists_the_drivers_that_exist(pytester: pytest.Pytester) -> None:
    text = usage_error(pytester, "no-such-driver")
    assert "unknown driver 'no-such-driver'" in text and "reference" in text
    assert "Traceback" not in text


def test_plugin_that_fails_to_import_is_named(pytester: pytest.Pytester) -> None:
    text = usage_error(pytester, "broken_driver.py:factory",
                       broken_driver="import module_that_does_not_exist\n\ndef factory():\n    pass\n")
    assert "broken_driver.py" in text and "ModuleNotFoundError" in text and "module_that_does_not_exist" in text


def test_factory_that_raises_is_named(pytester: pytest.Pytester) -> None:
    text = usage_error(pytester, "raising_driver.py:factory",
                       raising_driver="def factory():\n    raise RuntimeError('no device node /dev/npu0')\n")
    assert "raising_driver.py:factory" in text and "RuntimeError: no device node /dev/npu0" in text


def test_missing_factory_lists_what_the_module_has(pytester: pytest.Pytester) -> None:
    text = usage_error(pytester, "some_driver.py:factory", some_driver="def make_device():\n    pass\n")
    assert "no callable 'factory'" in text and "make_device" in text
    assert "some_driver.py has no callable" in text  # the file, not the name it was imported under


def test_a_driver_file_without_its_factory_asks_for_one(pytester: pytest.Pytester) -> None:
    text = usage_error(pytester, "some_driver.py", some_driver="def make_device():\n    pass\n")
    assert "--driver=some_driver.py:FACTORY" in text and "make_device" in text
    assert "unknown driver" not in text and "Traceback" not in text


IO_INDEX_BUG = textwrap.dedent(
    '''
    """The reference driver with one bug: buffer roles are checked without the ioIndex (DOM-ROLE-2)."""
    from harness.api.hal import ErrorStatus
    from reference_driver import ReferenceDevice
    from reference_driver.validation import Rules


    class RolesWithoutIoIndex(Rules):
        @staticmethod
        def role_allowed(roles, prepared_model, direction, io_index):
            if any(r.prepared_model is prepared_model and r.direction == direction for r in roles):
                return ErrorStatus.NONE
            return ErrorStatus.INVALID_ARGUMENT


    def factory():
        return ReferenceDevice(rules=RolesWithoutIoIndex())
    '''
)


def test_out_of_tree_driver_with_a_role_bug_fails_naming_dom_role_2(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(buggy_driver=IO_INDEX_BUG)
    result = run(pytester, "--pyargs", "harness.suites.memory_domains", "--driver=buggy_driver.py:factory", "-q", "-x",
                 "--harness-record=record.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "[DOM-ROLE-2]" in output(result)
    (failed,) = failed_tests(pytester)
    assert "/test_roles.py::" in failed["id"] and failed["rule"] == "DOM-ROLE-2", failed


def test_reference_passes_the_suites_under_xdist(pytester: pytest.Pytester) -> None:
    # The suites whose state lives in the service (pools, domains) and the native-code ones, every
    # test of them on two workers; a few examples each, as what is checked here is the workers'
    # plumbing (the reference's verdict at the profile's count is the certify test's).
    result = run(pytester, "--pyargs", "harness.suites.memory_pools", "harness.suites.memory_domains", "harness.suites.custom_calls",
                 "--driver=reference", "-n", "2", "-q", "--harness-examples=3")
    assert result.ret == pytest.ExitCode.OK, output(result)[-3000:]


def test_header_names_driver_profile_and_seed(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--pyargs", "harness.suites.requests", "--driver=reference", "--harness-seed=1234")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK
    assert "driver 'reference', profile ci, hypothesis seed 1234" in text
    assert "capabilities: memory kinds" in text and "memory domains yes" in text
    from reference_driver import ReferenceDevice

    kinds = sorted(kind.value for kind in ReferenceDevice().capabilities().memory_kinds)
    assert f"memory kinds [{', '.join(kinds)}]" in text  # SPEC's names, not an enum's repr


EXPECTATIONS = textwrap.dedent(
    '''
    [[expect]]
    test = "suites/requests/test_validation.py::test_mutated_requests"
    action = "xfail"
    reason = "known validation gap, fixed in driver 2.1"

    [[expect]]
    test = "suites/requests/test_nothing_like_this.py::*"
    action = "skip"
    reason = "stale on purpose"
    '''
)


def test_expectations_apply_and_stale_entries_are_reported(pytester: pytest.Pytester) -> None:
    path = pytester.makefile(".toml", expectations=EXPECTATIONS)
    result = run(pytester, "--pyargs", "harness.suites.requests", f"--expectations={path}", "-rxX")
    text = output(result)
    assert result.ret == pytest.ExitCode.OK
    assert "known validation gap" in text
    assert "stale expectations" in text and "test_nothing_like_this" in text


@pytest.mark.parametrize(
    "content, line",
    [
        ('[[expect]]\ntest = "x"\naction = "xfail"\nreason = "r"\n\n[[expect]]\ntest = "y"\naction = "maybe"\nreason = "r"\n', 6),
        ('[[expect]]\ntest = "x"\naction = "xfail"\nreason = \n', 4),
        ('[[expect]]\ntest = "x"\naction = "skip"\n', 1),
    ],
    ids=["bad-action", "bad-toml", "missing-reason"],
)
def test_malformed_expectations_name_the_line(pytester: pytest.Pytester, content: str, line: int) -> None:
    path = pytester.makefile(".toml", expectations=content)
    result = run(pytester, "--pyargs", "harness.suites.requests", f"--expectations={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert f"line {line}" in text or f"expectations.toml:{line}" in text, text
    assert "Traceback" not in text


NO_DOMAINS = textwrap.dedent(
    '''
    import dataclasses
    from reference_driver import ReferenceDevice


    class NoDomains(ReferenceDevice):
        def capabilities(self):
            return dataclasses.replace(super().capabilities(), memory_domains=False)


    def factory():
        return NoDomains()
    '''
)

REFUSES_ALL = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class RefusesAllocation(ReferenceDevice):
        def allocate(self, *args):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of device memory")


    def factory():
        return RefusesAllocation()
    '''
)


REFUSES_VALID = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class RefusesValidAllocations(ReferenceDevice):
        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, _ = super().allocate(desc, prepared_models, input_roles, output_roles)  # an invalid one fails here
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of device memory")


    def factory():
        return RefusesValidAllocations()
    '''
)


def test_driver_without_memory_domains_skips_them_with_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(no_domains=NO_DOMAINS)
    result = run(pytester, "--pyargs", "harness.suites.memory_domains", "--driver=no_domains.py:factory", "-rs",
                 "--harness-record=record.jsonl")
    assert result.ret == pytest.ExitCode.OK
    tests = [line for line in map(json.loads, (pytester.path / "record.jsonl").read_text().splitlines()) if "id" in line]
    # every test skipped, as not applicable to what the driver declares (its records, not pytest's summary)
    assert tests and all(t["outcome"] == "skipped" and t["skip"]["kind"] == "not-applicable" for t in tests), tests[:3]
    assert "declares no memory-domain support" in output(result)


def test_driver_refusing_every_allocation_fails_dom_alloc_3(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(refuses=REFUSES_ALL)
    result = run(pytester, "--pyargs", "harness.suites.memory_domains.test_allocation", "--driver=refuses.py:factory", "-rfs",
                 "--harness-record=record.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "[DOM-ALLOC-3]" in output(result)
    failed = {line["id"].rsplit("::", 1)[1]: line["rule"] for line in failed_tests(pytester)}
    assert failed.get("test_simple_fully_specified_buffer_is_served") == "DOM-ALLOC-3", failed


def test_generative_tests_whose_every_valid_allocation_was_refused_are_not_run(pytester: pytest.Pytester) -> None:
    # Refusing is allowed (DOM-ALLOC-3), but then no buffer was copied, executed or released: these
    # tests returned early from every example, checked nothing they are for, and must not pass.
    pytester.makepyfile(refuses_valid=REFUSES_VALID)
    records = pytester.path / "records.jsonl"
    result = run(pytester, "--pyargs", "harness.suites.memory_domains.test_state_machine", "harness.suites.memory_domains.test_copies",
                 "-k", "state_machine or copy_sequences", "--driver=refuses_valid.py:factory", f"--harness-record={records}")
    assert result.ret == pytest.ExitCode.OK, output(result)[-3000:]
    found = {r["id"].rpartition("::")[2]: r for r in map(json.loads, records.read_text().splitlines()) if "outcome" in r}
    assert set(found) == {"test_memory_domain_state_machine", "test_copy_sequences"}, found
    for record in found.values():
        assert record["outcome"] == "skipped" and record["skip"]["kind"] == "not-run", record
        assert "DOM-ALLOC-3" in record["skip"]["reason"], record


def test_a_driver_run_that_collects_nothing_says_how_to_run_the_suites(pytester: pytest.Pytester) -> None:
    """``pytest --driver=NAME`` from a folder without tests (a vendor's own) names the commands that
    run the installed suites; each command it names does collect them."""
    result = run(pytester, "--driver=reference")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    hints = [line for line in result.outlines if line.startswith("driver-harness: no tests here")]
    assert len(hints) == 1, output(result)
    assert "`harness certify --driver reference`" in hints[0]
    suggested = hints[0].split("`")[3].split()
    assert suggested[0] == "pytest"
    collected = run(pytester, *suggested[1:], "--collect-only", "-q")
    assert collected.ret == pytest.ExitCode.OK and any("harness/suites/" in line or "::" in line for line in collected.outlines)


def test_a_run_that_collects_nothing_without_driver_gives_no_hint(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own="def test_own():\n    assert 1 + 1 == 2\n")
    result = run(pytester, "-k", "nothing_matches")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not any("driver-harness: no tests here" in line for line in result.outlines)
