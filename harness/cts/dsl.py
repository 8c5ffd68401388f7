"""The NNAPI test_generator DSL, executed by the harness itself.

An AOSP spec file (``*.mod.py``) is Python that declares operands (``Input``, ``Output``,
``Parameter``, ``Internal``, scalar and vector shorthands), models (``Model().Operation(...).To(...)``)
and examples (``Example({...})``) with variations (relaxed, float16, quant8 re-typing, NCHW, axis
moves, activations, parameters as inputs).  `run_spec` executes one file in a namespace that holds
only these names and a few harmless builtins, and returns the examples it declared, each expanded
into its variations: plain data (`SpecCase`) with no reference to the DSL objects.

The semantics follow ``tools/test_generator`` of AOSP's NeuralNetworks module (its README is the
user's guide): variation groups combine as a cartesian product; re-typing dequantizes values
from the old type and quantizes them to the new one (rounding half to even, as numpy does);
single-operation models also get the "all tensors as inputs" and "all inputs as internal"
variations.  What this module cannot express raises `SpecError` naming the file and line.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
import os
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SpecCase", "SpecError", "SpecOperand", "SpecOperation", "run_spec"]


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
    value: tuple | None  # parameters: the constant; inputs/outputs: this example's value
    channel_quant: tuple[tuple[float, ...], int] | None = None  # (scales, channel dimension)
    ignored: bool = False  # an IgnoredOutput: not compared
    subgraph: int = -1  # kind "subgraph": the index into SpecCase.referenced


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
    name: str  # the test name CTS would give it: spec, model, example name and variation names
    variations: tuple[str, ...]
    example: int  # which of the model's examples (0-based)
    main: SpecGraph
    referenced: tuple[SpecGraph, ...]
    relaxed: bool
    expect_failure: bool
    dynamic_output_shape: bool  # False when the spec disables the dynamic output shape test
    line: int  # where the Example was declared
    version: str | None = None

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
    before, _, rest = text.partition("{")
    dims_text, _, rest = rest.partition("}")
    dims = [int(d) for d in dims_text.split(",") if d.strip()]
    parts = [p.strip().rstrip("f") for p in rest.split(",") if p.strip()]
    scale = float(parts[0]) if parts else 0.0
    zero_point = int(float(parts[1])) if len(parts) > 1 else 0
    return dims, scale, zero_point


class SymmPerChannelQuantParams:
    def __init__(self, channelDim: int, scales: Sequence[float], hide: bool = False) -> None:
        self.channelDim = int(channelDim)
        self.scales = [float(s) for s in scales]

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


def _quantize(v: Any, ty: _Type) -> Any:
    if ty.scale != 0:
        v /= ty.scale
    if ty.extra is not None:
        v = v / ty.extra.broadcast(ty.dimensions)
    v += ty.zero_point
    if not ty.is_float:
        v = np.round(v)
        v = int(np.asarray(v).item()) if np.isscalar(v) else v.astype(int)
    bounds = {"TENSOR_QUANT8_ASYMM": (0, 255), "TENSOR_QUANT16_ASYMM": (0, 65535),
              "TENSOR_QUANT8_SYMM_PER_CHANNEL": (-127, 127), "TENSOR_QUANT8_ASYMM_SIGNED": (-128, 127)}
    if ty.name in bounds:
        v = np.minimum(np.maximum(v, bounds[ty.name][0]), bounds[ty.name][1])
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

    def set_value(self, value: Any) -> None:
        if value is None:
            self.value = None
        elif isinstance(value, (list, tuple)):
            self.value = list(value)
        elif isinstance(value, np.ndarray):
            self.value = value.flatten().tolist()
        else:
            self.value = [value]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Input(Operand):
    kind = "input"

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)
        if not isinstance(opType, str):
            self.value = None


class Output(Operand):
    kind = "output"
    ignored = False

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)
        if not isinstance(opType, str):
            self.value = None


class IgnoredOutput(Output):
    ignored = True


class Internal(Operand):
    kind = "internal"

    def __init__(self, name: str, opType: Any, backward: Any = None, skipRenaming: bool = False, extraParams: Any = None) -> None:
        super().__init__(name, opType, backward, None, extraParams=extraParams)
        self.value = None


class Parameter(Operand):
    kind = "parameter"


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


class SubgraphReference(Operand):
    """A model passed as an operation input (the branches and bodies of IF and WHILE)."""

    kind = "subgraph"

    def __init__(self, name: str, model: Model) -> None:
        self.name = name
        self.type = _Type("SUBGRAPH", [])
        self.value = None
        self.model = model


def _implicit(value: Any) -> Operand:
    """Literal operation inputs: int, float, bool, lists of ints or floats, models."""
    if isinstance(value, Operand):
        return value
    if isinstance(value, Model):
        return SubgraphReference(value.name or "subgraph", value)
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
        self.version: str | None = None
        _current().models.append(self)

    def _use(self, operands: Iterable[Operand]) -> None:
        for operand in operands:
            if not any(operand is o for o in self.operands):
                self.operands.append(operand)

    def Operation(self, op_name: str, *args: Any) -> Model:
        inputs = [_implicit(a) for a in args]
        self.operations.append((str(op_name), inputs, []))
        self._use(inputs)
        return self

    def To(self, *args: Any) -> Model:
        outs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        name, inputs, _ = self.operations[-1]
        self.operations[-1] = (name, inputs, outs)
        self._use(outs)
        return self

    def RelaxedExecution(self, is_relaxed: bool) -> Model:
        self.relaxed = bool(is_relaxed)
        return self

    def IntroducedIn(self, version: str | None) -> Model:
        self.version = version
        return self


# --------------------------------------------------------------------------- variations


@dataclass
class _State:
    """One operand as a variation sees it: mutable copies of the declared fields."""

    source: Operand
    cls: type
    name: str
    type: _Type
    value: list | None

    def as_array(self) -> np.ndarray:
        return np.array(self.value).reshape(self.type.dimensions)

    def set_array(self, value: np.ndarray) -> None:
        self.value = np.asarray(value).flatten().tolist()


@dataclass
class _Instance:
    """A model being varied: operand states by identity, operations over them, the relaxed flag."""

    states: list[_State]
    operations: list[tuple[str, list[int], list[int]]]
    relaxed: bool

    def find(self, operand: Operand) -> _State | None:
        return next((s for s in self.states if s.source is operand), None)


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
        if not self.targets:
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
    pass


class DataTypeConverter(ModelVariation):
    def __init__(self, targetType: str | None = None, name: str | None = None) -> None:
        super().__init__(name)
        self.target_type = targetType

    def auto_identify(self, instance: _Instance) -> None:
        if self.target_type is None:
            return
        wanted = self.target_type.upper()
        for state in instance.states:
            if state.type.name == "TENSOR_FLOAT32":
                self.targets[state.source] = ("TENSOR_" + wanted,)
            elif state.type.name == "FLOAT32":
                self.targets[state.source] = (wanted,)

    def final_name(self) -> str:
        if self.name is not None:
            return self.name
        if self.target_type is not None:
            return self.target_type.lower()
        names = [(a,) if isinstance(a, str) else tuple(a) for a in self.targets.values()]
        kinds = {n[0] for n in names}
        for type_name, label in (("TENSOR_QUANT8_SYMM_PER_CHANNEL", "channelQuant8"), ("TENSOR_QUANT8_ASYMM", "quant8"),
                                 ("TENSOR_QUANT8_ASYMM_SIGNED", "quant8_signed"), ("TENSOR_INT32", "int32"),
                                 ("TENSOR_FLOAT16", "float16")):
            if type_name in kinds:
                return label
        return "float32"

    def transform(self, state: _State, argument: Any) -> None:
        if argument is None:  # identified by a list: the converter's own target type
            wanted = (self.target_type or "float32").upper()
            argument = wanted if state.type.is_scalar else "TENSOR_" + wanted
        fields = (argument,) if isinstance(argument, str) else tuple(argument)
        extra = fields[3] if len(fields) > 3 else None
        new_type = _Type(fields[0], list(state.type.dimensions), float(fields[1]) if len(fields) > 1 else 0.0,
                         int(fields[2]) if len(fields) > 2 else 0, extra)
        if state.value is None or state.type.elements == 0:
            state.type = new_type
            return
        real = _dequantize(state.as_array().astype(np.float32), state.type)
        state.type = new_type
        state.set_array(np.asarray(_quantize(real, new_type)))


class RelaxedModeConverter(ModelVariation):
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
        self.perm = (0, 3, 1, 2) if self.layout == "nchw" else (0, 2, 3, 1)
        self.default_name = self.layout

    def transform(self, state: _State, argument: Any) -> None:
        if len(state.type.dimensions) == 4:
            if state.value is not None and state.type.elements != 0:
                state.set_array(state.as_array().transpose(self.perm))
            state.type = _Type(state.type.name, [state.type.dimensions[i] for i in self.perm], state.type.scale,
                               state.type.zero_point, state.type.extra)
        elif len(state.type.dimensions) == 1 and state.value is not None and len(state.value) == 4:
            state.set_array(state.as_array()[list(self.perm)])
        elif state.type.name == "BOOL":
            state.value = [self.layout == "nchw"]
        else:
            raise TypeError(f"{state.name}: a DataLayoutConverter moves only 4-D tensors, 4-element vectors and the layout flag")


class AxisConverter(ModelVariation):
    def __init__(self, origin: int, target: int, dim: int, drop: Any = (), name: str | None = None) -> None:
        super().__init__(name)
        self.origin, self.target, self.dim = origin, target, dim
        self.perm = list(range(dim))
        self.perm.insert(target if target >= 0 else target + dim, self.perm.pop(origin))
        drops = [drop] if isinstance(drop, int) else list(drop)
        self.drop = [d if d >= 0 else d + dim for d in drops]
        axis = (target if target >= 0 else target + dim) - sum(d < (target if target >= 0 else target + dim) for d in self.drop)
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
        state.type = _Type(state.type.name, dims, state.type.scale, state.type.zero_point, state.type.extra)
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
    def __init__(self, arg: str = "as_input", name: str | None = None) -> None:
        super().__init__(name)
        self.default_name = "as_input" if arg == "as_input" else arg

    def transform(self, state: _State, argument: Any) -> None:
        if state.cls is not Input and issubclass(state.cls, Parameter):
            state.cls = Input


class AllTensorsAsInputsConverter(ModelVariation):
    default_name = "all_tensors_as_inputs"
    _EXCLUDED = ("MEAN", "PAD", "SQUEEZE", "STRIDED_SLICE", "TRANSPOSE", "RESHAPE")

    def transform_model(self, instance: _Instance) -> None:
        if len(instance.operations) != 1 or instance.operations[0][0] in self._EXCLUDED:
            raise SkipVariation
        tensors = [s for s in instance.states if s.cls is Parameter and not s.type.is_scalar]
        if not tensors:
            raise SkipVariation
        for state in tensors:
            state.cls = Input


class AllInputsAsInternalConverter(ModelVariation):
    default_name = "all_inputs_as_internal"
    _ADDABLE = ("TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM_SIGNED")

    def transform_model(self, instance: _Instance) -> None:
        if len(instance.operations) != 1:
            raise SkipVariation
        inputs = [s for s in instance.states if issubclass(s.cls, Input) and len(s.type.dimensions) <= 4
                  and s.value and s.type.name in self._ADDABLE]
        if not inputs:
            raise SkipVariation
        for state in inputs:
            index = instance.states.index(state)
            source = _State(state.source, Input, state.name + "_tmp", state.type, state.value)
            zero = _Type(state.type.name, [1], state.type.scale, state.type.zero_point)
            dummy = _State(state.source, Parameter, "dummy", zero, [state.type.zero_point])
            code = _State(state.source, Parameter, "param", _Type("INT32", []), [0])
            instance.states += [source, dummy, code]
            n = len(instance.states)
            instance.operations.append(("ADD", [n - 3, n - 2, n - 1], [index]))
            state.cls = Internal


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
        pass  # versions decide which HAL a test targets in VTS; every example runs here


class Configuration:
    use_shm_for_weights = False
    hook_mode = False

    @staticmethod
    def useSHM() -> bool:
        return Configuration.use_shm_for_weights


# --------------------------------------------------------------------------- expansion


@dataclass
class _Spec:
    path: str
    models: list[Model] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)

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


def _instance(model: Model, feed: tuple[dict, dict]) -> _Instance:
    states: list[_State] = []
    for operand in model.operands:
        value = operand.value
        if isinstance(operand, Input):
            value = _feed_value(feed[0], operand)
        elif isinstance(operand, Output):
            value = [0] * operand.type.elements if operand.ignored else _feed_value(feed[1], operand)
        states.append(_State(operand, type(operand), operand.name, _Type(operand.type.name, list(operand.type.dimensions),
                             operand.type.scale, operand.type.zero_point, operand.type.extra),
                             None if value is None else list(value)))
    index = {id(o): i for i, o in enumerate(model.operands)}
    operations = [(name, [index[id(i)] for i in ins], [index[id(o)] for o in outs]) for name, ins, outs in model.operations]
    return _Instance(states, operations, model.relaxed)


def _feed_value(feed: dict, operand: Operand) -> list:
    for key, value in feed.items():
        if key is operand:
            return list(np.asarray(value).flatten().tolist()) if isinstance(value, np.ndarray) else list(value)
    raise KeyError(f"the example gives no value for {operand.name}")


def _sorted_operations(operations: list[tuple[str, list[int], list[int]]]) -> list[tuple[str, list[int], list[int]]]:
    """Operations in dataflow order (the generator sorts them topologically)."""
    written = {o: n for n, (_, _, outs) in enumerate(operations) for o in outs}
    done: list[int] = []
    visiting: set[int] = set()

    def visit(n: int) -> None:
        if n in done:
            return
        if n in visiting:
            raise ValueError("the model's operations form a cycle")
        visiting.add(n)
        for i in operations[n][1]:
            if i in written:
                visit(written[i])
        visiting.discard(n)
        done.append(n)

    for n in range(len(operations)):
        visit(n)
    return [operations[n] for n in done]


def _graph(instance: _Instance, referenced: list[SpecGraph], models: dict[int, int]) -> SpecGraph:
    operands = []
    for state in instance.states:
        kinds: dict[type, str] = {Input: "input", Output: "output", IgnoredOutput: "output", Internal: "internal"}
        kind = kinds.get(state.cls)
        if kind is None:
            kind = "subgraph" if issubclass(state.cls, SubgraphReference) else "parameter"
        subgraph = -1
        if kind == "subgraph":
            subgraph = _reference(state.source.model, referenced, models)  # type: ignore[attr-defined]
        extra = state.type.extra
        operands.append(SpecOperand(
            state.name, state.type.name, tuple(state.type.dimensions), state.type.scale, state.type.zero_point, kind,
            None if state.value is None else tuple(state.value),
            (tuple(extra.scales), extra.channelDim) if extra is not None else None,
            ignored=bool(getattr(state.cls, "ignored", False)), subgraph=subgraph))
    operations = _sorted_operations(instance.operations)
    return SpecGraph(tuple(operands), tuple(SpecOperation(n, tuple(i), tuple(o)) for n, i, o in operations),
                     tuple(i for i, o in enumerate(operands) if o.kind == "input"),
                     tuple(i for i, o in enumerate(operands) if o.kind == "output"))


def _reference(model: Model, referenced: list[SpecGraph], models: dict[int, int]) -> int:
    """A referenced model's index in SpecCase.referenced (converted once, with no example values)."""
    if id(model) not in models:
        models[id(model)] = -1  # placeholder: a model cannot reference itself
        empty: tuple[dict, dict] = ({o: [] for o in model.operands if isinstance(o, Input)}, {o: [] for o in model.operands if isinstance(o, Output)})
        graph = _graph(_instance(model, empty), referenced, models)
        referenced.append(graph)
        models[id(model)] = len(referenced) - 1
    return models[id(model)]


