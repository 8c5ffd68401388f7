"""Out-of-tree drivers the acceptance tests write next to a run (``--driver=FILE.py:factory``)."""

from __future__ import annotations

import textwrap

LEAKS_AFTER_FOUR = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class LeaksAfterFour(ReferenceDevice):
        """Validates each allocation first (an invalid one is refused as SPEC says), but serves
        only four valid ones in its life: releasing never frees what a buffer held."""

        served = 0

        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
            if self.served >= 4:
                buffer.release()
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of device memory")
            self.served += 1
            return buffer, token


    def factory():
        return LeaksAfterFour()
    '''
)

HOLDS_TWO = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ErrorStatus
    from reference_driver import ReferenceDevice


    class HoldsTwo(ReferenceDevice):
        """A correct driver with room for two live buffers: a third is refused with GENERAL_FAILURE
        (a memory limit, DOM-ALLOC-3), and a release gives its room back."""

        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
            if len(self.tokens) > 2:
                buffer.release()
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "room for two buffers")
            return buffer, token


    def factory():
        return HoldsTwo()
    '''
)

SHAPES_AS_LISTS = textwrap.dedent(
    '''
    from harness.api.hal import DriverError, ExecutionResult, OutputShape
    from reference_driver import ReferenceDevice, ReferencePreparedModel


    def _listed(shapes):
        return [OutputShape(list(s.dimensions), s.is_sufficient) for s in shapes]


    class Prepared(ReferencePreparedModel):
        """Reports output shapes as lists, dimensions as lists: the same values as the reference's."""

        def execute(self, request):
            try:
                result = super().execute(request)
            except DriverError as error:
                error.output_shapes = _listed(error.output_shapes or ())
                raise
            return ExecutionResult(result.output_sufficient_size, _listed(result.output_shapes), result.timing)


    def factory():
        return ReferenceDevice(prepared_model_class=Prepared)
    '''
)

NUMPY_TOKENS = textwrap.dedent(
    '''
    import numpy as np
    from reference_driver import ReferenceDevice


    class NumpyTokens(ReferenceDevice):
        """Hands out its tokens as numpy integers: positive integers all the same (DOM-ALLOC-3)."""

        def allocate(self, desc, prepared_models, input_roles, output_roles):
            buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
            return buffer, np.int64(token)


    def factory():
        return NumpyTokens()
    '''
)

NUMPY_ANSWERS = textwrap.dedent(
    '''
    import numpy as np
    from reference_driver import ReferenceDevice


    class NumpyAnswers(ReferenceDevice):
        """Answers get_supported_operations with a numpy array of bools: one bool per operation."""

        def get_supported_operations(self, model):
            return np.array(super().get_supported_operations(model), dtype=bool)


    def factory():
        return NumpyAnswers()
    '''
)

INTEGER_ARITHMETIC = textwrap.dedent(
    '''
    import dataclasses

    from harness.api.hal import OperandType, OperationType
    from reference_driver import ReferenceDevice

    OPERATIONS = frozenset({OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV})
    TYPES = frozenset({OperandType.TENSOR_INT32, OperandType.INT32})


    class IntegerArithmetic(ReferenceDevice):
        """Element-wise arithmetic on TENSOR_INT32 alone (NNAPI: with no fused activation but NONE)."""

        def capabilities(self):
            return dataclasses.replace(super().capabilities(), operations=OPERATIONS, operand_types=TYPES)


    def factory():
        return IntegerArithmetic()
    '''
)

ACTIVATIONS_ONLY = textwrap.dedent(
    '''
    import dataclasses

    from harness.api.hal import OperandType, OperationType
    from reference_driver import ReferenceDevice

    OPERATIONS = frozenset({OperationType.RELU, OperationType.RELU1, OperationType.RELU6})


    class ActivationsOnly(ReferenceDevice):
        """RELU, RELU1 and RELU6 on FLOAT32, and nothing else: one-input models, no constants."""

        def capabilities(self):
            return dataclasses.replace(super().capabilities(), operations=OPERATIONS,
                                       operand_types=frozenset({OperandType.TENSOR_FLOAT32, OperandType.INT32}))


    def factory():
        return ActivationsOnly()
    '''
)

TWO_TRANSPOSE_BUGS = textwrap.dedent(
    '''
    import numpy as np

    from harness.api.hal import OperationType
    from reference_driver import ReferenceDevice
    from reference_driver.ops import KERNELS, Kernel

    _TRANSPOSE = KERNELS[OperationType.TRANSPOSE]


    def _run(values, ins, out_op, out):
        rank = np.ndim(values[0])
        if rank == 4:
            raise ValueError("rank-4 transposes are not tiled yet")
        result = _TRANSPOSE.run(values, ins, out_op, out)
        if rank == 2:
            result = np.asarray(result).copy()
            result.flat[0] = result.flat[-1] + 1
        return result


    def factory():
        """Two bugs in one kernel: a wrong first element for rank 2, an exception for rank 4."""
        return ReferenceDevice(kernels={**KERNELS, OperationType.TRANSPOSE: Kernel(_TRANSPOSE.validate, _run)})
    '''
)
