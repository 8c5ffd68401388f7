"""What AOSP's whole Android 11 corpus needs of the loader, each on a small spec of our own: omitted
optional operands, ShouldNeverBeInternal, the modules spec files import, hidden per-channel
parameters, IF/WHILE subgraphs re-typed with their models, Android's test names, constants in a
shared memory, and the lifetime variations of every operation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.api.hal import OperandLifeTime, OperationType
from harness.cts.check import GoldenTest, check_example
from harness.cts.corpus import load_corpus, to_golden
from harness.cts.criteria import multinomial_mismatch
from harness.cts.dsl import SpecError, run_spec
from harness.cts.kinds import GoldenKind
from harness.report.certificate import golden_coverage
from reference_driver import ReferenceDevice


def _cases(tmp_path, source: str, name: str = "spec.mod.py"):
    path = tmp_path / name
    path.write_text(source)
    return run_spec(str(path))


def _named(cases):
    return {c.name: c for c in cases}


OPTIONAL = '''
x = Input("x", "TENSOR_FLOAT32", "{2, 3}")
w = Input("w", "TENSOR_FLOAT32", "{3}")             # optional: omitted in the example
p = Parameter("p", ("TENSOR_FLOAT32", [3]), value=None)  # an optional constant left out
e = Parameter("e", ("TENSOR_INT32", [2]), [])         # an empty one: left out too
o = Output("o", "TENSOR_FLOAT32", "{2, 3}")
Model().Operation("SVDF", x, w, p, e).To(o)  # (not its real signature: the loader does not check one)
Example(({x: [1, 2, 3, 4, 5, 6], w: []}, {o: [1, 2, 3, 4, 5, 6]}))
'''


def test_an_omitted_optional_operand_is_no_value(tmp_path) -> None:
    by = _named(_cases(tmp_path, OPTIONAL))
    golden = to_golden("spec", by["spec"])
    assert golden.inputs[0].shape == (2, 3) and golden.inputs[1] is None  # w: hasNoValue in the request
    lifetimes = [o.lifetime for o in golden.main.operands]
    assert lifetimes[2] == lifetimes[3] == OperandLifeTime.NO_VALUE
    # "all tensors as inputs" moves the empty constant (an omitted input then), not the one with no value
    # (as Android's generator); "all inputs as internal" makes x internal, not the omitted w
    assert set(by) == {"spec", "spec_all_inputs_as_internal", "spec_all_tensors_as_inputs",
                       "spec_all_tensors_as_inputs_all_inputs_as_internal"}
    moved = to_golden("spec", by["spec_all_tensors_as_inputs"])
    assert moved.inputs[2] is None and moved.main.operands[2].lifetime == OperandLifeTime.NO_VALUE
    internal = to_golden("spec", by["spec_all_inputs_as_internal"])
    assert [op.type for op in internal.main.operations].count(OperationType.ADD) == 1
    assert internal.inputs[0] is None and internal.inputs[1].shape == (2, 3)  # w, then x's new input


def test_should_never_be_internal_keeps_a_constant_an_input(tmp_path) -> None:
    source = '''
h = Parameter("hash", "TENSOR_FLOAT32", "{2, 2}", [0.5, -1.0, 2.0, 0.25]).ShouldNeverBeInternal()
x = Input("x", "TENSOR_FLOAT32", "{2}")
o = Output("o", "TENSOR_INT32", "{2}")
Model().Operation("HASHING", h, x).To(o)
Example({x: [1, 2], o: [0, 1]})
'''
    by = _named(_cases(tmp_path, source))
    assert set(by) == {"spec", "spec_all_tensors_as_inputs", "spec_all_inputs_as_internal",
                       "spec_all_tensors_as_inputs_all_inputs_as_internal"}
    both = by["spec_all_tensors_as_inputs_all_inputs_as_internal"].main
    adds = [op for op in both.operations if op.type == "ADD"]
    assert len(adds) == 1  # x made internal, the hash (an input now) never
    assert both.operands[0].kind == "input" and both.operands[0].value == (0.5, -1.0, 2.0, 0.25)


def test_the_modules_spec_files_import(tmp_path) -> None:
    source = '''
import collections
import copy
import sys
import random
import numpy as np

Case = collections.namedtuple("Case", ["values", "expected"])
generator = random.Random(7)
values = [generator.randint(-5, 5) for _ in range(4)]
case = Case(values, [max(v, 0) for v in values])
x = Input("x", "TENSOR_FLOAT32", "{4}")
o = Output("o", "TENSOR_FLOAT32", "{4}")
Model().Operation("RELU", x).To(o)
base = {x: case.values, o: case.expected}
for shift in range(2):
    feed = copy.deepcopy(base)  # keys the same operands
    feed[x] = [v + shift for v in case.values]
    feed[o] = [max(v + shift, 0) for v in case.values]
    Example(feed, name="shift%d" % shift if sys.maxsize > 0 else "")
'''
    outer = random.getstate()
    cases = _named(_cases(tmp_path, source))
    assert random.getstate() == outer
    expected = random.Random(7)
    values = [expected.randint(-5, 5) for _ in range(4)]
    assert cases["spec_shift1"].main.operands[0].value == tuple(v + 1 for v in values)


@pytest.mark.parametrize("source, words", [
    ("import os\n", "may import only"),
    ("import sys\nsys.modules\n", "AttributeError"),
    ("import copy\ncopy.sys\n", "AttributeError"),
    ("from random import seed\nseed.__self__\n", "'__self__'"),
])
def test_imports_reach_no_further_than_data(tmp_path, source, words) -> None:
    path = tmp_path / "broken.mod.py"
    path.write_text(source)
    with pytest.raises(SpecError, match=words):
        run_spec(str(path))


HIDDEN = '''
i = Input("in", "TENSOR_FLOAT32", "{1, 1, 1, 2}")
f = Parameter("f", "TENSOR_FLOAT32", "{2, 1, 1, 2}", [1, 2, 3, 4])
b = Parameter("b", "TENSOR_FLOAT32", "{2}", [0.5, 1])
o = Output("o", "TENSOR_FLOAT32", "{1, 1, 1, 2}")
Model().Operation("CONV_2D", i, f, b, 0, 0, 0, 0, 1, 1, 0).To(o)
per_channel = DataTypeConverter().Identify({
    i: ("TENSOR_QUANT8_ASYMM", 0.5, 0),
    f: ("TENSOR_QUANT8_SYMM_PER_CHANNEL", 0, 0, SymmPerChannelQuantParams(channelDim=0, scales=[0.5, 0.25])),
    b: ("TENSOR_INT32", 0.0, 0, SymmPerChannelQuantParams(channelDim=0, scales=[0.25, 0.125], hide=True)),
    o: ("TENSOR_QUANT8_ASYMM", 0.5, 0),
})
Example({i: [1, 2], o: [5.5, 12]}).AddVariations(per_channel)
'''


def test_a_hidden_per_channel_parameter_converts_values_and_is_left_out(tmp_path) -> None:
    by = _named(_cases(tmp_path, HIDDEN))
    case = by["spec_channelQuant8"]
    golden = to_golden("spec", case)
    bias = case.main.operands[2]
    assert bias.type == "TENSOR_INT32" and bias.scale == 0.0 and bias.channel_quant is None
    assert bias.value == (2, 8)  # 0.5 / 0.25, 1 / 0.125: converted with the hidden scales
    assert golden.main.operands[2].channel_quant is None
    assert golden.main.operands[1].channel_quant.scales == (0.5, 0.25)
    check_example(ReferenceDevice(), GoldenTest(golden, GoldenKind.GENERAL, "ashmem"))  # a valid model, as Android's


IF_SPEC = '''
Value = ["TENSOR_FLOAT32", [2]]
def Branch(operation):
    y = Input("y", Value)
    z = Output("z", Value)
    return Model().Operation(operation, y, [10.0], 0).To(z)

for shared in [False, True]:
    Configuration.use_shm_for_weights = shared
    c = Input("c", ["TENSOR_BOOL8", [1]])
    y = Input("y", Value)
    z = Output("z", Value)
    then_model, else_model = Branch("ADD"), Branch("SUB")
    Model().Operation("IF", c, then_model, else_model, y).To(z)
    quant8 = DataTypeConverter("quant8", scale=0.5, zeroPoint=100)
    example = Example({c: [True], y: [1, 2], z: [11, 12]}, name="true")
    example.AddVariations("float16", quant8)
    example.AddVariations(AllOutputsAsInternalCoverter())
'''


def test_if_branches_are_retyped_with_their_model_and_named_as_android_names_them(tmp_path) -> None:
    cases = _cases(tmp_path, IF_SPEC)
    names = [c.name for c in cases]
    first = ["spec_true", "spec_true_all_inputs_as_internal", "spec_true_all_outputs_as_internal",
             "spec_true_float16", "spec_true_float16_all_inputs_as_internal", "spec_true_float16_all_outputs_as_internal",
             "spec_true_quant8", "spec_true_quant8_all_inputs_as_internal", "spec_true_quant8_all_outputs_as_internal"]
    assert names == first + [n + "_2" for n in first]  # the second loop's: numbered as Android numbers them
    by = _named(cases)
    quant8 = by["spec_true_quant8"]
    assert [g.operands[1].type for g in quant8.referenced] == ["TENSOR_QUANT8_ASYMM"] * 2  # the branches' [10.0]
    assert [g.operands[1].value for g in quant8.referenced] == [(120,), (120,)]  # 10 / 0.5 + 100
    assert quant8.main.operands[3].value == (102, 104)  # y, quantized
    assert [o.subgraph for o in quant8.main.operands if o.kind == "subgraph"] == [0, 1]
    # the second loop's constants are in a shared memory (CONSTANT_REFERENCE), the first's copied
    assert not any(o.reference for g in by["spec_true"].referenced for o in g.operands)
    shared = to_golden("spec", by["spec_true_2"])
    assert all(g.operands[1].lifetime == OperandLifeTime.CONSTANT_REFERENCE for g in shared.referenced)
    assert shared.pool and not shared.operand_values
    with shared.open_model() as model:
        assert len(model.pools) == 1 and model.pools[0].read()[:len(shared.pool)] == shared.pool
    internal = by["spec_true_all_outputs_as_internal"].main
    assert [op.type for op in internal.operations] == ["IF", "ADD"] and internal.operands[internal.outputs[0]].name == "z_new"


def test_constants_in_a_shared_memory_run_on_the_reference(tmp_path) -> None:
    source = '''
Configuration.use_shm_for_weights = True
x = Input("x", "TENSOR_FLOAT32", "{2}")
o = Output("o", "TENSOR_FLOAT32", "{2}")
Model().Operation("ADD", x, Parameter("k", "TENSOR_FLOAT32", "{2}", [1, 2]), 0).To(o)
Example({x: [1, 1], o: [2, 3]})
'''
    by = _named(_cases(tmp_path, source))
    golden = to_golden("spec", by["spec"])
    assert golden.main.operands[1].lifetime == OperandLifeTime.CONSTANT_REFERENCE
    for kind in (GoldenKind.GENERAL, GoldenKind.DYNAMIC_OUTPUT_SHAPE, GoldenKind.MEMORY_DOMAIN):
        check_example(ReferenceDevice(), GoldenTest(golden, kind, "ashmem" if kind is GoldenKind.GENERAL else ""))
    # "all tensors as inputs" moves it to the request (the scalar stays in the pool)
    moved = to_golden("spec", by["spec_all_tensors_as_inputs"])
    assert moved.main.operands[1].lifetime == OperandLifeTime.SUBGRAPH_INPUT and moved.inputs[1].tolist() == [1, 2]
    check_example(ReferenceDevice(), GoldenTest(moved, GoldenKind.GENERAL, "mmap_fd"))


WHILE_SPEC = '''
Counter = ["TENSOR_INT32", [1]]
def Condition():
    i = Input("i", Counter)
    n = Input("n", Counter)
    unused = Input("unused", ["TENSOR_FLOAT32", [1]])
    out = Output("out", ["TENSOR_BOOL8", [1]])
    model = Model()
    model.IdentifyInputs(i, n, unused)  # an input no operation reads
    model.IdentifyOutputs(out)
    return model.Operation("LESS", i, n)  .To(out)
def Body():
    i = Input("i", Counter)
    n = Input("n", Counter)
    unused = Input("unused", ["TENSOR_FLOAT32", [1]])
    i_out = Output("i_out", Counter)
    model = Model().IdentifyInputs(i, n, unused).IdentifyOutputs(i_out)
    return model.Operation("ADD", i, [1], 0).To(i_out)
n = Input("n", Counter)
f = Input("f", ["TENSOR_FLOAT32", [1]])
out = Output("out", Counter)
cond, body = SubgraphReference("cond", Condition()), SubgraphReference("body", Body())
Model().Operation("WHILE", cond, body, [0], n, f).To(out)  # the last model declared: the examples
Example({n: [3], f: [0.5], out: [3]}, name="count")
Example({n: [1], f: [0.5], out: [1]}, name="count")  # one model, one name, no variations: one example
'''


def test_while_with_identified_inputs_and_repeated_examples(tmp_path) -> None:
    cases = _cases(tmp_path, WHILE_SPEC)
    assert [c.name for c in cases] == ["spec_count", "spec_count_all_inputs_as_internal",
                                       "spec_count_2", "spec_count_all_inputs_as_internal_2"]
    assert [c.example for c in cases] == [0, 0, 1, 1]
    condition = cases[0].referenced[0]
    assert [condition.operands[i].name for i in condition.inputs] == ["i", "n", "unused"]
    golden = to_golden("spec", cases[2])
    assert golden.inputs[0].tolist() == [1] and [op.type for op in golden.main.operations] == [OperationType.WHILE]


@pytest.mark.parametrize("operation", ["RESHAPE", "MEAN", "PAD", "SQUEEZE", "STRIDED_SLICE", "TRANSPOSE", "ADD"])
def test_all_tensors_as_inputs_for_every_operation(tmp_path, operation) -> None:
    source = f'''
x = Input("x", "TENSOR_FLOAT32", "{{2, 2}}")
shape = Parameter("shape", "TENSOR_INT32", "{{1}}", [4])
o = Output("o", "TENSOR_FLOAT32", "{{4}}")
Model().Operation("{operation}", x, shape).To(o)
Example({{x: [1, 2, 3, 4], o: [1, 2, 3, 4]}})
'''
    by = _named(_cases(tmp_path, source))
    moved = by["spec_all_tensors_as_inputs"].main
    assert [moved.operands[i].name for i in moved.inputs] == ["x", "shape"]


def test_the_reference_passes_reshape_with_its_shape_as_an_input(tmp_path) -> None:
    (tmp_path / "reshape.mod.py").write_text('''
x = Input("x", "TENSOR_FLOAT32", "{2, 2}")
o = Output("o", "TENSOR_FLOAT32", "{4}")
Model().Operation("RESHAPE", x, [4]).To(o)
Example({x: [1, 2, 3, 4], o: [1, 2, 3, 4]})
''')
    (tmp_path / "reshape_param.mod.py").write_text('''
x = Input("x", "TENSOR_FLOAT32", "{2, 2}")
shape = Parameter("shape", "TENSOR_INT32", "{1}", [4])
o = Output("o", "TENSOR_FLOAT32", "{4}")
Model().Operation("RESHAPE", x, shape).To(o)
Example({x: [1, 2, 3, 4], o: [1, 2, 3, 4]})
''')
    corpus = load_corpus([str(tmp_path)])
    moved = [c for c in corpus.cases if "all_tensors_as_inputs" in c.id]
    assert [c.id for c in moved] == ["reshape_param_all_tensors_as_inputs", "reshape_param_all_tensors_as_inputs_all_inputs_as_internal"]
    for case in moved:
        for kind in (GoldenKind.GENERAL, GoldenKind.DYNAMIC_OUTPUT_SHAPE):
            check_example(ReferenceDevice(), GoldenTest(case, kind, "ashmem" if kind is GoldenKind.GENERAL else ""))


def test_random_multinomial_is_judged_by_its_distribution(tmp_path) -> None:
    source = '''
x = Input("x", "TENSOR_FLOAT32", "{1, 2}")
o = IgnoredOutput("o", "TENSOR_INT32", "{1, 100}")
Model().Operation("RANDOM_MULTINOMIAL", x, 100, Parameter("seeds", "TENSOR_INT32", "{2}", [1, 2])).To(o)
Example(({x: [0.0, 0.0]}, {o: []})).WithMultinomialDistributionTolerance(0.1).DisableLifeTimeVariation()
'''
    (case,) = _cases(tmp_path, source)
    assert case.tolerance == 0.1 and case.name == "spec"
    even = np.array([[0, 1] * 50])
    assert multinomial_mismatch(np.zeros((1, 2)), even, 0.1) is None
    assert "class 0 drawn 100 of 100" in multinomial_mismatch(np.zeros((1, 2)), np.zeros((1, 100)), 0.1)
    assert "class 2 drawn" in multinomial_mismatch(np.zeros((1, 2)), np.full((1, 100), 2), 0.1)


def test_the_coverage_table_counts_what_the_driver_reported_unsupported() -> None:
    coverage = [["ADD", "TENSOR_FLOAT32"]]

    def test(outcome: str, skip: dict | None = None) -> dict:
        return {"id": "t", "requirements": ["OPS-1"], "outcome": outcome, "skip": skip, "golden": {"coverage": coverage}}

    tests = [test("passed"), test("failed"),
             test("skipped", {"kind": "not-applicable", "capability": "operations", "reason": "reports it unsupported"}),
             test("skipped", {"kind": "not-applicable", "capability": "memory_domains", "reason": "no memory domains"})]
    assert golden_coverage(tests) == {"ADD": {"TENSOR_FLOAT32": {"passed": 1, "run": 2, "unsupported": 1}}}
