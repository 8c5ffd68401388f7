"""A golden corpus: spec files loaded into plain harness data, ready to run on any driver.

`load_corpus` runs every ``*.mod.py`` under the given paths through the DSL and converts each
example into a `GoldenCase`: a harness `Subgraph` (with referenced subgraphs and the relaxed flag),
the constant bytes (CONSTANT_COPY values of every subgraph in one operandValues, CONSTANT_REFERENCE
ones in one pool, as CTS builds them), the input values (an input with no value is omitted) and
the golden outputs.  A file the DSL cannot run, or an
example the data model cannot hold, is kept as an `Unexpressed` entry with the reason, so a
corpus is always fully counted.  An example of an operation or operand type the harness's data
model has no name for is kept apart (``Unexpressed.outside``): no driver can declare it, so it is
outside the certificate, where an example that could not be read is a test that did not run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from harness.api.hal import (DataLocation, Model, Operand, OperandLifeTime, OperandType, Operation, OperationType,
                             Subgraph, SymmPerChannelQuantParams, numpy_dtype)
from harness.api.memory import create_ashmem

from .dsl import SpecCase, SpecError, SpecGraph, run_spec

__all__ = ["Corpus", "GoldenCase", "Unexpressed", "load_corpus"]

_LIFETIME = {"input": OperandLifeTime.SUBGRAPH_INPUT, "output": OperandLifeTime.SUBGRAPH_OUTPUT,
             "internal": OperandLifeTime.TEMPORARY_VARIABLE, "subgraph": OperandLifeTime.SUBGRAPH}


@dataclass(frozen=True)
class GoldenCase:
    """One example under one combination of variations, as harness data."""

    path: str  # the spec file
    case: SpecCase
    main: Subgraph
    referenced: tuple[Subgraph, ...]
    operand_values: bytes  # the CONSTANT_COPY values of every subgraph
    inputs: tuple[np.ndarray | None, ...]  # None: the input is omitted (hasNoValue)
    outputs: tuple[np.ndarray, ...]
    ignored: tuple[bool, ...]  # outputs CTS does not compare
    pool: bytes = b""  # the CONSTANT_REFERENCE values of every subgraph: the model's pool 0

    @property
    def id(self) -> str:
        return self.case.name

    @property
    def operations(self) -> frozenset[OperationType]:
        return frozenset(o.type for g in (self.main, *self.referenced) for o in g.operations)

    @property
    def operand_types(self) -> frozenset[OperandType]:
        return frozenset(o.type for g in (self.main, *self.referenced) for o in g.operands)

    @property
    def coverage_key(self) -> list[tuple[str, str]]:
        """(operation, operand type) pairs this example exercises: each operation with the type of its first input."""
        pairs = []
        for graph in (self.main, *self.referenced):
            for operation in graph.operations:
                first = graph.operands[operation.inputs[0]].type.name if operation.inputs else "-"
                pairs.append((operation.type.name, first))
        return sorted(set(pairs))

    @contextmanager
    def open_model(self, main: Subgraph | None = None) -> Iterator[Model]:
        """The example's model (with ``main`` in place of its main subgraph, when given); its constant
        pool, when it has CONSTANT_REFERENCE operands, is a shared memory closed on exit."""
        pools = (create_ashmem(len(self.pool)),) if self.pool else ()
        try:
            if pools:
                pools[0].write(self.pool)
            yield Model(self.main if main is None else main, self.operand_values, pools, self.referenced, self.case.relaxed)
        finally:
            for pool in pools:
                pool.close()


@dataclass(frozen=True)
class Unexpressed:
    """A file or example that could not be turned into a golden case, and why."""

    path: str
    name: str
    reason: str  # names the file and the line
    line: int = 0  # of the file where it could not be read (0: the file as a whole)
    #: The operations and operand types of the example that `OperationType` / `OperandType` do not
    #: name (empty: the file or example could not be read for another reason).
    outside: tuple[str, ...] = ()


@dataclass(frozen=True)
class Corpus:
    cases: tuple[GoldenCase, ...]
    unexpressed: tuple[Unexpressed, ...]
    files: int


def _array(operand_type: OperandType, dims: tuple[int, ...], value: tuple) -> np.ndarray:
    dtype = np.dtype(numpy_dtype(operand_type))
    if dims and 0 in dims:  # a zero-sized tensor: CTS spec files give it a placeholder value
        return np.zeros(dims, dtype)
    if operand_type in (OperandType.BOOL, OperandType.TENSOR_BOOL8):
        return np.asarray([bool(v) for v in value], dtype=dtype).reshape(dims)
    return np.asarray(value, dtype=np.float64 if dtype.kind == "f" else np.int64).astype(dtype).reshape(dims)


def _place(data: bytearray, raw: bytes) -> int:
    """Append ``raw`` to ``data`` at an offset aligned to 8 bytes; return the offset."""
    offset = -(-len(data) // 8) * 8
    data.extend(b"\0" * (offset - len(data)) + raw)
    return offset


def _subgraph(graph: SpecGraph, values: bytearray, pool: bytearray) -> Subgraph:
    operands = []
    for operand in graph.operands:
        operand_type = OperandType[operand.type]
        dims = operand.dimensions
        channel = SymmPerChannelQuantParams(*operand.channel_quant) if operand.channel_quant else None
        if operand.kind == "parameter":
            if not operand.value or (dims and 0 in dims):  # no value, or an empty one: an omitted operand
                operands.append(Operand(operand_type, dims, operand.scale, operand.zero_point, OperandLifeTime.NO_VALUE,
                                        channel_quant=channel))
                continue
            raw = _array(operand_type, dims, operand.value).tobytes()
            if operand.reference:
                location, lifetime = DataLocation(0, _place(pool, raw), len(raw)), OperandLifeTime.CONSTANT_REFERENCE
            else:
                location, lifetime = DataLocation(0, _place(values, raw), len(raw)), OperandLifeTime.CONSTANT_COPY
            operands.append(Operand(operand_type, dims, operand.scale, operand.zero_point, lifetime, location, channel))
        elif operand.kind == "subgraph":
            operands.append(Operand(operand_type, (), 0.0, 0, OperandLifeTime.SUBGRAPH, DataLocation(0, operand.subgraph, 0)))
        else:
            operands.append(Operand(operand_type, dims, operand.scale, operand.zero_point, _LIFETIME[operand.kind],
                                    channel_quant=channel))
    operations = tuple(Operation(OperationType[o.type], o.inputs, o.outputs) for o in graph.operations)
    return Subgraph(tuple(operands), operations, graph.inputs, graph.outputs)


def _outside_names(case: SpecCase) -> tuple[str, ...]:
    """The operation and operand type names of ``case`` that the harness's data model lacks."""
    graphs = (case.main, *case.referenced)
    names = [o.type for g in graphs for o in g.operations if o.type not in OperationType.__members__]
    names += [o.type for g in graphs for o in g.operands if o.type not in OperandType.__members__]
    return tuple(dict.fromkeys(names))


