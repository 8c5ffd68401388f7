"""Reference driver figures: small-call latency and large-tensor throughput.

    python benchmarks/bench_reference.py [--repeat N]

(a) median latency of one ADD of two 1 KiB float32 tensors through `execute`;
(b) throughput of ADD on 64 MiB float32 inputs, as a ratio to ``np.add(a, b, out=c)``
    on the same mapped arrays in the same run (1.0 = no overhead; target >= 0.7);
(c) MobileNet-sized float32 CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV_2D through ``execute``
    against onnxruntime's Conv / ConvTranspose on the same inputs in the same run, median times
    and their ratio (target: the reference within 3x of onnxruntime).  The reference computes in
    float64 (one rounding to float32 at the end), onnxruntime in float32.  On a loaded two-core
    machine OpenBLAS's second thread waits on a descheduled partner: run with
    OPENBLAS_NUM_THREADS=1 for steady figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling results module

import results  # noqa: E402
from harness.judging.builders import binary_model, pack_request  # noqa: E402
from reference_driver import ReferenceDevice  # noqa: E402


def _timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def bench_small(repeat: int, device=None) -> float:
    elements = 1024 // 4
    model = binary_model(dims=(elements,))
    prepared = (device or ReferenceDevice()).prepare_model(model)
    request, _, _ = pack_request(model, [np.ones(elements, np.float32)] * 2)
    prepared.execute(request)
    return statistics.median(_timed(lambda: prepared.execute(request), repeat))


def bench_large(repeat: int, device=None) -> tuple[float, float]:
    """(driver, numpy) median seconds of a 64 MiB ADD; ``device`` defaults to the reference."""
    elements = (64 << 20) // 4
    model = binary_model(dims=(elements,))
    prepared = (device or ReferenceDevice()).prepare_model(model)
    rng = np.random.default_rng(0)
    request, in_memory, out_memory = pack_request(model, [rng.random(elements, np.float32)] * 2)
    inputs = in_memory.map(writable=False).view(np.float32)
    a, b = inputs[:elements], inputs[elements:]
    c = out_memory.map(writable=True).view(np.float32)
    prepared.execute(request)
    np.add(a, b, out=c)
    driver = statistics.median(_timed(lambda: prepared.execute(request), repeat))
    numpy = statistics.median(_timed(lambda: np.add(a, b, out=c), repeat))
    assert np.array_equal(c, a + b)
    return driver, numpy


#: (name, input NHWC, filter in NNAPI's layout, stride, padding) of MobileNet v1-sized layers, and a
#: decoder's upsampling transposed convolution (filter [depth_out, h, w, depth_in]).
CONV_LAYERS = (
    ("CONV_2D 1x1, 112x112x32 -> 64 (conv_pw_1)", (1, 112, 112, 32), (64, 1, 1, 32), 1, 0),
    ("CONV_2D 3x3 stride 2, 224x224x3 -> 32 (conv1)", (1, 224, 224, 3), (32, 3, 3, 3), 2, 1),
    ("DEPTHWISE_CONV_2D 3x3 stride 2, 112x112x64 (conv_dw_2)", (1, 112, 112, 64), (1, 3, 3, 64), 2, 1),
    ("DEPTHWISE_CONV_2D 3x3, 56x56x128 (conv_dw_3)", (1, 56, 56, 128), (1, 3, 3, 128), 1, 1),
    ("TRANSPOSE_CONV_2D 4x4 stride 2, 14x14x256 -> 28x28x128", (1, 14, 14, 256), (128, 4, 4, 256), 2, 1),
)


def _reference_conv(kind: str, x: np.ndarray, f: np.ndarray, bias: np.ndarray, stride: int, pad: int):
    """A prepared one-operation model and its request (explicit padding, NHWC, no activation)."""
    from harness.api.hal import OperandType, OperationType
    from harness.judging.builders import ModelBuilder

    b = ModelBuilder()
    f32 = OperandType.TENSOR_FLOAT32
    inputs = [b.input(f32, x.shape), b.constant(f32, f), b.constant(f32, bias)]
    pads = [b.scalar(pad) for _ in range(4)]
    strides = [b.scalar(stride), b.scalar(stride)]
    if kind == "CONV_2D":
        op, extra = OperationType.CONV_2D, []
        out = (x.shape[1] + 2 * pad - f.shape[1]) // stride + 1
    elif kind == "DEPTHWISE_CONV_2D":
        op, extra = OperationType.DEPTHWISE_CONV_2D, [b.scalar(f.shape[3] // x.shape[3])]
        out = (x.shape[1] + 2 * pad - f.shape[1]) // stride + 1
    else:
        op, extra = OperationType.TRANSPOSE_CONV_2D, []
        out = (x.shape[1] - 1) * stride + f.shape[1] - 2 * pad
    tail = [b.scalar(0)] + ([b.constant(OperandType.BOOL, False)] if kind == "TRANSPOSE_CONV_2D" else [])
    depth_out = f.shape[3] if kind == "DEPTHWISE_CONV_2D" else f.shape[0]
    b.operation(op, [*inputs, *pads, *strides, *extra, *tail], f32, (x.shape[0], out, out, depth_out))
    model = b.build()
    request, _, out_memory = pack_request(model, [x])
    return ReferenceDevice().prepare_model(model), request, out_memory, (x.shape[0], out, out, depth_out)


def _onnx_conv(kind: str, x: np.ndarray, f: np.ndarray, bias: np.ndarray, stride: int, pad: int):
    """The same layer as an onnxruntime session on NCHW data, and its input."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    if kind == "TRANSPOSE_CONV_2D":
        weights, op, attrs = f.transpose(3, 0, 1, 2), "ConvTranspose", {}  # [in, out, h, w]
    elif kind == "DEPTHWISE_CONV_2D":
        weights, op, attrs = f.transpose(3, 0, 1, 2), "Conv", {"group": x.shape[3]}  # [out, 1, h, w]
    else:
        weights, op, attrs = f.transpose(0, 3, 1, 2), "Conv", {}
    node = helper.make_node(op, ["x", "w", "b"], ["y"], strides=[stride, stride], pads=[pad] * 4,
                            kernel_shape=list(f.shape[1:3]), **attrs)
    graph = helper.make_graph([node], "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ascontiguousarray(weights), "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session, np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def bench_convolutions(repeat: int) -> list[tuple[str, float, float]]:
    """(layer, reference median s, onnxruntime median s) per layer of CONV_LAYERS, outputs checked equal."""
    rng = np.random.default_rng(0)
    timings = []
    for name, in_shape, f_shape, stride, pad in CONV_LAYERS:
        kind = name.split()[0]
        x = rng.uniform(-1, 1, in_shape).astype(np.float32)
        f = rng.uniform(-1, 1, f_shape).astype(np.float32)
        bias = rng.uniform(-1, 1, f_shape[3] if kind == "DEPTHWISE_CONV_2D" else f_shape[0]).astype(np.float32)
        # each engine timed on its own, the reference before onnxruntime's session exists: both keep
        # threads spinning after a call (OpenBLAS's, onnxruntime's pool), and interleaved on two cores
        # each spun through the other's calls (a reference median of 16 ms whose best was 1.7 ms)
        prepared, request, out_memory, out_shape = _reference_conv(kind, x, f, bias, stride, pad)
        prepared.execute(request)
        reference = statistics.median(_timed(lambda: prepared.execute(request), repeat))
        got = np.frombuffer(out_memory.read(), np.float32).reshape(out_shape)
        session, x_nchw = _onnx_conv(kind, x, f, bias, stride, pad)
        (expected,) = session.run(None, {"x": x_nchw})
        onnx = statistics.median(_timed(lambda: session.run(None, {"x": x_nchw}), repeat))
        del session
        np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-3)
        timings.append((name, reference, onnx))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    results.add_option(parser)
    args = parser.parse_args()
    small = bench_small(args.repeat * 20)
    driver, numpy = bench_large(args.repeat)
    print(f"(a) small ADD (2 x 1 KiB float32) execute latency, median: {small * 1e6:.1f} us")
    print(f"(b) ADD on 64 MiB float32: execute {driver * 1e3:.1f} ms, np.add(out=) {numpy * 1e3:.1f} ms, "
          f"throughput ratio {numpy / driver:.2f} (target >= 0.7)")
    print("(c) float32 convolutions, execute against onnxruntime (same inputs, median; target ratio <= 3):")
    convolutions = bench_convolutions(args.repeat)
    for name, reference, onnx in convolutions:
        print(f"    {name}: reference {reference * 1e3:.1f} ms, onnxruntime {onnx * 1e3:.2f} ms, ratio {reference / onnx:.1f}")
    results.write("bench_reference", {
        "small_add_execute_median_us": round(small * 1e6, 1),
        "large_add_64mib_execute_median_ms": round(driver * 1e3, 2),
        "large_add_64mib_numpy_median_ms": round(numpy * 1e3, 2),
        "large_add_throughput_ratio": round(numpy / driver, 3), "large_add_throughput_ratio_target": 0.7,
        "convolutions_against_onnxruntime": [
            {"layer": name, "reference_median_ms": round(reference * 1e3, 2), "onnxruntime_median_ms": round(onnx * 1e3, 3),
             "ratio": round(reference / onnx, 2), "ratio_target": 3.0} for name, reference, onnx in convolutions],
        "repeat": args.repeat}, args.results)


if __name__ == "__main__":
    main()
