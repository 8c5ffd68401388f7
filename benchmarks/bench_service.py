"""Driver service figures, each against its limit measured in the same run.

    python benchmarks/bench_service.py [--seconds S]

(a) round trip of a trivial call through the service vs a raw SOCK_SEQPACKET socketpair
    ping-pong between two processes (target: <= 3x);
(b) execute of a small ADD whose input pool is 256 MiB vs 4 KiB, through the service
    (target: ratio <= 1.5: pools cross as descriptors, not bytes);
(c) calls per second with 1, 2 and 4 client threads;
(d) what the kernel's sandbox (Landlock) costs per call: a ping and a small execute through a
    sandboxed service and through one with the sandbox left off, called in turn in one run
    (a ratio; the sandbox checks opening files, not a call's socket traffic, so about 1 is expected).
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling results module

import results  # noqa: E402
from harness.judging.builders import binary_model  # noqa: E402
from harness.api.hal import DataLocation, Request, RequestArgument  # noqa: E402
from harness.api.memory import create_ashmem  # noqa: E402
from harness.service import DriverService  # noqa: E402


def median_call_seconds(call, seconds: float) -> float:
    return statistics.median(_samples(call, seconds))


def _samples(call, seconds: float) -> list[float]:
    samples = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def raw_ping_pong(seconds: float, rounds: int = 1, between=None) -> float:
    """Median round trip of a 64-byte message to another process and back.  With
    ``rounds``, the time is split into rounds and ``between(seconds)`` runs after each,
    so that both measurements see the same machine (this one's speed drifts)."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        here.close()
        while True:
            message = there.recv(4096)
            if not message:
                os._exit(0)
            there.send(message)
    there.close()
    payload = b"x" * 64

    def ping():
        here.send(payload)
        here.recv(4096)

    try:
        samples = []
        for _ in range(rounds):
            samples += _samples(ping, seconds / rounds)
            if between is not None:
                between(seconds / rounds)
        return statistics.median(samples)
    finally:
        here.close()
        os.waitpid(pid, 0)


def small_add_request(pool_size: int, model) -> tuple[Request, list]:
    pool = create_ashmem(pool_size)
    out = create_ashmem(4096)
    pool.write(np.ones(2 * 256, np.float32).tobytes())
    request = Request(
        (RequestArgument(False, DataLocation(0, 0, 1024)), RequestArgument(False, DataLocation(0, 1024, 1024))),
        (RequestArgument(False, DataLocation(1, 0, 1024)),),
        (pool, out),
    )
    return request, [pool, out]


def sandbox_cost(seconds: float) -> dict:
    """(d): median ping and small-execute round trips with the sandbox and without."""
    services = {"sandboxed": DriverService("reference"), "unsandboxed": DriverService("reference", sandboxed=False)}
    try:
        if not services["sandboxed"].sandbox.enforced:
            print("(d) this kernel offers no Landlock: there is no sandbox to measure")
            return {"sandbox": services["sandboxed"].sandbox.describe()}
        model = binary_model(dims=(256,))
        calls, keep = {}, []
        for name, service in services.items():
            device = service.device
            prepared = device.prepare_model(model)
            request, memories = small_add_request(4096, model)
            keep += memories
            calls[name] = {"ping": device.ping, "execute": functools.partial(prepared.execute, request)}
            for _ in range(500):  # warm up
                device.ping()
                prepared.execute(request)
        # Call by call, the two services in turn (which goes first alternating): the machine's drift
        # and the other users' load fall on both alike.
        samples: dict = {name: {"ping": [], "execute": []} for name in services}
        order = list(services)
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            order.reverse()
            for call in ("ping", "execute"):
                for name in order:
                    start = time.perf_counter()
                    calls[name][call]()
                    samples[name][call].append(time.perf_counter() - start)
        medians = {name: {call: statistics.median(values) for call, values in by_call.items()}
                   for name, by_call in samples.items()}
        figures: dict = {"sandbox": services["sandboxed"].sandbox.describe()["mechanism"],
                         "calls_each": len(samples["sandboxed"]["ping"])}
        for call in ("ping", "execute"):
            on, off = medians["sandboxed"][call], medians["unsandboxed"][call]
            print(f"(d) {call} round trip with the sandbox {on * 1e6:.1f} us, without {off * 1e6:.1f} us; "
                  f"ratio {on / off:.3f}")
            figures.update({f"{call}_sandboxed_us": round(on * 1e6, 1), f"{call}_unsandboxed_us": round(off * 1e6, 1),
                            f"{call}_sandboxed_over_unsandboxed": round(on / off, 3)})
        return figures
    finally:
        for service in services.values():
            service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    results.add_option(parser)
    args = parser.parse_args()
    figures: dict = {"seconds_per_measurement": args.seconds}
    service = DriverService("reference")
    try:
        device = service.device
        for _ in range(2000):
            device.ping()  # warm up
        pings: list[float] = []
        raw = raw_ping_pong(args.seconds, rounds=10, between=lambda s: pings.extend(_samples(device.ping, s)))
        trivial = statistics.median(pings)
        capabilities = median_call_seconds(device.capabilities, args.seconds)
        print(f"(a) trivial call (service ping) round trip: {trivial * 1e6:.1f} us; raw socketpair ping-pong "
              f"{raw * 1e6:.1f} us; ratio {trivial / raw:.2f} (target <= 3); "
              f"Device.capabilities() {capabilities * 1e6:.1f} us ({capabilities / raw:.2f}x)")
        figures.update({"ping_round_trip_us": round(trivial * 1e6, 1), "raw_socketpair_round_trip_us": round(raw * 1e6, 1),
                        "ping_over_raw": round(trivial / raw, 3), "ping_over_raw_target": 3,
                        "capabilities_call_us": round(capabilities * 1e6, 1)})

        model = binary_model(dims=(256,))
        prepared = device.prepare_model(model)
        small, keep_small = small_add_request(4096, model)
        big, keep_big = small_add_request(256 << 20, model)
        prepared.execute(small)
        prepared.execute(big)
        t_small = median_call_seconds(lambda: prepared.execute(small), args.seconds)
        t_big = median_call_seconds(lambda: prepared.execute(big), args.seconds)
        print(f"(b) execute with a 256 MiB input pool {t_big * 1e6:.1f} us vs a 4 KiB pool {t_small * 1e6:.1f} us; "
              f"ratio {t_big / t_small:.2f} (target <= 1.5)")
        figures.update({"execute_256mib_pool_us": round(t_big * 1e6, 1), "execute_4kib_pool_us": round(t_small * 1e6, 1),
                        "big_pool_over_small_pool": round(t_big / t_small, 3), "big_pool_over_small_pool_target": 1.5,
                        "execute_calls_per_s_by_client_threads": {}})

        for threads in (1, 2, 4):
            count = 0
            lock = threading.Lock()
            stop = time.perf_counter() + args.seconds

            def worker():
                nonlocal count
                done = 0
                while time.perf_counter() < stop:
                    prepared.execute(small)
                    done += 1
                with lock:
                    count += done

            with ThreadPoolExecutor(threads) as pool:
                for _ in range(threads):
                    pool.submit(worker)
            print(f"(c) {threads} client thread(s): {count / args.seconds:.0f} execute calls/s")
            figures["execute_calls_per_s_by_client_threads"][str(threads)] = round(count / args.seconds)
        figures["sandbox_cost_per_call"] = sandbox_cost(args.seconds)
        results.write("bench_service", figures, args.results)
    finally:
        service.close()


if __name__ == "__main__":
    main()
