"""The reference driver's custom-call targets: native C code, built at first use, and the
numpy functions that say what each computes (SPEC section 5).

``reference_targets(flags)`` declares them; seeded-bug drivers declare the same targets
built with a ``-DCC_MUTANT_...`` flag.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

import numpy as np

from harness.api.shapes import Leaf, Shape, TupleShape, leaf_values, leaves
from harness.api.custom_calls import (
    C_INCLUDE_DIR, CallCase, CaseSpace, Choice, CustomCallTarget, Integers, Opaque, OperandShapes, Text,
)

HERE = Path(__file__).parent
DEVICE = "HarnessDevice"  # the platform of device-style targets; host memory stands in for device memory
ADD_DTYPES = {"float32": 0, "float64": 1, "int32": 2}


def build_targets(flags: tuple[str, ...] = ()) -> Path:
    """The targets' library built with ``flags`` (instrumented when the harness asks for coverage)."""
    from harness.tooling.coverage import requested

    return _built_targets(tuple(flags), requested())


@functools.lru_cache(maxsize=None)
def _built_targets(flags: tuple[str, ...], coverage: bool) -> Path:
    from harness.tooling import build_shared_library

    return build_shared_library("cc-targets", [HERE / "targets.c"], flags,
                                include_dirs=[C_INCLUDE_DIR], coverage=coverage)


# ---------------------------------------------------------------- A[i] = B[i % 128] + C[i]

def add_mod128(operands: tuple, opaque: bytes) -> np.ndarray:
    b, c = operands
    with np.errstate(over="ignore"):  # float overflow gives inf, as in C
        return b[np.arange(c.size) % 128] + c


ADD_HOST_CASES = CaseSpace.fixed(CallCase((Leaf("float32", (128,)), Leaf("float32", (2048,))), Leaf("float32", (2048,))))


def add_device_case(dtype: str, n: int) -> CallCase:
    return CallCase((Leaf(dtype, (128,)), Leaf(dtype, (n,))), Leaf(dtype, (n,)), struct.pack("<qq", n, ADD_DTYPES[dtype]))


# Small counts, the seed's 2048, and past 65535 (a count kept in 16 bits wraps there).
ADD_DEVICE_CASES = CaseSpace({"dtype": Choice(tuple(sorted(ADD_DTYPES))),
                              "n": Integers(((0, 300), (2048, 2048), (65536, 65700)))}, add_device_case)


# ---------------------------------------------------------------- tuples, and a scratch output leaf

def encode_tree(shape: Shape) -> bytes:
    """A shape as int64 words: a leaf is (0, bytes), a tuple is (1, count, elements...)."""
    if isinstance(shape, Leaf):
        return struct.pack("<qq", 0, shape.nbytes)
    return struct.pack("<qq", 1, len(shape.elements)) + b"".join(encode_tree(e) for e in shape.elements)


def tuple_concat(operands: tuple, opaque: bytes) -> tuple:
    joined = b"".join(np.ascontiguousarray(v).tobytes() for v in leaf_values(operands))
    return (np.frombuffer(joined, dtype=np.uint8), None)  # the second leaf is scratch


def concat_case(operands: tuple[Shape, ...]) -> CallCase:
    total = sum(leaf.nbytes for op in operands for _, leaf in leaves(op))
    output = TupleShape((Leaf("uint8", (total,)), Leaf("uint8", (total,))))
    return CallCase(operands, output, encode_tree(TupleShape(operands)))


CONCAT_CASES = CaseSpace({"operands": OperandShapes(count=(1, 3), max_depth=3, max_side=4)}, concat_case)


# ---------------------------------------------------------------- opaque and errors

def echo_opaque(operands: tuple, opaque: bytes) -> np.ndarray:
    return np.frombuffer(struct.pack("<q", len(opaque)) + opaque, dtype=np.uint8)


def echo_case(opaque: bytes) -> CallCase:
    return CallCase((), Leaf("uint8", (8 + len(opaque),)), opaque)


ECHO_CASES = CaseSpace({"opaque": Opaque(max_size=256 * 1024)}, echo_case)


def failure_message(opaque: bytes) -> str:
    return "fail_with_status: " + opaque.decode("utf-8", "replace")


def failing_case(message: str) -> CallCase:
    return CallCase((), Leaf("float32", (1,)), message.encode("utf-8"))