def to_golden(path: str, case: SpecCase) -> GoldenCase:
    values, pool = bytearray(), bytearray()  # one operandValues and one pool for every subgraph, as in a HAL model
    main = _subgraph(case.main, values, pool)
    referenced = tuple(_subgraph(g, values, pool) for g in case.referenced)
    inputs = []
    for index in case.main.inputs:
        operand, declared = case.main.operands[index], main.operands[index]
        # an input with no value is omitted (CTS passes no buffer: hasNoValue), whatever its dimensions
        inputs.append(_array(declared.type, operand.dimensions, operand.value) if operand.value else None)
    outputs = tuple(_array(main.operands[i].type, case.main.operands[i].dimensions, case.main.operands[i].value or ())
                    for i in case.main.outputs)
    ignored = tuple(case.main.operands[i].ignored for i in case.main.outputs)
    return GoldenCase(path, case, main, referenced, bytes(values), tuple(inputs), outputs, ignored, bytes(pool))


def spec_files(paths: list[str]) -> list[str]:
    """Every ``*.mod.py`` under ``paths`` (files or directories, searched recursively), sorted."""
    found = []
    for path in paths:
        if os.path.isfile(path):
            found.append(os.path.abspath(path))
            continue
        if not os.path.isdir(path):
            raise FileNotFoundError(f"spec path {path!r} is neither a file nor a directory")
        for root, _dirs, files in os.walk(path):
            found += [os.path.join(os.path.abspath(root), f) for f in files if f.endswith(".mod.py")]
    return sorted(found)


def load_corpus(paths: list[str]) -> Corpus:
    cases: list[GoldenCase] = []
    unexpressed: list[Unexpressed] = []
    files = spec_files(paths)
    for path in files:
        try:
            spec_cases = run_spec(path)
        except SpecError as error:
            unexpressed.append(Unexpressed(path, os.path.basename(path), str(error), error.line))
            continue
        for case in spec_cases:
            outside = _outside_names(case)
            if outside:
                unexpressed.append(Unexpressed(path, case.name, f"{path}:{case.line}: {', '.join(outside)} "
                                               f"outside the harness's data model", case.line, outside))
                continue
            try:
                cases.append(to_golden(path, case))
            except (KeyError, ValueError, TypeError) as error:
                unexpressed.append(Unexpressed(path, case.name, f"{path}:{case.line}: {type(error).__name__}: {error}",
                                               case.line))
    return Corpus(tuple(cases), tuple(unexpressed), len(files))
