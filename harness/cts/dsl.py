"""The NNAPI test_generator DSL, executed by the harness itself.

An AOSP spec file (``*.mod.py``) is Python that declares operands (``Input``, ``Output``,
``Parameter``, ``Internal``, scalar and vector shorthands), models (``Model().Operation(...).To(...)``,
models passed to IF and WHILE as subgraphs) and examples (``Example({...})``) with variations
(relaxed, float16, int32 and quant8 re-typing, NCHW, axis moves, activations, lifetime variations).
`run_spec` executes one file in a namespace that holds only these names, a few harmless builtins
and the modules spec files import (``math``, ``itertools``, ``numpy``, ``random``, ``copy``,
``collections``, ``sys``: the last three reduced to what data-building code uses), and returns
the examples it declared, each expanded into its variations: plain data (`SpecCase`) with no
reference to the DSL objects.

The semantics follow ``tools/test_generator`` of AOSP's NeuralNetworks module (its README is the
user's guide), as Android 11 generates CTS and VTS tests from the same files:

- variation groups combine as a cartesian product, for each example's inputs in turn; re-typing
  dequantizes values from the old type and quantizes them to the new one (rounding half to even,
  as numpy does); a re-typing converter applies itself to the models an operation takes as
  operands (IF branches, WHILE bodies), and converters that cannot (layouts, axes, activations)
  refuse models that have any;
- single-operation models also get the "all tensors as inputs" and "all inputs as internal"
  variations (for every operation), unless the example disables them;
- examples of one model with the same name and no variations of their own are one example with
  several inputs; each test is named ``<spec>_<model>_<example>_<variations>`` and a name already
  given in the file gets ``_2``, ``_3``, ... (Android's own numbering), so a name is one example;
- a per-channel quantization declared with ``hide=True`` converts values but is not part of the
  operand (the bias of a per-channel convolution), an empty value (``[]``) is an omitted optional
  operand, and ``Configuration.use_shm_for_weights`` makes constants CONSTANT_REFERENCE.

What this module cannot express raises `SpecError` naming the file and line.
"""

from __future__ import annotations

import ast
import builtins
import collections
import copy
import itertools
import math
import os
import random
import re
import sys
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SpecCase", "SpecError", "SpecGraph", "SpecOperand", "SpecOperation", "run_spec"]


class SpecError(Exception):
    """A spec file the DSL cannot run, at ``line`` of ``path`` (0: the file as a whole)."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line = path, line


# --------------------------------------------------------------------------- the result: plain data


@dataclass(frozen=True)
class SpecOperand:
    name: str
    type: str  # the NNAPI type name, e.g. "TENSOR_QUANT8_ASYMM"
    dimensions: tuple[int, ...]
    scale: float
    zero_point: int
    kind: str  # "input", "output", "parameter", "internal" or "subgraph"
    value: tuple | None  # parameters: the constant (None or empty: omitted); inputs/outputs: this example's value
    channel_quant: tuple[tuple[float, ...], int] | None = None  # (scales, channel dimension)
    ignored: bool = False  # an IgnoredOutput: not compared
    subgraph: int = -1  # kind "subgraph": the index into SpecCase.referenced
    reference: bool = False  # a parameter declared with Configuration.use_shm_for_weights: CONSTANT_REFERENCE


@dataclass(frozen=True)
class SpecOperation:
    type: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class SpecGraph:
    operands: tuple[SpecOperand, ...]
    operations: tuple[SpecOperation, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class SpecCase:
    """One example of one spec file under one combination of variations."""

    spec: str  # the spec file's name, e.g. "conv2d_v1_2.mod.py"
    name: str  # the test name CTS gives it: spec, model, example name and variation names, numbered if repeated
    variations: tuple[str, ...]
    example: int  # which of the example's inputs (0-based)
    main: SpecGraph
    referenced: tuple[SpecGraph, ...]
    relaxed: bool
    expect_failure: bool
    dynamic_output_shape: bool  # False when the spec disables the dynamic output shape test
    line: int  # where the Example was declared
    version: str | None = None  # the HAL version that introduced it (None: relaxed, or not under V1_x)
    tolerance: float = 0.0  # RANDOM_MULTINOMIAL: the tolerance of its distribution (0: outputs compared)

    @property
    def operation_types(self) -> tuple[str, ...]:
        graphs = (self.main, *self.referenced)
        return tuple(sorted({o.type for g in graphs for o in g.operations}))


# --------------------------------------------------------------------------- declared operands


def _parse_legacy_shape(text: str) -> tuple[list[int], float, int]:
    """The old string form: ``"{1, 2, 2, 1}, 0.5f, 128"`` (scale and zero point optional)."""
    text = text.strip()
    if text in ("", "{}"):
        return [], 0.0, 0
    _before, _, rest = text.partition("{")
    dims_text, _, rest = rest.partition("}")
    dims = [int(d) for d in dims_text.split(",") if d.strip()]
    parts = [p.strip().rstrip("f") for p in rest.split(",") if p.strip()]
    scale = float(parts[0]) if parts else 0.0
    zero_point = int(float(parts[1])) if len(parts) > 1 else 0
    return dims, scale, zero_point


class SymmPerChannelQuantParams:
    """Per-channel scales.  ``hide``: the scales convert values, but the operand does not carry them
    (Android's generator leaves them out: the bias of a per-channel convolution is TENSOR_INT32)."""

    def __init__(self, channelDim: int, scales: Sequence[float], hide: bool = False) -> None:
        self.channelDim = int(channelDim)
        self.scales = [float(s) for s in scales]
        self.hide = bool(hide)

    def broadcast(self, dimensions: Sequence[int]) -> np.ndarray:
        shape = [1] * len(dimensions)
        shape[self.channelDim] = len(self.scales)
        return np.array(self.scales).reshape(shape)


@dataclass
class _Type:
    name: str
    dimensions: list[int]
    scale: float = 0.0
    zero_point: int = 0
    extra: SymmPerChannelQuantParams | None = None

    @property
    def is_float(self) -> bool:
        return self.name in ("FLOAT32", "FLOAT16", "TENSOR_FLOAT32", "TENSOR_FLOAT16")

    @property
    def is_scalar(self) -> bool:
        return not self.name.startswith("TENSOR_")

    @property
    def elements(self) -> int:
        return math.prod(self.dimensions)


def _make_type(op_type: Any, shape: Any = None, extra: Any = None) -> tuple[_Type, bool]:
    """A declared type, and whether the legacy string form was used (its value comes after)."""
    if isinstance(op_type, str):
        dims, scale, zero_point = _parse_legacy_shape(shape if isinstance(shape, str) else "")
        return _Type(op_type, dims, scale, zero_point, extra), True
    fields = list(op_type)
    name, dims = fields[0], list(fields[1]) if len(fields) > 1 else []
    scale = float(fields[2]) if len(fields) > 2 else 0.0
    zero_point = int(fields[3]) if len(fields) > 3 else 0
    return _Type(name, [int(d) for d in dims], scale, zero_point, extra), False


def _dequantize(v: Any, ty: _Type) -> Any:
    v -= ty.zero_point
    if ty.scale != 0:
        v *= ty.scale
    if ty.extra is not None:
        v *= ty.extra.broadcast(ty.dimensions)
    return v


_BOUNDS = {"TENSOR_QUANT8_ASYMM": (0, 255), "TENSOR_QUANT16_ASYMM": (0, 65535),
           "TENSOR_QUANT8_SYMM_PER_CHANNEL": (-127, 127), "TENSOR_QUANT8_ASYMM_SIGNED": (-128, 127)}


def _quantize(v: Any, ty: _Type) -> Any:
    if ty.scale != 0:
        v /= ty.scale
    if ty.extra is not None:
        v = v / ty.extra.broadcast(ty.dimensions)
    v += ty.zero_point
    if not ty.is_float:
        v = np.round(v)
        v = int(np.asarray(v).item()) if np.ndim(v) == 0 else v.astype(int)
    if ty.name in _BOUNDS:
        v = np.minimum(np.maximum(v, _BOUNDS[ty.name][0]), _BOUNDS[ty.name][1])
    elif ty.name == "UINT32":
        v = np.maximum(v, 0)
    return v


class Operand:
    """Any declared operand; subclasses say what it is in the model."""

    kind = "internal"

    def __init__(self, name: str, opType: Any, value: Any = None, backward: Any = None, skipRenaming: bool = False,
                 extraParams: Any = None) -> None:
        self.name = str(name)
        self.type, legacy = _make_type(opType, value, extraParams)
        self.set_value(backward if legacy else value)
        self.may_be_internal = True
        self.reference = False

    def set_value(self, value: Any) -> None:
        if value is None:
            self.value = None
        elif isinstance(value, (list, tuple)):
            self.value = list(value)
        elif isinstance(value, np.ndarray):
            self.value = value.flatten().tolist()
        else:
            self.value = [value]

    def ShouldNeverBeInternal(self) -> Operand:
        """Keep this operand out of the "all inputs as internal" variation (it stays a model input)."""
        self.may_be_internal = False
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # A declared operand is one operand of the file: a copy of a feed dict (``copy.deepcopy(input0)``)
    # keys the same operands, as Android's generator, whose operands are equal by their unique names.
    def __copy__(self) -> Operand:
        return self

    def __deepcopy__(self, memo: dict) -> Operand:
        return self


class Input(Operand):
    kind = "input"

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)


