"""The Acme device and its prepared models, presented through the harness's Driver API."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import (BufferDesc, BufferRole, Capabilities, DriverError, ErrorStatus, ExecutionResult, Model,
                             OperandType, OutputShape, Request, numpy_dtype)

from acme_driver import checks, kernels
from acme_driver.checks import failure, invalid


class AcmePreparedModel:
    """A validated model with its constants read: executing it interprets its operations in order."""

    def __init__(self, model: Model, constants: dict[int, np.ndarray]) -> None:
        self.model = model
        self.constants = constants

    def execute(self, request: Request) -> ExecutionResult:
        main = self.model.main
        if len(request.inputs) != len(main.input_indexes) or len(request.outputs) != len(main.output_indexes):
            raise invalid(f"{len(request.inputs)} inputs and {len(request.outputs)} outputs for a model of "
                          f"{len(main.input_indexes)} and {len(main.output_indexes)}")
        pools = [checks.check_memory(pool, f"request pool {n}") for n, pool in enumerate(request.pools)]
        values = dict(self.constants)
        for number, (argument, index) in enumerate(zip(request.inputs, main.input_indexes)):
            operand = main.operands[index]
            dims = checks.check_argument(argument, operand, pools, f"input {number}")
            if not checks.fully_known(operand, dims):
                raise invalid(f"input {number}: dimensions {dims} are not fully specified")
            if operand.type == OperandType.TENSOR_FLOAT32 and len(dims) > kernels.MAX_RANK:
                raise invalid(f"input {number}: rank {len(dims)} (at most {kernels.MAX_RANK})")
            raw = checks.read(pools[argument.location.pool_index], argument.location.offset, argument.location.length)
            values[index] = np.frombuffer(raw, numpy_dtype(operand.type)).reshape(dims)
        output_dims = [checks.check_argument(a, main.operands[i], pools, f"output {n}")
                       for n, (a, i) in enumerate(zip(request.outputs, main.output_indexes))]
        for argument in request.outputs:
            checks.check_writable(pools[argument.location.pool_index], f"request pool {argument.location.pool_index}")
        for number, operation in enumerate(main.operations):
            try:
                result = kernels.KERNELS[operation.type].run([values[i] for i in operation.inputs])
            except kernels.KernelFailure as error:
                raise failure(f"operation {number} ({operation.type.name}): {error}") from None
            (index,) = operation.outputs
            if result.ndim > kernels.MAX_RANK or checks.merged(main.operands[index].dimensions, result.shape) is None:
                raise failure(f"operation {number} ({operation.type.name}) makes shape {result.shape}, "
                              f"where the model declares {main.operands[index].dimensions}")
            values[index] = result
        return self._write_outputs(request, pools, output_dims, values)

    def _write_outputs(self, request: Request, pools: Sequence, output_dims: Sequence[tuple[int, ...]],
                       values: dict[int, np.ndarray]) -> ExecutionResult:
        main = self.model.main
        results = [np.ascontiguousarray(values[i], numpy_dtype(main.operands[i].type)) for i in main.output_indexes]
        shapes = []
        for argument, value, dims in zip(request.outputs, results, output_dims):
            if checks.merged(dims, value.shape) is None:
                raise failure(f"an output of shape {value.shape} cannot be given as {dims}")
            shapes.append(OutputShape(tuple(value.shape), value.nbytes <= argument.location.length))
        if not all(shape.is_sufficient for shape in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output region is too small", tuple(shapes))
        for argument, value in zip(request.outputs, results):
            checks.write(pools[argument.location.pool_index], argument.location.offset, value.tobytes())
        return ExecutionResult(True, tuple(shapes))


class AcmeDevice:
    """The driver: what it declares, which operations it runs, preparation; no memory domains."""

    name = "acme"
    version = "0.1.0"

    def capabilities(self) -> Capabilities:
        return Capabilities(memory_kinds=frozenset(checks.MEMORY_KINDS), memory_domains=False,
                            operations=frozenset(kernels.KERNELS),
                            operand_types=frozenset({OperandType.TENSOR_FLOAT32, OperandType.INT32}),
                            dynamic_buffers=False)

    def get_supported_operations(self, model: Model) -> list[bool]:
        supported = []
        for operation in model.main.operations:
            try:
                kernels.check_signature(operation, model.main.operands)
            except kernels.Unsupported:
                supported.append(False)
            else:
                supported.append(True)
        return supported

    def prepare_model(self, model: Model) -> AcmePreparedModel:
        checks.check_structure(model.main)
        for number, operation in enumerate(model.main.operations):
            try:
                kernels.check_signature(operation, model.main.operands)
            except kernels.Unsupported as error:
                raise invalid(f"operation {number} ({operation.type.name}): {error}") from None
        return AcmePreparedModel(model, checks.read_constants(model))

    def allocate(self, desc: BufferDesc, prepared_models: list, input_roles: list[BufferRole],
                 output_roles: list[BufferRole]) -> tuple:
        raise failure("Acme has no driver-managed buffers (memory domains)")
