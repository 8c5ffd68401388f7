"""The spec-file loader: each DSL feature on a small spec of our own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.api.hal import OperandLifeTime, OperandType, OperationType
from harness.cts.corpus import load_corpus, to_golden
from harness.cts.dsl import SpecError, run_spec

ADD = '''
i1 = Input("a", "TENSOR_FLOAT32", "{1, 2, 2, 1}")
i2 = Input("b", ("TENSOR_FLOAT32", [1]))
act = Int32Scalar("act", 0)
o1 = Output("out", "TENSOR_FLOAT32", "{1, 2, 2, 1}")
Model().Operation("ADD", i1, i2, act).To(o1)
'''


def _cases(tmp_path, source: str, name: str = "spec.mod.py"):
    path = tmp_path / name
    path.write_text(source)
    return run_spec(str(path))


def _by_variations(cases):
    return {c.variations: c for c in cases}


def test_operands_in_both_declaration_forms_and_lifetime_variations(tmp_path) -> None:
    cases = _cases(tmp_path, ADD + 'Example({i1: [1, 2, 3, 4], i2: [0.5], o1: [1.5, 2.5, 3.5, 4.5]})\n')
    by = _by_variations(cases)
    # a single-operation model also runs with every input made internal (CTS's lifetime variations)
    assert set(by) == {(), ("all_inputs_as_internal",)}  # no tensor parameter: no "all tensors as inputs"
    plain = to_golden(str(tmp_path / "spec.mod.py"), by[()])
    assert [o.type for o in plain.main.operands] == [OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT32,
                                                    OperandType.INT32, OperandType.TENSOR_FLOAT32]
    assert plain.main.operands[1].dimensions == (1,)
    assert plain.main.operands[2].lifetime == OperandLifeTime.CONSTANT_COPY
    np.testing.assert_array_equal(plain.inputs[0], np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1))
    internal = to_golden("spec", by[("all_inputs_as_internal",)])
    assert [op.type for op in internal.main.operations].count(OperationType.ADD) == 3  # a dummy ADD before each input


def test_retyping_quantizes_golden_values(tmp_path) -> None:
    source = ADD + '''
quant8 = DataTypeConverter().Identify({i1: ("TENSOR_QUANT8_ASYMM", 0.5, 100), i2: ("TENSOR_QUANT8_ASYMM", 0.5, 100),
                                       o1: ("TENSOR_QUANT8_ASYMM", 0.25, 10)})
Example({i1: [1, 2, 3, 4], i2: [0.5], o1: [1.5, 2.5, 3.5, 4.5]}).AddVariations(quant8, "float16", "relaxed")
'''
    by = _by_variations(_cases(tmp_path, source))
    quantized = to_golden("spec", by[("quant8",)])
    np.testing.assert_array_equal(quantized.inputs[0].reshape(-1), [102, 104, 106, 108])  # v / 0.5 + 100
    np.testing.assert_array_equal(quantized.outputs[0].reshape(-1), [16, 20, 24, 28])  # v / 0.25 + 10
    assert quantized.main.operands[3].scale == 0.25 and quantized.main.operands[3].zero_point == 10
    assert to_golden("spec", by[("float16",)]).main.operands[0].type == OperandType.TENSOR_FLOAT16
    assert by[("relaxed",)].relaxed and not by[()].relaxed


def test_layout_activation_and_parameter_as_input(tmp_path) -> None:
    source = '''
layout = BoolScalar("layout", False)
i1 = Input("in", "TENSOR_FLOAT32", "{1, 1, 2, 2}")
f1 = Parameter("filter", "TENSOR_FLOAT32", "{2, 1, 1, 2}", [1, 0, 0, 1])
b1 = Parameter("bias", "TENSOR_FLOAT32", "{2}", [0, 0])
act = Int32Scalar("act", 0)
o1 = Output("out", "TENSOR_FLOAT32", "{1, 1, 2, 2}")
Model().Operation("CONV_2D", i1, f1, b1, 2, 1, 1, act, layout).To(o1)
Example({i1: [-2, 3, 4, -5], o1: [-2, 3, 4, -5]}).AddNchw(i1, o1, layout).AddAllActivations(o1, act).AddInput(f1, b1)
'''
    cases = _cases(tmp_path, source)
    by = _by_variations(cases)
    nchw = to_golden("spec", by[("nchw", "relu6", "as_input")])
    assert nchw.main.operands[0].dimensions == (1, 2, 1, 2)  # NHWC (1, 1, 2, 2) transposed
    np.testing.assert_array_equal(nchw.inputs[0].reshape(-1), [-2, 4, 3, -5])
    np.testing.assert_array_equal(nchw.outputs[0].reshape(-1), [0, 4, 3, 0])  # RELU6 applied to the golden output
    assert len(nchw.main.input_indexes) == 3  # the filter and the bias became inputs
    layout_operand = next(o for o in nchw.main.operands if o.type == OperandType.BOOL)
    assert nchw.operand_values[layout_operand.location.offset] == 1
    assert by[("nhwc", "relu1", "as_input")].main.operands[6].value == (2,)  # the activation code set to RELU1
    # layouts x activations x (as-input with the inputs-as-internal pair, since no constant tensor is left
    # for "all tensors as inputs"; or constants with both lifetime variations, four combinations)
    assert len(cases) == 2 * 4 * (2 + 4)


def test_operand_lists_and_a_seeded_random_of_the_files_own(tmp_path) -> None:
    # CTS files write AddNchw([i, o], [layout]) as well as AddNchw(i, o, layout), and build golden data
    # with `import random; random.seed(0)`
    source = '''
import random
random.seed(0)
layout = BoolScalar("layout", False)
i1 = Input("in", "TENSOR_FLOAT32", "{1, 1, 2, 2}")
f1 = Parameter("filter", "TENSOR_FLOAT32", "{2, 1, 1, 2}", [1, 0, 0, 1])
b1 = Parameter("bias", "TENSOR_FLOAT32", "{2}", [0, 0])
o1 = Output("out", "TENSOR_FLOAT32", "{1, 1, 2, 2}")
Model().Operation("CONV_2D", i1, f1, b1, 2, 1, 1, 0, layout).To(o1)
values = [-2, 3, 4, -5]
random.shuffle(values)
Example({i1: values, o1: values}).AddNchw([i1, o1], [layout], defaultName="nhwc").AddInput([f1, b1])
'''
    outer = random.getstate()
    first = _by_variations(_cases(tmp_path, source))
    assert random.getstate() == outer  # the file's generator is its own
    again = _by_variations(_cases(tmp_path, source))
    assert set(first) >= {("nhwc", "as_input"), ("nchw", "as_input")}
    nchw = to_golden("spec", first[("nchw", "as_input")])
    assert nchw.main.operands[0].dimensions == (1, 2, 1, 2) and len(nchw.main.input_indexes) == 3
    np.testing.assert_array_equal(to_golden("spec", first[("nhwc",)]).inputs[0],
                                  to_golden("spec", again[("nhwc",)]).inputs[0])  # seeded: the same every load


def test_per_channel_internal_and_ignored_outputs(tmp_path) -> None:
    source = '''
i1 = Input("in", "TENSOR_QUANT8_ASYMM", "{1, 1, 1, 2}, 1.0f, 0")
f1 = Parameter("filter", "TENSOR_QUANT8_SYMM_PER_CHANNEL", "{2, 1, 1, 2}, 0.0f, 0", [2, 2, 4, -4],
               extraParams=SymmPerChannelQuantParams(channelDim=0, scales=[0.5, 0.25]))
b1 = Parameter("bias", "TENSOR_INT32", "{2}", [0, 0])
t = Internal("t", "TENSOR_QUANT8_ASYMM", "{1, 1, 1, 2}, 1.0f, 10")
o1 = Output("out", "TENSOR_QUANT8_ASYMM", "{1, 1, 1, 2}, 1.0f, 10")
o2 = IgnoredOutput("other", "TENSOR_QUANT8_ASYMM", "{1, 1, 1, 2}, 1.0f, 10")
Model().Operation("CONV_2D", i1, f1, b1, 2, 1, 1, 0).To(t).Operation("RELU", t).To(o1).Operation("RELU1", t).To(o2)
Example({i1: [2, 4], o1: [16, 10], o2: [0, 0]})
'''
    (case,) = _cases(tmp_path, source)
    golden = to_golden("spec", case)
    channel = golden.main.operands[1].channel_quant
    assert channel is not None and channel.scales == (0.5, 0.25) and channel.channel_dim == 0
    internal = [o for o in golden.main.operands if o.lifetime == OperandLifeTime.TEMPORARY_VARIABLE]
    assert [(o.type, o.zero_point) for o in internal] == [(OperandType.TENSOR_QUANT8_ASYMM, 10)]
    assert golden.ignored == (False, True)


def test_referenced_subgraphs_are_representable(tmp_path) -> None:
    source = '''
x = Input("x", "TENSOR_FLOAT32", "{1}")
y = Output("y", "TENSOR_FLOAT32", "{1}")
then_model = Model().Operation("RELU", x).To(y)
else_model = Model().Operation("RELU6", x).To(y)
c = Input("c", "TENSOR_BOOL8", "{1}")
i = Input("i", "TENSOR_FLOAT32", "{1}")
o = Output("o", "TENSOR_FLOAT32", "{1}")
main = Model().Operation("IF", c, then_model, else_model, i).To(o)
Example({c: [True], i: [-1.0], o: [0.0]}, model=main).DisableLifeTimeVariation()
'''
    (case,) = _cases(tmp_path, source)
    golden = to_golden("spec", case)
    assert [op.type for op in golden.main.operations] == [OperationType.IF]
    references = [o for o in golden.main.operands if o.lifetime == OperandLifeTime.SUBGRAPH]
    assert [o.location.offset for o in references] == [0, 1] and len(golden.referenced) == 2
    assert golden.referenced[1].operations[0].type == OperationType.RELU6
    assert golden.inputs[0].dtype == np.uint8 and golden.inputs[0].tolist() == [1]


@pytest.mark.parametrize("source, line, words", [
    ("x = Input('x', 'TENSOR_FLOAT32', '{1}')\ny = (\n", 2, "not valid Python"),
    ("x = 1\ny = ().__class__\n", 2, "__class__"),
    ("x = 1\n\nz = Unknown()\n", 3, "NameError"),  # the exception type, not Python's wording
    ("import os\n", 1, "may import only"),
])
def test_a_broken_spec_names_its_line(tmp_path, source, line, words) -> None:
    path = tmp_path / "broken.mod.py"
    path.write_text(source)
    with pytest.raises(SpecError) as caught:
        run_spec(str(path))
    assert f"broken.mod.py:{line}:" in str(caught.value) and words in str(caught.value)


def test_a_corpus_counts_what_it_cannot_express(tmp_path) -> None:
    (tmp_path / "good.mod.py").write_text(ADD + 'Example({i1: [1, 2, 3, 4], i2: [1], o1: [2, 3, 4, 5]})\n')
    (tmp_path / "bad.mod.py").write_text(ADD + 'Example({i1: [1, 2, 3, 4], o1: [2, 3, 4, 5]})\n')  # no value for b
    (tmp_path / "later.mod.py").write_text(ADD.replace('"ADD"', '"NOT_IN_HAL_1_3"') +
                                           'Example({i1: [1, 2, 3, 4], i2: [1], o1: [2, 3, 4, 5]})\n')
    corpus = load_corpus([str(tmp_path)])
    assert corpus.files == 3 and len(corpus.cases) == 2
    unreadable = [u for u in corpus.unexpressed if not u.outside]
    assert len(unreadable) == 1 and "bad.mod.py" in unreadable[0].reason and unreadable[0].line > 0
    outside = [u for u in corpus.unexpressed if u.outside]
    assert outside and all(u.outside == ("NOT_IN_HAL_1_3",) and "later.mod.py" in u.path for u in outside)