class Output(Operand):
    kind = "output"
    ignored = False

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)


class IgnoredOutput(Output):
    ignored = True


class Internal(Operand):
    kind = "internal"

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)


class Parameter(Operand):
    kind = "parameter"

    def __init__(self, name: str, opType: Any, value: Any = None, backward: Any = None, skipRenaming: bool = False,
                 extraParams: Any = None) -> None:
        super().__init__(name, opType, value, backward, skipRenaming, extraParams)
        # the lifetime is decided when the parameter is made, as Android's generator does
        self.reference = self.value is not None and _current().configuration.use_shm_for_weights


class Int32Scalar(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("INT32", []), int(value))


class Float16Scalar(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("FLOAT16", []), float(value))


class Float32Scalar(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("FLOAT32", []), float(value))


class BoolScalar(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("BOOL", []), bool(value))


class Int32Vector(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("TENSOR_INT32", [len(value)]), [int(v) for v in value])


class Float32Vector(Parameter):
    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name, ("TENSOR_FLOAT32", [len(value)]), [float(v) for v in value])


class SubgraphReference(Parameter):
    """A model passed as an operation input (the branches and bodies of IF and WHILE)."""

    kind = "subgraph"

    def __init__(self, name: str, model: Model) -> None:
        if not isinstance(model, Model):
            raise TypeError(f"SubgraphReference {name!r} needs a Model, not {type(model).__name__}")
        Operand.__init__(self, name, ("SUBGRAPH", []))
        self.model = model
        if model.name is None:  # as Android's generator: an unnamed model takes its reference's name
            model.name = name


def _implicit(value: Any) -> Operand:
    """Literal operation inputs: int, float, bool, lists of ints or floats (an empty list: of ints), models."""
    if isinstance(value, Operand):
        return value
    if isinstance(value, Model):
        return SubgraphReference("param", value)
    if type(value) is int:
        return Int32Scalar("param", value)
    if type(value) is float:
        return Float32Scalar("param", value)
    if type(value) is bool:
        return BoolScalar("param", value)
    if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        return Int32Vector("param", value)
    if isinstance(value, (list, tuple)) and all(type(v) is float for v in value):
        return Float32Vector("param", value)
    raise TypeError(f"{value!r} cannot be an implicit operation input")


# --------------------------------------------------------------------------- models