def _expand(spec: _Spec, spec_name: str) -> list[SpecCase]:
    cases: list[SpecCase] = []
    for example in spec.examples:
        groups = list(example.groups)
        if example.lifetime_variations and len(example.model.operations) == 1 and example.tolerance == 0:
            groups += [[DefaultVariation(), AllTensorsAsInputsConverter()], [DefaultVariation(), AllInputsAsInternalConverter()]]
        for number, feed in enumerate(example.feeds):
            for combination in itertools.product(*groups):
                instance = _instance(example.model, feed)
                try:
                    for variation in combination:
                        variation.apply(instance)
                except SkipVariation:
                    continue
                names = tuple(v.final_name() for v in combination)
                referenced: list[SpecGraph] = []
                main = _graph(instance, referenced, {id(example.model): -1})
                label = "_".join(p for p in (spec_name, example.model.name or "", example.name or "", *names) if p)
                cases.append(SpecCase(spec_name + ".mod.py", label, tuple(n for n in names if n), number, main,
                                      tuple(referenced), instance.relaxed, example.expect_failure,
                                      example.dynamic_output_shape, example.line, example.model.version))
    return cases


# --------------------------------------------------------------------------- running a file

_SAFE_BUILTINS = {name: getattr(builtins, name)
                  for name in ("abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance",
                               "len", "list", "map", "max", "min", "range", "reversed", "round", "set", "sorted", "str",
                               "sum", "tuple", "zip")}
