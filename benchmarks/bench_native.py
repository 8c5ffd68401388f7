"""Native driver figures: the sample C++ driver through the tvm-ffi adapter, in this process.

    python benchmarks/bench_native.py [--repeat N]

(a) median latency of one ADD of two 1 KiB float32 tensors through `execute`, native sample vs
    the Python reference driver (same request, same run);
(b) throughput of ADD on 64 MiB float32 inputs through the native sample, as a ratio to
    ``np.add(a, b, out=c)`` on the same mapped arrays in the same run (1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from harness.builders import binary_model, pack_request
from plugins.native_sample import sample_device
from reference_driver import ReferenceDevice


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_small(device, repeat: int) -> float:
    elements = 1024 // 4
    model = binary_model(dims=(elements,))
    prepared = device.prepare_model(model)
    request, _, _ = pack_request(model, [np.ones(elements, np.float32)] * 2)
    prepared.execute(request)
    return _median(lambda: prepared.execute(request), repeat)


def bench_large(device, repeat: int) -> tuple[float, float]:
    elements = (64 << 20) // 4
    model = binary_model(dims=(elements,))
    prepared = device.prepare_model(model)
    rng = np.random.default_rng(0)
    request, in_memory, out_memory = pack_request(model, [rng.random(elements, np.float32)] * 2)
    inputs = in_memory.map(writable=False).view(np.float32)
    a, b = inputs[:elements], inputs[elements:]
    c = out_memory.map(writable=True).view(np.float32)
    prepared.execute(request)
    assert np.array_equal(c, a + b)
    driver = _median(lambda: prepared.execute(request), repeat)
    numpy = _median(lambda: np.add(a, b, out=c), repeat)
    return driver, numpy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    native, reference = sample_device(), ReferenceDevice()
    small_native = bench_small(native, args.repeat * 20)
    small_reference = bench_small(reference, args.repeat * 20)
    print(f"(a) small ADD execute: native sample {small_native * 1e6:.1f} us, Python reference "
          f"{small_reference * 1e6:.1f} us (native / reference {small_native / small_reference:.2f})")
    driver, numpy = bench_large(native, args.repeat)
    print(f"(b) 64 MiB ADD: native sample {driver * 1e3:.1f} ms, np.add(out=) {numpy * 1e3:.1f} ms; "
          f"throughput ratio {numpy / driver:.2f}")


if __name__ == "__main__":
    main()