class Model:
    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.operations: list[tuple[str, list[Operand], list[Operand]]] = []
        self.operands: list[Operand] = []
        self.relaxed = False
        spec = _current()
        self.version: str | None = spec.version
        spec.models.append(self)

    def _use(self, operands: Iterable[Operand]) -> None:
        for operand in operands:
            if not isinstance(operand, Operand):
                raise TypeError(f"{operand!r} is not an operand")
            if not any(operand is o for o in self.operands):
                self.operands.append(operand)

    def Operation(self, op_name: str, *args: Any) -> Model:
        inputs = [_implicit(a) for a in args]
        self.operations.append((str(op_name), inputs, []))
        self._use(inputs)
        return self

    def To(self, *args: Any) -> Model:
        if not self.operations:
            raise TypeError("To() needs an Operation() before it")
        outs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        name, inputs, _ = self.operations[-1]
        self.operations[-1] = (name, inputs, outs)
        self._use(outs)
        return self

    def _identify(self, wanted: Sequence[Operand], cls: type, what: str) -> Model:
        self._use(wanted)
        found = [o for o in self.operands if isinstance(o, cls)]
        if len(found) != len(wanted) or any(a is not b for a, b in zip(found, wanted)):
            raise TypeError(f"the model's {what} are {found}, not {list(wanted)}")
        return self

    def IdentifyInputs(self, *args: Operand) -> Model:
        """Add the given inputs (those no operation uses, too) and check they are all the model's, in order."""
        return self._identify(args, Input, "inputs")

    def IdentifyOutputs(self, *args: Operand) -> Model:
        return self._identify(args, Output, "outputs")

    def RelaxedExecution(self, is_relaxed: bool) -> Model:
        self.relaxed = bool(is_relaxed)
        return self

    def IntroducedIn(self, version: str | None) -> Model:
        self.version = version
        return self

    def __repr__(self) -> str:
        return f"Model({self.name!r})"

    def __copy__(self) -> Model:
        return self

    def __deepcopy__(self, memo: dict) -> Model:
        return self


# --------------------------------------------------------------------------- variations


@dataclass
class _State:
    """One operand as a variation sees it: mutable copies of the declared fields.  ``source`` is the
    declared operand (what variations name); states a variation adds have a source of their own."""

    source: Any
    cls: type
    name: str
    type: _Type
    value: list | None
    may_be_internal: bool = True
    reference: bool = False
    subgraph: _Instance | None = None

    def as_array(self) -> np.ndarray:
        return np.array(self.value).reshape(self.type.dimensions)

    def set_array(self, value: np.ndarray) -> None:
        self.value = np.asarray(value).flatten().tolist()

    @property
    def is_input(self) -> bool:
        return issubclass(self.cls, Input)

    @property
    def is_output(self) -> bool:
        return issubclass(self.cls, Output)


@dataclass
class _Instance:
    """A model being varied (a copy of one `Model`): operand states, operations over them, the relaxed flag."""

    model: Model
    states: list[_State]
    operations: list[tuple[str, list[int], list[int]]]
    relaxed: bool

    def find(self, operand: Any) -> _State | None:
        return next((s for s in self.states if s.source is operand), None)

    def add(self, state: _State) -> int:
        self.states.append(state)
        return len(self.states) - 1

    @property
    def has_subgraphs(self) -> bool:
        return any(s.subgraph is not None for s in self.states)


class SkipVariation(Exception):
    pass


def _flat(items: Iterable[Any]) -> Iterable[Any]:
    """Operands in the order given; CTS files write both AddNchw(i, o, layout) and AddNchw([i, o], [layout])."""
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flat(item)
        else:
            yield item


class ModelVariation:
    default_name = ""
    supports_subgraphs = False

    def __init__(self, name: str | None = None) -> None:
        self.targets: dict[Any, Any] = {}
        self.name = name

    def Identify(self, operandArgs: Any = None, paramArgs: Any = None) -> ModelVariation:
        if operandArgs is not None:
            self.targets = dict(operandArgs) if isinstance(operandArgs, dict) else {o: None for o in _flat(operandArgs)}
        return self

    def auto_identify(self, instance: _Instance) -> None:
        pass

    def apply(self, instance: _Instance) -> None:
        if not self.supports_subgraphs and instance.has_subgraphs:
            raise TypeError(f"{type(self).__name__} cannot vary a model that has subgraphs (IF, WHILE)")
        if not self.targets:  # once identified, the targets stay (as in Android's generator)
            self.auto_identify(instance)
        for operand, argument in self.targets.items():
            state = instance.find(operand)
            if state is not None:
                self.transform(state, argument)
        self.transform_model(instance)

    def transform(self, state: _State, argument: Any) -> None:
        pass

    def transform_model(self, instance: _Instance) -> None:
        pass

    def final_name(self) -> str:
        return self.name if self.name is not None else self.default_name


class DefaultVariation(ModelVariation):
    supports_subgraphs = True


