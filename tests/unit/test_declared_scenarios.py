"""CHOICE-5: scenarios use only what the driver declares.  Whatever subset of operations and operand
types a driver declares, and whichever types some operations take as their own, every model the
strategies build for it (the memory-pool and request suites' models, the memory-domain models and
their dynamic-shape producer) is made of declared operations, each on types it takes: a model the
driver cannot take is no example of anything, and its refusal would fail a correct driver."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType
from harness.judging.scenario import Scenario
from harness.strategies import scenarios
from harness.strategies.domains import declared_flavor, domain_flavors, dynamic_producer
from harness.strategies.models import ModelCase, buildable_families, parameter_input_models, several_output_cases
from reference_driver import ReferenceDevice

#: Every operand type the harness's models are made of, scalars included.
_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32,
          OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
          OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandType.INT32, OperandType.BOOL)
_REFERENCE = ReferenceDevice().capabilities()
_OPERATIONS = tuple(sorted(_REFERENCE.operations))


@st.composite
def _declarations(draw) -> Capabilities:
    """The reference's capabilities less a few operations and types (most subsets that matter
    leave out one or two: the companion a model needs besides its data type)."""
    dropped_types = draw(st.sets(st.sampled_from(_TYPES), max_size=4), label="types left out")
    dropped_ops = draw(st.sets(st.sampled_from(_OPERATIONS), max_size=len(_OPERATIONS) - 1), label="operations left out")
    # some of the types left out, taken back by a few operations as their own
    own = draw(st.lists(st.tuples(st.sampled_from(_OPERATIONS), st.frozensets(st.sampled_from(sorted(dropped_types)))),
                        max_size=6, unique_by=lambda pair: pair[0]), label="operations' own types") if dropped_types else []
    return dataclasses.replace(_REFERENCE, operations=frozenset(_REFERENCE.operations - dropped_ops),
                               operand_types=frozenset(_REFERENCE.operand_types - dropped_types),
                               operation_types=tuple(own))


def _assert_declared(made: Scenario | ModelCase, caps: Capabilities, what: str) -> None:
    subgraph, label = made.subgraph, (made.label if isinstance(made, ModelCase) else ", ".join(made.notes))
    ops = {operation.type for operation in subgraph.operations}
    assert ops <= caps.operations, f"{what} ({label}): undeclared operations " \
                                   f"{sorted(o.name for o in ops - caps.operations)}"
    for operation in subgraph.operations:
        types = {subgraph.operands[i].type for i in (*operation.inputs, *operation.outputs)}
        taken = caps.types_of(operation.type)
        assert types <= taken, f"{what} ({label}): {operation.type.name} on undeclared types " \
                               f"{sorted(t.name for t in types - taken)}"


def _declared(caps: Capabilities) -> str:
    own = {op.name: sorted(t.name for t in types) for op, types in caps.operation_types}
    return f"declared: {sorted(o.name for o in caps.operations)}; {sorted(t.name for t in caps.operand_types)}; own: {own}"


_SETTINGS = settings(max_examples=150, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


@_SETTINGS
@given(caps=_declarations(), data=st.data())
def test_generated_models_use_only_declared_operations_and_types(caps: Capabilities, data: st.DataObject) -> None:
    families = buildable_families(caps)
    note(f"{_declared(caps)}; buildable: {families}")
    if not families:
        return  # nothing to build: the suites say not-applicable (acceptance/test_capability_subsets.py)
    family = data.draw(st.sampled_from(("", *families)), label="family")
    _assert_declared(data.draw(scenarios(caps, family=family, allow_insufficient=False), label="scenario"), caps,
                     f"a {family or 'any'} model")
    _assert_declared(data.draw(several_output_cases(caps), label="several outputs"), caps, "a model of several outputs")


@_SETTINGS
@given(caps=_declarations(), data=st.data())
def test_parameter_input_models_use_only_declared_operations_and_types(caps: Capabilities, data: st.DataObject) -> None:
    strategy = parameter_input_models(caps)
    note(_declared(caps))
    if strategy.is_empty:
        return
    _assert_declared(data.draw(strategy, label="model"), caps, "a model with a parameter as an input")


@_SETTINGS
@given(caps=_declarations(), data=st.data())
def test_memory_domain_models_use_only_declared_operations_and_types(caps: Capabilities, data: st.DataObject) -> None:
    found = declared_flavor(caps)
    note(f"{_declared(caps)}; flavour: {found}")
    if found is None:
        return  # the memory-domain suite is not applicable: conftest.flavor
    flavor = data.draw(domain_flavors(caps), label="flavour")
    for model in (flavor.model((2, 2)), flavor.model((2, 2), outputs=2), flavor.model((2, 2), scalar_input=True),
                  dynamic_producer(caps, flavor)):
        _assert_declared(model, caps, "a memory-domain model")


def test_the_declarations_drawn_reach_the_companion_types() -> None:
    """The subsets above include the ones that matter: RESHAPE declared without TENSOR_INT32, and
    element-wise arithmetic without the INT32 scalar of its activation."""
    reshape_alone = dataclasses.replace(_REFERENCE, operand_types=_REFERENCE.operand_types - {OperandType.TENSOR_INT32})
    no_scalars = dataclasses.replace(_REFERENCE, operand_types=_REFERENCE.operand_types - {OperandType.INT32})
    assert OperationType.RESHAPE in reshape_alone.operations and "reshape" not in buildable_families(reshape_alone)
    # every family whose operations take an INT32 scalar (a fused activation, an axis, a padding) is out;
    # the activations, functions, comparisons, SELECT and conversions take none (ELU's alpha is FLOAT32)
    scalar_free = {"activation", "prelu", "unary_function", "binary_function", "comparison", "logical", "select", "conversion",
                   # and the shape operations whose parameters are all TENSOR_INT32 (PAD, TRANSPOSE, SLICE, TILE,
                   # SQUEEZE, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND; PAD_V2's float pad values)
                   "pad", "transpose", "slice", "tile", "rank_change", "space_batch", "chained",
                   "reduction", "fill",  # the REDUCE_ operations' keep_dims is a BOOL; a float FILL's value a float
                   "instance_normalization",  # its gamma, beta and epsilon are floats, its layout a BOOL
                   "embedding_lookup", "hashtable_lookup",  # lookups and keys are TENSOR_INT32 tensors
                   "quantized_16bit_lstm",  # its 15 inputs are all tensors
                   "axis_aligned_bbox_transform", "heatmap_max_keypoint"}  # tensors, and the keypoints' layout a BOOL
    assert set(buildable_families(no_scalars)) == {"relu", "reshape"} | scalar_free
    assert declared_flavor(no_scalars) is None


def test_a_type_an_operation_takes_as_its_own_is_drawn_in_its_models_only() -> None:
    """TENSOR_QUANT8_ASYMM declared for QUANTIZE and DEQUANTIZE alone: their models hold it, no
    other operation's does."""
    quant8 = OperandType.TENSOR_QUANT8_ASYMM
    caps = dataclasses.replace(_REFERENCE, operand_types=_REFERENCE.operand_types - {quant8},
                               operation_types=((OperationType.QUANTIZE, frozenset({quant8})),
                                                (OperationType.DEQUANTIZE, frozenset({quant8}))))
    seen: set[OperationType] = set()

    # Derandomized: whether 200 draws reach both operations on the declared type is the strategy's
    # property, not a matter of the run's seed (at random, one run in a few drew no DEQUANTIZE on it).
    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        made = data.draw(scenarios(caps, family=data.draw(st.sampled_from(("conversion", "conversion", "elementwise", "")))))
        _assert_declared(made, caps, "a model")
        seen.update(operation.type for operation in made.subgraph.operations
                    if quant8 in {made.subgraph.operands[i].type for i in (*operation.inputs, *operation.outputs)})

    draw()
    assert seen == {OperationType.QUANTIZE, OperationType.DEQUANTIZE}