# Short messages and long ones (past the 200 or 256 bytes a fixed message buffer would hold).
FAILING_CASES = CaseSpace({"message": Text(((0, 200), (201, 900)))}, failing_case)


#: The seeded-bug and variant flags xla_ffi_targets.cc knows (the others leave it as it is, and it is
#: not built again): two of targets.c's, and its own XLA_MUTANT_ ones, which targets.c does not know.
XLA_FLAGS = ("-DCC_MUTANT_SEGFAULT", "-DCC_VARIANT_SCRATCH_LEFT_DIRTY", "-DXLA_MUTANT_ONE_BYTE_OPAQUE_DROPPED",
             "-DXLA_MUTANT_INPUT_IN_PLACE")


def _xla_include_dir() -> str:
    """The XLA headers jaxlib ships, found without importing jax: importing it takes about a second
    and starts nothing this process needs (the handlers run in the driver's service), and a
    process without jax forks safely (the packed-function tests fork).  jax.ffi.include_dir()
    names the same directory; it is asked only when jaxlib's layout ever moves the headers."""
    import jaxlib

    headers = Path(jaxlib.__file__).resolve().parent / "include"
    if (headers / "xla" / "ffi" / "api" / "ffi.h").is_file():
        return str(headers)
    import jax.ffi

    return jax.ffi.include_dir()


def build_xla_targets(flags: tuple[str, ...] = ()) -> Path:
    """The typed-FFI handlers, built against the XLA headers jaxlib ships (needs jax); instrumented
    when the harness asks for coverage."""
    from harness.tooling.coverage import requested

    return _built_xla_targets(tuple(flags), requested())


@functools.lru_cache(maxsize=None)
def _built_xla_targets(flags: tuple[str, ...], coverage: bool) -> Path:
    from harness.tooling import build_shared_library

    return build_shared_library("xla-ffi-targets", [HERE / "xla_ffi_targets.cc"], flags,
                                include_dirs=[_xla_include_dir()], language="c++", coverage=coverage)


def reference_targets(flags: tuple[str, ...] = ()) -> list[CustomCallTarget]:
    library = functools.partial(build_targets, tuple(flags))
    xla_library = functools.partial(build_xla_targets, tuple(f for f in flags if f in XLA_FLAGS))
    return [
        CustomCallTarget("add_mod128", "Host", "host", library, "add_mod128_host", add_mod128, ADD_HOST_CASES,
                         description="the seed's A[i] = B[i % 128] + C[i], F32[128] and F32[2048]",
                         xla_symbol="HarnessAddMod128", xla_library=xla_library),
        CustomCallTarget("add_mod128", DEVICE, "device", library, "add_mod128_device", add_mod128, ADD_DEVICE_CASES,
                         description="A[i] = B[i % 128] + C[i] for any n and three dtypes; n and dtype in opaque"),
        CustomCallTarget("tuple_concat", "Host", "host-unified", library, "tuple_concat_host", tuple_concat,
                         CONCAT_CASES, scratch=((1,),),
                         description="nested tuple operands concatenated through a scratch output leaf",
                         xla_symbol="HarnessTupleConcat", xla_library=xla_library),
        CustomCallTarget("tuple_concat", DEVICE, "device", library, "tuple_concat_device", tuple_concat,
                         CONCAT_CASES, scratch=((1,),), description="the same with the flat buffers array"),
        CustomCallTarget("echo_opaque", "Host", "host-unified", library, "echo_opaque_host", echo_opaque, ECHO_CASES,
                         description="writes opaque's length and bytes to its output",
                         xla_symbol="HarnessEchoOpaque", xla_opaque=True, xla_library=xla_library),
        CustomCallTarget("echo_opaque", DEVICE, "device", library, "echo_opaque_device", echo_opaque, ECHO_CASES,
                         description="writes opaque's length and bytes to its output"),
        CustomCallTarget("fail_with_status", "Host", "host-unified", library, "fail_with_status_host",
                         cases=FAILING_CASES, error=failure_message, description="always fails through the status",
                         xla_symbol="HarnessFailWithStatus", xla_opaque=True, xla_library=xla_library),
        CustomCallTarget("fail_with_status", DEVICE, "device-status", library, "fail_with_status_device",
                         cases=FAILING_CASES, error=failure_message, description="always fails through the status"),
    ]
