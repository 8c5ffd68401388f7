"""`harness cts` verdicts: PASS only over checks that ran; loader errors listed whatever the verdict;
each test kind's reproducer replays its own example (the one numbered ``_2`` too)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from harness.api.memory import REQUIRED_KINDS
from harness.report import certificate

ADD_SPEC = textwrap.dedent("""
    a = Input("a", "TENSOR_FLOAT32", "{2}")
    b = Input("b", "TENSOR_FLOAT32", "{2}")
    o = Output("o", "TENSOR_FLOAT32", "{2}")
    Model().Operation("ADD", a, b, 0).To(o)
    Example({a: [1, 2], b: [3, 4], o: [4, 6]})
""")

# Two examples of one model with no name: one example with two inputs, "div" and "div_2" (Android's
# numbering).  Truncating division gets the first right (exact quotients) and the second wrong.
DIV_SPEC = textwrap.dedent("""
    a = Input("a", "TENSOR_INT32", "{2}")
    b = Input("b", "TENSOR_INT32", "{2}")
    o = Output("o", "TENSOR_INT32", "{2}")
    Model().Operation("DIV", a, b, 0).To(o)
    Example({a: [6, 9], b: [2, 3], o: [3, 3]})
    Example({a: [-7, 7], b: [2, -2], o: [-4, -4]})
""")

REFUSES_WHAT_IT_DECLARES = textwrap.dedent("""
    from harness.api.hal import Capabilities, OperandType, OperationType
    from harness.api.memory import REQUIRED_KINDS
    from reference_driver import ReferenceDevice

    class RefusesAdd(ReferenceDevice):
        '''Declares ADD on TENSOR_FLOAT32, then reports every model unsupported.'''

        def capabilities(self):
            return Capabilities(memory_kinds=frozenset(REQUIRED_KINDS), memory_domains=True,
                                operations=frozenset({OperationType.ADD}),
                                operand_types=frozenset({OperandType.TENSOR_FLOAT32, OperandType.INT32}))

        def get_supported_operations(self, model):
            return [False] * len(model.main.operations)

    def factory():
        return RefusesAdd()
""")


def cts(tmp_path: Path, driver: str, specs: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict]:
    folder = tmp_path / "specs"
    folder.mkdir()
    for name, source in specs.items():
        (folder / name).write_text(source)
    done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "cts", "--driver", driver, "--specs", "specs",
                           "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    return done, document


def checks(document: dict) -> tuple[int, int]:
    cells = [c for types in document["golden"]["coverage"].values() for c in types.values()]
    return sum(c["run"] for c in cells), sum(c["unsupported"] for c in cells)


def test_a_corpus_the_driver_declares_nothing_of_is_incomplete(tmp_path: Path) -> None:
    # the HAL's OEM operation: no driver but its vendor's declares it, the reference neither
    vendors = ADD_SPEC.replace('"ADD", a, b, 0', '"OEM_OPERATION", a, b')
    done, document = cts(tmp_path, "reference", {"vendors.mod.py": vendors})
    assert done.returncode == 1, done.stdout + done.stderr
    assert document["verdict"] == "INCOMPLETE" and document["nothing_checked"], document["requirements"]
    assert certificate.NOTHING_CHECKED_FIX in document["fixes"] and "no check ran" in done.stderr
    assert document["golden"]["corpus"]["declared"] == 0 and checks(document) == (0, 0)


def test_a_driver_that_declares_and_then_refuses_is_incomplete(tmp_path: Path) -> None:
    (tmp_path / "driver.py").write_text(REFUSES_WHAT_IT_DECLARES)
    done, document = cts(tmp_path, "driver.py:factory", {"add.mod.py": ADD_SPEC})
    assert done.returncode == 1, done.stdout + done.stderr
    assert document["verdict"] == "INCOMPLETE" and document["nothing_checked"]
    run, unsupported = checks(document)
    # every test of the declared example was reported unsupported: general in each memory kind,
    # dynamic output shape, memory domain; and all inputs as internal, the example's one variation
    assert run == 0 and unsupported == 2 * (len(REQUIRED_KINDS) + 2), document["golden"]["coverage"]
    assert "reported unsupported by the driver" in done.stdout


def test_loader_errors_are_listed_with_a_failure_and_each_kind_replays_its_own_example(tmp_path: Path) -> None:
    broken = ADD_SPEC + "Example({a: [1, 2],\n"
    done, document = cts(tmp_path, "mutant-div-int32-truncates", {"div.mod.py": DIV_SPEC, "broken.mod.py": broken})
    assert done.returncode == 1 and document["verdict"] == "FAIL", done.stdout + done.stderr
    assert f"broken.mod.py:{ADD_SPEC.count(chr(10)) + 1}: not valid Python" in done.stderr  # listed though the verdict is FAIL
    failed = sorted(f["id"].split("::")[-1] for f in document["failures"])
    kinds = [f"general-{kind}" for kind in REQUIRED_KINDS] + ["dynamic_output_shape", "memory_domain"]
    assert failed == sorted(f"test_golden_example[div_2-{kind}]" for kind in kinds)  # never the first example
    scripts = sorted((tmp_path / "out" / "reproducers").glob("*.py"))
    assert len(scripts) == len(kinds)
    fixed_replays = 0
    for script in scripts:
        text = script.read_text()
        golden = ast.literal_eval(text.split("GOLDEN = ", 1)[1].split("\n", 1)[0])  # plain literals
        assert golden["case"] == "div_2" and golden["kind"] in {k.split("-")[0] for k in kinds}
        replay = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert replay.returncode == 1 and "GoldenMismatch" in replay.stderr, (script.name, replay.stderr[-2000:])
        assert "(div_2)" in replay.stderr  # its own example, by name
        if golden["kind"] == "general" and golden["memory_kind"] == "ashmem":  # one replay on a fixed driver is enough
            fixed = script.with_name("fixed_" + script.name)
            fixed.write_text(text.replace("DRIVER = 'mutant-div-int32-truncates'", "DRIVER = 'reference'"))
            again = subprocess.run([sys.executable, str(fixed)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
            assert again.returncode == 0 and "now passes" in again.stdout, again.stderr[-2000:]
            fixed_replays += 1
    assert fixed_replays == 1