class DataTypeConverter(ModelVariation):
    """Re-type operands: those identified (with a type, or a converter for a subgraph operand), or
    with a target type ("float16", "int32", "quant8" and "quant8_signed" with ``scale`` and
    ``zeroPoint``) every TENSOR_FLOAT32 (and FLOAT32 but for quant8) operand and every subgraph."""

    supports_subgraphs = True
    _TARGETS = ("float16", "int32", "quant8", "quant8_signed")

    def __init__(self, targetType: str | None = None, name: str | None = None, scale: float | None = None,
                 zeroPoint: int | None = None) -> None:
        super().__init__(name)
        if targetType is not None and targetType.lower() not in self._TARGETS:
            raise TypeError(f"DataTypeConverter converts to {', '.join(self._TARGETS)}, not {targetType!r}")
        self.target_type = targetType
        self.scale, self.zero_point = scale, zeroPoint

    def auto_identify(self, instance: _Instance) -> None:
        if self.target_type is None:
            return
        wanted = self.target_type.lower()
        tensor: tuple[Any, ...]
        scalar: tuple[Any, ...] | None
        if wanted in ("quant8", "quant8_signed"):
            if self.scale is None or self.zero_point is None:
                raise TypeError(f"DataTypeConverter({wanted!r}) needs scale and zeroPoint")
            tensor = ("TENSOR_QUANT8_ASYMM" if wanted == "quant8" else "TENSOR_QUANT8_ASYMM_SIGNED", self.scale, self.zero_point)
            scalar = None
        else:
            tensor, scalar = ("TENSOR_" + wanted.upper(),), (wanted.upper(),)
        for state in instance.states:
            if state.subgraph is not None:
                self.targets[state.source] = DataTypeConverter(self.target_type, self.name, self.scale, self.zero_point)
            elif state.type.name == "TENSOR_FLOAT32":
                self.targets[state.source] = tensor
            elif state.type.name == "FLOAT32" and scalar is not None:
                self.targets[state.source] = scalar

    def final_name(self) -> str:
        if self.name is not None:
            return self.name
        if self.target_type is not None:
            return self.target_type.lower()
        kinds = {a if isinstance(a, str) else tuple(a)[0] for a in self.targets.values() if not isinstance(a, DataTypeConverter)}
        for type_name, label in (("TENSOR_QUANT8_SYMM_PER_CHANNEL", "channelQuant8"), ("TENSOR_QUANT8_ASYMM", "quant8"),
                                 ("TENSOR_QUANT8_ASYMM_SIGNED", "quant8_signed"), ("TENSOR_INT32", "int32"),
                                 ("TENSOR_FLOAT16", "float16")):
            if type_name in kinds:
                return label
        return "float32"

    def transform(self, state: _State, argument: Any) -> None:
        if isinstance(argument, DataTypeConverter):  # a subgraph operand: convert the model it names
            if state.subgraph is None:
                raise TypeError(f"{state.name}: a converter as the new type of an operand that names no model")
            argument.apply(state.subgraph)
            return
        if argument is None:  # identified by a list: the converter's own target type
            wanted = (self.target_type or "float32").upper()
            argument = wanted if state.type.is_scalar else "TENSOR_" + wanted
        fields = (argument,) if isinstance(argument, str) else tuple(argument)
        extra = fields[3] if len(fields) > 3 else None
        new_type = _Type(fields[0], list(state.type.dimensions), float(fields[1]) if len(fields) > 1 else 0.0,
                         int(fields[2]) if len(fields) > 2 else 0, extra)
        if not state.value or state.type.elements == 0:  # no value, an omitted one, or zero-sized
            state.type = new_type
            return
        real = _dequantize(state.as_array().astype(np.float32), state.type)
        state.type = new_type
        state.set_array(np.asarray(_quantize(real, new_type)))


class RelaxedModeConverter(ModelVariation):
    supports_subgraphs = True

    def __init__(self, isRelaxed: Any = True, name: str | None = None) -> None:
        super().__init__(name)
        self.relaxed = isRelaxed if isinstance(isRelaxed, bool) else True
        self.default_name = "relaxed" if self.relaxed else "float"

    def transform_model(self, instance: _Instance) -> None:
        instance.relaxed = self.relaxed


class DataLayoutConverter(ModelVariation):
    def __init__(self, targetLayout: str = "nchw", name: str | None = None) -> None:
        super().__init__(name)
        self.layout = targetLayout.lower()
        if self.layout not in ("nchw", "nhwc"):
            raise TypeError(f"a layout is nchw or nhwc, not {targetLayout!r}")
        self.perm = (0, 3, 1, 2) if self.layout == "nchw" else (0, 2, 3, 1)
        self.default_name = self.layout

    def transform(self, state: _State, argument: Any) -> None:
        if len(state.type.dimensions) == 4:
            if state.value and state.type.elements != 0:
                state.set_array(state.as_array().transpose(self.perm))
            # as Android's generator: the new type keeps no per-channel parameters
            state.type = _Type(state.type.name, [state.type.dimensions[i] for i in self.perm], state.type.scale,
                               state.type.zero_point)
        elif len(state.type.dimensions) == 1 and state.value is not None and len(state.value) == 4:
            state.set_array(state.as_array()[list(self.perm)])
        elif state.type.name == "BOOL":
            state.value = [self.layout == "nchw"]
        else:
            raise TypeError(f"{state.name}: a DataLayoutConverter moves only 4-D tensors, 4-element vectors and the layout flag")


class AxisConverter(ModelVariation):
    def __init__(self, origin: int, target: int, dim: int, drop: Any = (), name: str | None = None) -> None:
        super().__init__(name)
        if not all(-dim <= a < dim for a in (origin, target)):
            raise TypeError(f"axes {origin} and {target} are out of range for rank {dim}")
        self.origin, self.target, self.dim = origin, target, dim
        self.perm = list(range(dim))
        self.perm.insert(target if target >= 0 else target + dim, self.perm.pop(origin))
        drops = [drop] if isinstance(drop, int) else list(drop)
        self.drop = [d if d >= 0 else d + dim for d in drops]
        positive = target if target >= 0 else target + dim
        axis = positive - sum(d < positive for d in self.drop)
        self.default_name = f"dim{dim - len(self.drop)}_axis{axis}{'' if target >= 0 else '_neg'}"

    def transform(self, state: _State, argument: Any) -> None:
        if state.type.name == "INT32":
            value = self.target
            if value >= 0:
                value -= sum(d < value for d in self.drop)
            else:
                value += sum(d > value + self.dim for d in self.drop)
            state.value = [value]
            return
        if len(state.type.dimensions) != self.dim:
            raise TypeError(f"{state.name}: an AxisConverter for rank {self.dim} given rank {len(state.type.dimensions)}")
        dims = [state.type.dimensions[i] for i in self.perm]
        array = state.as_array().transpose(self.perm) if state.value is not None else None
        for d in sorted(self.drop, reverse=True):
            if array is not None:
                array = np.take(array, 0, axis=d)
        dims = [dims[i] for i in range(self.dim) if i not in self.drop]
        state.type = _Type(state.type.name, dims, state.type.scale, state.type.zero_point)
        if array is not None:
            state.set_array(array)


class ActivationConverter(ModelVariation):
    _CODES = {"none": (0, None, None), "relu": (1, 0.0, None), "relu1": (2, -1.0, 1.0), "relu6": (3, 0.0, 6.0)}

    def __init__(self, act: str = "relu", name: str | None = None) -> None:
        super().__init__(name)
        self.act = act.lower()
        self.code, self.low, self.high = self._CODES[self.act]
        self.default_name = self.act

    def transform(self, state: _State, argument: Any) -> None:
        if state.type.name == "INT32":
            state.value = [self.code]
            return
        value = state.as_array()
        if self.low is not None:
            value = np.maximum(value, _quantize(self.low, state.type))
        if self.high is not None:
            value = np.minimum(value, _quantize(self.high, state.type))
        state.set_array(value)


