"""Native driver figures: the sample C++ driver through the tvm-ffi adapter, in this process.

    python benchmarks/bench_native.py [--repeat N]

(a) median latency of one ADD of two 1 KiB float32 tensors through `execute`, native sample vs
    the Python reference driver (same request, same run);
(b) throughput of ADD on 64 MiB float32 inputs through the native sample, as a ratio to
    ``np.add(a, b, out=c)`` on the same mapped arrays in the same run (1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmark's helpers

import results  # noqa: E402
from bench_reference import bench_large, bench_small  # noqa: E402

from harness.plugins.native_sample import sample_device  # noqa: E402
from reference_driver import ReferenceDevice  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    results.add_option(parser)
    args = parser.parse_args()
    native, reference = sample_device(), ReferenceDevice()
    small_native = bench_small(args.repeat * 20, native)
    small_reference = bench_small(args.repeat * 20, reference)
    print(f"(a) small ADD execute: native sample {small_native * 1e6:.1f} us, Python reference "
          f"{small_reference * 1e6:.1f} us (native / reference {small_native / small_reference:.2f})")
    driver, numpy = bench_large(args.repeat, native)
    print(f"(b) 64 MiB ADD: native sample {driver * 1e3:.1f} ms, np.add(out=) {numpy * 1e3:.1f} ms; "
          f"throughput ratio {numpy / driver:.2f}")
    results.write("bench_native", {
        "small_add_execute_median_us": {"native_sample": round(small_native * 1e6, 1),
                                         "reference": round(small_reference * 1e6, 1)},
        "small_add_native_over_reference": round(small_native / small_reference, 3),
        "large_add_64mib_execute_median_ms": round(driver * 1e3, 2),
        "large_add_64mib_numpy_median_ms": round(numpy * 1e3, 2),
        "large_add_throughput_ratio": round(numpy / driver, 3), "repeat": args.repeat}, args.results)


if __name__ == "__main__":
    main()
