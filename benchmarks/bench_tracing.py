"""What tracing a Python driver's lines costs, against the same calls untraced, in one run.

    python benchmarks/bench_tracing.py [--calls N] [--rounds R]

A guided fuzz run traces the driver's own code in its service (`harness.service.coverage`): the
compiled tracer when the harness can build it, else a Python trace function.  Here the reference
driver prepares and executes a small ADD model ``--calls`` times in this process, untraced, under
the Python tracer and under the compiled one, the three interleaved over ``--rounds`` rounds; each
figure is the fastest round's CPU time per call, and each tracer's is also given as a ratio of the
untraced figure.  Both tracers must reach the same edges (checked here too).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

from harness.api.hal import OperationType  # noqa: E402
from harness.judging.builders import binary_model, pack_request  # noqa: E402
from harness.service.coverage import LINE_TRACER_ENVIRONMENT, ServiceCoverage, build_line_tracer, driver_paths  # noqa: E402
from reference_driver import ReferenceDevice  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    results.add_option(parser)
    args = parser.parse_args()
    compiled = build_line_tracer()
    device = ReferenceDevice()
    model = binary_model(OperationType.ADD, dims=(4, 4))
    data = np.ones((4, 4), np.float32)

    def calls() -> float:
        started = time.process_time()
        for _ in range(args.calls):
            request, _, _ = pack_request(model, [data, data])
            device.prepare_model(model).execute(request)
        return (time.process_time() - started) / args.calls

    best: dict[str, float] = {}
    edges: dict[str, set[int]] = {}
    modes = ["untraced", "python", *(["compiled"] if compiled else [])]
    for _ in range(args.rounds):
        for mode in modes:
            os.environ[LINE_TRACER_ENVIRONMENT] = compiled if mode == "compiled" and compiled else ""
            coverage = ServiceCoverage(driver_paths(device))
            if mode != "untraced":
                coverage.start()
            try:
                seconds = calls()
            finally:
                sys.settrace(None)
                threading.settrace(None)  # type: ignore[arg-type]
            best[mode] = min(best.get(mode, float("inf")), seconds)
            if mode != "untraced":
                edges.setdefault(mode, set()).update(coverage.take())
    figures = {"calls_per_round": args.calls, "rounds": args.rounds, "compiled_tracer_built": bool(compiled),
               "cpu_us_per_call": {mode: round(seconds * 1e6, 1) for mode, seconds in best.items()},
               "ratio_to_untraced": {mode: round(best[mode] / best["untraced"], 2) for mode in modes if mode != "untraced"},
               "same_edges": len(set(map(frozenset, edges.values()))) == 1, "edges": len(edges["python"])}
    for mode in modes:
        ratio = f" ({best[mode] / best['untraced']:.2f}x untraced)" if mode != "untraced" else ""
        print(f"{mode:>9}: {best[mode] * 1e6:7.1f} us CPU per prepare and execute{ratio}")
    print(f"edges reached: {figures['edges']}; the same under both tracers: {figures['same_edges']}")
    results.write("bench_tracing", figures, args.results)


if __name__ == "__main__":
    main()