class ParameterAsInputConverter(ModelVariation):
    """Identified parameters become model inputs (a variation of later generators; Android 11's files do not use it)."""

    def __init__(self, arg: str = "as_input", name: str | None = None) -> None:
        super().__init__(name)
        self.default_name = "as_input" if arg == "as_input" else arg

    def transform(self, state: _State, argument: Any) -> None:
        if not state.is_input and issubclass(state.cls, Parameter) and state.subgraph is None:
            state.cls = Input


class AllTensorsAsInputsConverter(ModelVariation):
    """Every constant tensor of a single-operation model becomes a model input (every operation:
    Android removed its exceptions for MEAN, PAD, SQUEEZE, STRIDED_SLICE, TRANSPOSE and RESHAPE)."""

    default_name = "all_tensors_as_inputs"
    supports_subgraphs = True

    def transform_model(self, instance: _Instance) -> None:
        if len(instance.operations) != 1:
            raise SkipVariation
        tensors = [s for s in instance.states if s.cls is Parameter and not s.type.is_scalar and s.value is not None]
        if not tensors:
            raise SkipVariation
        for state in tensors:
            state.cls = Input
            state.reference = False


_ADDABLE = ("TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM_SIGNED")


def _compatible_with_add(state: _State) -> bool:
    return len(state.type.dimensions) <= 4 and bool(state.value) and state.type.name in _ADDABLE


def _dummy_add(instance: _Instance, state: _State, reference: bool) -> tuple[int, int]:
    """The constant zero and the activation of a dummy ADD on ``state``'s type (declared then, as Android does)."""
    zero = _Type(state.type.name, [1], state.type.scale, state.type.zero_point)
    dummy = instance.add(_State(object(), Parameter, "dummy", zero, [state.type.zero_point], reference=reference))
    code = instance.add(_State(object(), Int32Scalar, "param", _Type("INT32", []), [0], reference=reference))
    return dummy, code


class AllInputsAsInternalConverter(ModelVariation):
    """Each input of a single-operation model becomes the output of a dummy ADD of a new input and zero."""

    default_name = "all_inputs_as_internal"
    supports_subgraphs = True

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.reference = False  # Configuration.use_shm_for_weights as the file left it: the generator's dump time

    def transform_model(self, instance: _Instance) -> None:
        if len(instance.operations) != 1:
            raise SkipVariation
        inputs = [s for s in instance.states if s.is_input and _compatible_with_add(s) and s.may_be_internal]
        if not inputs:
            raise SkipVariation
        for state in inputs:
            index = instance.states.index(state)
            new = instance.add(_State(object(), Input, state.name + "_new", state.type, state.value, state.may_be_internal))
            dummy, code = _dummy_add(instance, state, self.reference)
            instance.operations.append(("ADD", [new, dummy, code], [index]))
            state.cls, state.value = Internal, None


class AllOutputsAsInternalConverter(ModelVariation):
    """Each output of a single-operation model becomes the input of a dummy ADD whose output is the new output."""

    default_name = "all_outputs_as_internal"
    supports_subgraphs = True

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.reference = False

    def transform_model(self, instance: _Instance) -> None:
        if len(instance.operations) != 1:
            raise SkipVariation
        outputs = [s for s in instance.states if s.is_output and _compatible_with_add(s)]
        if not outputs:
            raise SkipVariation
        for state in outputs:
            index = instance.states.index(state)
            dummy, code = _dummy_add(instance, state, self.reference)
            # an ignored output stays ignored (Android's generator would compare its zeros)
            new = instance.add(_State(object(), state.cls, state.name + "_new", state.type, state.value, state.may_be_internal))
            instance.operations.append(("ADD", [index, dummy, code], [new]))
            state.cls, state.value = Internal, None


_NAMED = {"relaxed": lambda: RelaxedModeConverter(True), "float16": lambda: DataTypeConverter("float16"),
          "int32": lambda: DataTypeConverter("int32"), "nchw": lambda: DataLayoutConverter("nchw"),
          "nhwc": lambda: DataLayoutConverter("nhwc"), "as_input": lambda: ParameterAsInputConverter()}


def _variation(value: Any) -> ModelVariation:
    """A variation, or its shorthand: "relaxed", "float16", ("nchw", operands), ("relu", operands), ..."""
    if isinstance(value, ModelVariation):
        return value
    parts = list(value) if isinstance(value, (list, tuple)) else [value]
    key = str(parts[0]).lower()
    if key in _NAMED:
        variation = _NAMED[key]()
    elif key in ActivationConverter._CODES:
        variation = ActivationConverter(key)
    else:
        raise TypeError(f"{parts[0]!r} is not a variation")
    if len(parts) > 1:
        variation.Identify(parts[1] if len(parts) == 2 else parts[1:])
    return variation


# --------------------------------------------------------------------------- examples


