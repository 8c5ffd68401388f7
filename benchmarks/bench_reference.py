"""Reference driver figures: small-call latency and large-tensor throughput.

    python benchmarks/bench_reference.py [--repeat N]

(a) median latency of one ADD of two 1 KiB float32 tensors through `execute`;
(b) throughput of ADD on 64 MiB float32 inputs, as a ratio to ``np.add(a, b, out=c)``
    on the same mapped arrays in the same run (1.0 = no overhead; target >= 0.7).
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
    results.write("bench_reference", {
        "small_add_execute_median_us": round(small * 1e6, 1),
        "large_add_64mib_execute_median_ms": round(driver * 1e3, 2),
        "large_add_64mib_numpy_median_ms": round(numpy * 1e3, 2),
        "large_add_throughput_ratio": round(numpy / driver, 3), "large_add_throughput_ratio_target": 0.7,
        "repeat": args.repeat}, args.results)


if __name__ == "__main__":
    main()