_IMPORTABLE = {"math": math, "itertools": itertools, "numpy": np}
_IMPORTABLE_NAMES = ", ".join(sorted([*_IMPORTABLE, "random"]))


def _importer() -> Any:
    """The __import__ a spec file sees. `random` is a generator of the file's own (CTS files seed it and
    shuffle golden inputs with it), so a spec can neither disturb the harness's random state nor reach
    the module's internals."""
    own_random = random.Random()

    def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name == "random":
            return own_random
        if name not in _IMPORTABLE:
            raise ImportError(f"a spec file may import only {_IMPORTABLE_NAMES}, not {name}")
        return _IMPORTABLE[name]
    return _import


def _namespace() -> dict[str, Any]:
    names: dict[str, Any] = {
        "__builtins__": {**_SAFE_BUILTINS, "print": lambda *a, **k: None, "__import__": _importer()},
        "__name__": "__spec__",
    }
    for cls in (Model, Input, Output, IgnoredOutput, Internal, Parameter, Int32Scalar, Float16Scalar, Float32Scalar,
                BoolScalar, Int32Vector, Float32Vector, SubgraphReference, SymmPerChannelQuantParams, Example,
                Configuration, DataTypeConverter, DataLayoutConverter, AxisConverter, RelaxedModeConverter,
                ActivationConverter, ParameterAsInputConverter, AllTensorsAsInputsConverter, DefaultVariation):
        names[cls.__name__] = cls
    names["AllInputsAsInternalCoverter"] = AllInputsAsInternalConverter  # the generator's own spelling
    names["Operand"] = Operand
    return names


def _check_syntax(source: str, path: str) -> ast.Module:
    """Parse, and refuse dunder names and private attributes: a spec is data written as Python."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise SpecError(path, error.lineno or 0, f"not valid Python: {error.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise SpecError(path, node.lineno, f"attribute {node.attr!r} is not part of the spec DSL")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise SpecError(path, node.lineno, f"name {node.id!r} is not part of the spec DSL")
    return tree


def run_spec(path: str, source: str | None = None) -> list[SpecCase]:
    """Execute one spec file and return every example under every combination of its variations."""
    if source is None:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    path = os.path.abspath(path)
    tree = _check_syntax(source, path)
    spec = _Spec(path)
    Configuration.use_shm_for_weights = False
    _ACTIVE.append(spec)
    try:
        exec(compile(tree, path, "exec"), _namespace())  # noqa: S102 - the restricted namespace above
        spec_name = os.path.basename(path).split(".")[0]
        try:
            return _expand(spec, spec_name)
        except (TypeError, ValueError, KeyError, IndexError) as error:
            raise SpecError(path, _example_line(spec), str(error)) from None
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