class Example:
    def __init__(self, *args: Any, model: Model | None = None, name: str | None = None) -> None:
        spec = _current()
        if model is None and not spec.models:
            raise TypeError("an Example needs a Model declared before it")
        self.model = model if model is not None else spec.models[-1]
        self.name = name
        self.feeds: list[tuple[dict, dict]] = []
        for feed in args:
            if isinstance(feed, (tuple, list)):
                self.feeds.append((dict(feed[0]), dict(feed[1])))
            elif isinstance(feed, dict):
                self.feeds.append((feed, feed))
            else:
                raise TypeError(f"an Example takes dicts or (inputs, outputs) pairs, not {type(feed).__name__}")
        self.groups: list[list[ModelVariation]] = []
        self.expect_failure = False
        self.dynamic_output_shape = True
        self.lifetime_variations = True
        self.tolerance = 0.0
        self.line = spec.line()
        spec.examples.append(self)

    def AddVariations(self, *args: Any, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        group: list[ModelVariation] = [DefaultVariation(defaultName)] if includeDefault else []
        group += [_variation(a) for a in args]
        self.groups.append(group)
        return self

    def AddNchw(self, *args: Any, includeDefault: bool = True, defaultName: str = "nhwc") -> Example:
        return self.AddVariations(DataLayoutConverter("nchw").Identify(args), includeDefault=includeDefault, defaultName=defaultName)

    def AddRelaxed(self, isRelaxed: bool = True, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        return self.AddVariations(RelaxedModeConverter(isRelaxed), includeDefault=includeDefault, defaultName=defaultName)

    def AddInput(self, *args: Any, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        return self.AddVariations(ParameterAsInputConverter().Identify(args), includeDefault=includeDefault, defaultName=defaultName)

    def AddRelu(self, *args: Any, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        return self.AddVariations(ActivationConverter("relu").Identify(args), includeDefault=includeDefault, defaultName=defaultName)

    def AddAllActivations(self, *args: Any) -> Example:
        return self.AddVariations(*[ActivationConverter(a).Identify(args) for a in sorted(ActivationConverter._CODES)],
                                  includeDefault=False)

    def _origin_and_rank(self, args: Sequence[Operand]) -> tuple[int, int]:
        origin = None
        rank = None
        for arg in args:
            if arg.type.name == "INT32":
                origin = arg.value[0] if arg.value else None
            elif rank is None:
                rank = len(arg.type.dimensions)
        if rank is None:
            raise TypeError("an axis variation needs a tensor operand")
        origin = rank - 1 if origin is None else origin
        return (origin + rank if origin < 0 else origin), rank

    def AddAxis(self, axis: Any, *args: Any, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        origin, rank = self._origin_and_rank(args)
        targets = [axis] if isinstance(axis, int) else list(axis)
        return self.AddVariations(*[AxisConverter(origin, a, rank).Identify(args) for a in targets],
                                  includeDefault=includeDefault, defaultName=defaultName)

    def AddAllPositiveAxis(self, *args: Any) -> Example:
        origin, rank = self._origin_and_rank(args)
        return self.AddVariations(*[AxisConverter(origin, a, rank).Identify(args) for a in range(rank)], includeDefault=False)

    def AddAllAxis(self, *args: Any) -> Example:
        origin, rank = self._origin_and_rank(args)
        return self.AddVariations(*[AxisConverter(origin, a, rank).Identify(args) for a in range(-rank, rank)], includeDefault=False)

    def _drops(self, origin: int, rank: int) -> list[int]:
        drop = list(range(rank))
        drop.pop(origin)
        return drop

    def AddDims(self, dims: Any, *args: Any, includeDefault: bool = True, defaultName: str | None = None) -> Example:
        origin, rank = self._origin_and_rank(args)
        drop = self._drops(origin, rank)
        wanted = [dims] if isinstance(dims, int) else list(dims)
        return self.AddVariations(*[AxisConverter(origin, origin, rank, drop[0:(rank - i)]).Identify(args) for i in wanted],
                                  includeDefault=includeDefault, defaultName=defaultName)

    def AddAllDims(self, *args: Any) -> Example:
        origin, rank = self._origin_and_rank(args)
        drop = self._drops(origin, rank)
        return self.AddVariations(*[AxisConverter(origin, origin, rank, drop[0:i]).Identify(args) for i in range(rank)],
                                  includeDefault=False)

    def AddAllDimsAndPositiveAxis(self, *args: Any) -> Example:
        origin, rank = self._origin_and_rank(args)
        return self.AddVariations(*[AxisConverter(origin, j, rank, range(i)).Identify(args)
                                    for i in range(rank) for j in range(i, rank)], includeDefault=False)

    def AddAllDimsAndAxis(self, *args: Any) -> Example:
        origin, rank = self._origin_and_rank(args)
        return self.AddVariations(*[AxisConverter(origin, k, rank, range(i)).Identify(args)
                                    for i in range(rank) for j in range(i, rank) for k in (j, j - rank)], includeDefault=False)

    def ExpectFailure(self) -> Example:
        self.expect_failure = True
        return self

    def DisableDynamicOutputShapeVariation(self) -> Example:
        self.dynamic_output_shape = False
        return self

    def DisableLifeTimeVariation(self) -> Example:
        self.lifetime_variations = False
        return self

    def WithMultinomialDistributionTolerance(self, tolerance: float) -> Example:
        self.tolerance = float(tolerance)
        return self

    @staticmethod
    def SetVersion(version: str, *names: str) -> None:
        """The HAL version of the tests named (full test names, as `SpecCase.name`)."""
        for name in names:
            _current().versions[str(name)] = version


def _configuration() -> type:
    """A Configuration class of the file's own: spec files set ``Configuration.use_shm_for_weights``."""

    class Configuration:
        use_shm_for_weights = False
        hook_mode = False

        @staticmethod
        def useSHM() -> bool:
            return Configuration.use_shm_for_weights

    return Configuration


# --------------------------------------------------------------------------- expansion


@dataclass
class _Spec:
    path: str
    version: str | None = None
    models: list[Model] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    configuration: Any = field(default_factory=_configuration)

    def line(self) -> int:
        """The spec file's line being run (where a DSL object is being made)."""
        frame = sys._getframe(0)
        while frame is not None:
            if frame.f_code.co_filename == self.path:
                return frame.f_lineno
            frame = frame.f_back  # type: ignore[assignment]
        return 0


_ACTIVE: list[_Spec] = []


def _current() -> _Spec:
    if not _ACTIVE:
        raise RuntimeError("DSL objects exist only while a spec file runs")
    return _ACTIVE[-1]


def _feed_value(feed: dict, operand: Operand) -> list:
    for key, value in feed.items():
        if key is operand:
            if isinstance(value, np.ndarray):
                return list(value.flatten().tolist())
            return list(value) if isinstance(value, (list, tuple)) else [value]
    raise KeyError(f"the example gives no value for {operand.name}")


def _instance(model: Model, feed: tuple[dict, dict] | None, copies: dict[int, _Instance]) -> _Instance:
    """A copy of ``model`` to vary, with the example's values (``feed``; None: a referenced model, which
    has none).  ``copies``: the referenced models already copied for this example, so that a model
    named twice (both branches of an IF) is one model, as a deep copy makes it."""
    instance = _Instance(model, [], [], model.relaxed)
    copies[id(model)] = instance
    for operand in model.operands:
        value = None if operand.value is None else list(operand.value)
        if feed is not None and isinstance(operand, Input):
            value = _feed_value(feed[0], operand)
        elif feed is not None and isinstance(operand, Output):
            value = [0] * operand.type.elements if operand.ignored else _feed_value(feed[1], operand)
        subgraph = None
        if isinstance(operand, SubgraphReference):
            subgraph = copies.get(id(operand.model)) or _instance(operand.model, None, copies)
            value = None
        ty = operand.type
        instance.states.append(_State(operand, type(operand), operand.name,
                                      _Type(ty.name, list(ty.dimensions), ty.scale, ty.zero_point, ty.extra), value,
                                      operand.may_be_internal, operand.reference, subgraph))
    index = {id(o): i for i, o in enumerate(model.operands)}
    instance.operations = [(name, [index[id(i)] for i in ins], [index[id(o)] for o in outs])
                           for name, ins, outs in model.operations]
    return instance


def _sorted_operations(count: int, operations: list[tuple[str, list[int], list[int]]]) -> list[int]:
    """The operations in dataflow order, as Android's generator sorts them: depth first, each after the
    operations writing the operands it reads (taken in the model's operand order)."""
    writers: dict[int, list[int]] = collections.defaultdict(list)
    readers: dict[int, list[int]] = collections.defaultdict(list)
    for n, (_, ins, outs) in enumerate(operations):
        for i in ins:
            readers[i].append(n)
        for o in outs:
            writers[o].append(n)
    needs: dict[int, list[int]] = {n: [] for n in range(len(operations))}
    for operand in range(count):
        for reader in readers[operand]:
            needs[reader] += writers[operand]
    order: list[int] = []
    visiting: set[int] = set()

    def visit(n: int) -> None:
        if n in order:
            return
        if n in visiting:
            raise ValueError("the model's operations form a cycle")
        visiting.add(n)
        for writer in needs[n]:
            visit(writer)
        visiting.discard(n)
        order.append(n)

    for n in range(len(operations)):
        visit(n)
    return order


_KINDS = {Input: "input", Output: "output", IgnoredOutput: "output", Internal: "internal"}


def _graph(instance: _Instance, compiled: _Compiled) -> SpecGraph:
    operands = []
    for state in instance.states:
        kind = "subgraph" if state.subgraph is not None else next(
            (k for cls, k in _KINDS.items() if state.cls is cls), "input" if state.is_input else
            "output" if state.is_output else "internal" if issubclass(state.cls, Internal) else "parameter")
        subgraph = compiled.index(state.subgraph) if state.subgraph is not None else -1
        extra = state.type.extra
        channel = (tuple(extra.scales), extra.channelDim) if extra is not None and not extra.hide else None
        value = None if state.value is None or kind in ("internal", "subgraph") else tuple(state.value)
        operands.append(SpecOperand(
            state.name, state.type.name, tuple(state.type.dimensions), state.type.scale, state.type.zero_point, kind,
            value, channel, ignored=bool(getattr(state.cls, "ignored", False)), subgraph=subgraph,
            reference=kind == "parameter" and state.reference and bool(state.value)))
    order = _sorted_operations(len(instance.states), instance.operations)
    operations = tuple(SpecOperation(instance.operations[n][0], tuple(instance.operations[n][1]),
                                     tuple(instance.operations[n][2])) for n in order)
    return SpecGraph(tuple(operands), operations,
                     tuple(i for i, o in enumerate(operands) if o.kind == "input"),
                     tuple(i for i, o in enumerate(operands) if o.kind == "output"))


@dataclass
class _Compiled:
    """The referenced models of one example, numbered as Android numbers them: in the order they are
    first named, depth first (a model's own references after it)."""

    graphs: list[SpecGraph | None] = field(default_factory=list)
    numbers: dict[int, int] = field(default_factory=dict)

    def index(self, instance: _Instance) -> int:
        if id(instance) not in self.numbers:
            self.numbers[id(instance)] = len(self.graphs)
            self.graphs.append(None)
            self.graphs[self.numbers[id(instance)]] = _graph(instance, self)
        return self.numbers[id(instance)]


class _Names:
    """Test names unique within a file: a repeated name gets ``_2``, ``_3``, ... (Android's numbering)."""

    def __init__(self) -> None:
        self.given: set[str] = set()

    def unique(self, name: str) -> str:
        candidate, number = name, 1
        while candidate in self.given:
            number += 1
            candidate = f"{name}_{number}"
        self.given.add(candidate)
        return candidate


def _combined(examples: list[Example]) -> list[Example]:
    """Examples of one model with one name and the same variations are one example with several inputs."""
    kept: dict[tuple, Example] = {}
    result = []
    for example in examples:
        key = (id(example.model), example.name, tuple(tuple(id(v) for v in group) for group in example.groups))
        if key in kept:
            kept[key].feeds.extend(example.feeds)
        else:
            kept[key] = example
            result.append(example)
    return result


def _expand(spec: _Spec, spec_name: str) -> list[SpecCase]:
    cases: list[SpecCase] = []
    names = _Names()
    reference = bool(spec.configuration.use_shm_for_weights)
    for example in _combined(spec.examples):
        groups = list(example.groups)
        if example.lifetime_variations and len(example.model.operations) == 1 and example.tolerance == 0:
            groups += [[DefaultVariation(), AllTensorsAsInputsConverter()], [DefaultVariation(), AllInputsAsInternalConverter()]]
        for group in groups:
            for variation in group:
                if isinstance(variation, (AllInputsAsInternalConverter, AllOutputsAsInternalConverter)):
                    variation.reference = reference
        for number, feed in enumerate(example.feeds):
            for combination in itertools.product(*groups):
                instance = _instance(example.model, feed, {})
                try:
                    for variation in combination:
                        variation.apply(instance)
                except SkipVariation:
                    continue
                variation_names = [v.final_name() for v in combination]
                label = names.unique("_".join(p for p in (spec_name, example.model.name, example.name, *variation_names)
                                              if p is not None and p != ""))
                compiled = _Compiled()
                compiled.numbers[id(instance)] = -1  # the main model is no referenced one
                main = _graph(instance, compiled)
                version = None if instance.relaxed else spec.versions.get(label, example.model.version)
                cases.append(SpecCase(spec_name + ".mod.py", label, tuple(n for n in variation_names if n), number, main,
                                      tuple(g for g in compiled.graphs if g is not None), instance.relaxed,
                                      example.expect_failure, example.dynamic_output_shape, example.line, version,
                                      example.tolerance))
    return cases


# --------------------------------------------------------------------------- running a file

_SAFE_BUILTINS = {name: getattr(builtins, name)
                  for name in ("abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "format",
                               "frozenset", "int", "isinstance", "iter", "len", "list", "map", "max", "min", "next", "pow",
                               "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip",
                               "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError", "StopIteration",
                               "TypeError", "ValueError", "ZeroDivisionError")}


def _module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in members.items():
        setattr(module, key, value)
    return module


def _random_module() -> types.ModuleType:
    """``random`` as a spec file sees it: its module functions bound to a generator of the file's own
    (CTS files seed it and shuffle golden inputs with it), ``random.Random`` for generators of their
    own; the harness's random state is never touched."""
    own = random.Random()
    functions = ("seed", "random", "uniform", "randint", "randrange", "choice", "choices", "shuffle", "sample", "gauss",
                 "normalvariate", "getrandbits", "triangular", "betavariate", "expovariate", "getstate", "setstate")
    return _module("random", Random=random.Random, **{f: getattr(own, f) for f in functions})


#: What spec files import, reduced to what data-building code needs (no file or process access).
_MODULES = {
    "math": lambda: math,
    "itertools": lambda: itertools,
    "numpy": lambda: np,
    "random": _random_module,
    "copy": lambda: _module("copy", copy=copy.copy, deepcopy=copy.deepcopy, Error=copy.Error),
    "collections": lambda: _module("collections", namedtuple=collections.namedtuple, OrderedDict=collections.OrderedDict,
                                   defaultdict=collections.defaultdict, Counter=collections.Counter,
                                   deque=collections.deque, ChainMap=collections.ChainMap),
    "sys": lambda: _module("sys", maxsize=sys.maxsize, float_info=sys.float_info, int_info=sys.int_info,
                           byteorder=sys.byteorder, version_info=sys.version_info),
}
_IMPORTABLE_NAMES = ", ".join(sorted(_MODULES))


def _importer() -> Any:
    """The __import__ a spec file sees: the modules of `_MODULES`, each made once per file."""
    made: dict[str, Any] = {}

    def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name not in _MODULES or level != 0:
            raise ImportError(f"a spec file may import only {_IMPORTABLE_NAMES}, not {name}")
        if name not in made:
            made[name] = _MODULES[name]()
        return made[name]
    return _import


def _namespace(spec: _Spec) -> dict[str, Any]:
    names: dict[str, Any] = {
        "__builtins__": {**_SAFE_BUILTINS, "print": lambda *a, **k: None, "__import__": _importer()},
        "__name__": "__spec__",
    }
    for cls in (Model, Input, Output, IgnoredOutput, Internal, Parameter, Int32Scalar, Float16Scalar, Float32Scalar,
                BoolScalar, Int32Vector, Float32Vector, SubgraphReference, SymmPerChannelQuantParams, Example,
                DataTypeConverter, DataLayoutConverter, AxisConverter, RelaxedModeConverter, ActivationConverter,
                ParameterAsInputConverter, AllTensorsAsInputsConverter, DefaultVariation, Operand):
        names[cls.__name__] = cls
    names["Configuration"] = spec.configuration
    # the generator's own spelling
    names["AllInputsAsInternalCoverter"] = AllInputsAsInternalConverter
    names["AllOutputsAsInternalCoverter"] = AllOutputsAsInternalConverter
    names["AllInputsAsInternalConverter"] = AllInputsAsInternalConverter
    names["AllOutputsAsInternalConverter"] = AllOutputsAsInternalConverter
    return names


#: Where a source can name a private attribute or a dunder name at all: a file with neither (every
#: AOSP file) needs no walk of its syntax tree, the slowest part of loading it after compiling it.
_MAYBE_PRIVATE = re.compile(r"__|\.[\s\\]*_")


def _compiled(source: str, path: str) -> Any:
    """The file's code, once it is known to refuse dunder names and private attributes: a spec is data
    written as Python."""
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise SpecError(path, error.lineno or 0, f"not valid Python: {error.msg}") from None
    if _MAYBE_PRIVATE.search(source):
        for node in ast.walk(ast.parse(source, filename=path)):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise SpecError(path, node.lineno, f"attribute {node.attr!r} is not part of the spec DSL")
            if isinstance(node, ast.Name) and node.id.startswith("__"):
                raise SpecError(path, node.lineno, f"name {node.id!r} is not part of the spec DSL")
    return code


def _version(path: str) -> str | None:
    """The HAL version of a file under ``.../V1_2/``, as Android's generator takes it from the path."""
    found = re.findall(r"/V\d_\d/", path.replace(os.sep, "/"))
    return found[0].strip("/") if len(found) == 1 else None


def run_spec(path: str, source: str | None = None) -> list[SpecCase]:
    """Execute one spec file and return every example under every combination of its variations."""
    if source is None:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    path = os.path.abspath(path)
    code = _compiled(source, path)
    spec = _Spec(path, _version(path))
    _ACTIVE.append(spec)
    try:
        exec(code, _namespace(spec))  # noqa: S102 - the restricted namespace above
        spec_name = os.path.basename(path).split(".")[0]
        try:
            return _expand(spec, spec_name)
        except (TypeError, ValueError, KeyError, IndexError) as error:
            raise SpecError(path, _example_line(spec), f"{type(error).__name__}: {error}") from None
    except SpecError:
        raise
    except Exception as error:  # the spec file's own mistake: name its line
        raise SpecError(path, _error_line(error, path), f"{type(error).__name__}: {error}") from None
    finally:
        _ACTIVE.pop()


def _example_line(spec: _Spec) -> int:
    return spec.examples[-1].line if spec.examples else 0


def _error_line(error: BaseException, path: str) -> int:
    traceback = error.__traceback__
    line = 0
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == path:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line
