"""How 64 concurrent streams scale from one proxy worker to `--workers N`, in one run: two
proxies (one worker, N workers) in front of the same instant canned upstream, measured in
turn over several rounds. Printed per proxy: streams per second, and the CPU each stream
costs the proxy, the upstream and this client; and whether the workers' metrics add up to
the streams sent.

    python bench/workers_scaling.py [--workers 2] [--rounds 5] [--requests 640] [--concurrency 64]

The upstream and the client share the machine's cores with the proxy, so the CPU they
spend per stream bounds what any number of workers can reach: the ceiling printed is the
rate at which the proxy, the upstream and the client together would use every core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile

from proxy import Server, canned_upstream_command, free_port, proxy_command, server
from versus_relay import CONCURRENT_STREAMS, concurrent_rate, requests_counted


def streams_sent(requests: int, in_flight: int) -> int:
    """What `concurrent_rate` sends for `requests`: whole rounds of `in_flight`, after a
    warm-up round."""
    return (max(requests // in_flight, 1) + 1) * in_flight


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measured(
    target: Server, upstream: Server, requests: int, chunks: int, in_flight: int
) -> dict[str, float]:
    """Streams per second, and CPU milliseconds per stream of the proxy, upstream, client."""
    upstream_before, client_before = upstream.cpu_seconds(), client_cpu_seconds()
    rate, proxy_ms = asyncio.run(concurrent_rate(target, requests, chunks, in_flight))
    streams = streams_sent(requests, in_flight)
    return {
        "rate": rate,
        "proxy_ms": proxy_ms,
        "upstream_ms": (upstream.cpu_seconds() - upstream_before) / streams * 1e3,
        "client_ms": (client_cpu_seconds() - client_before) / streams * 1e3,
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--workers", type=int, default=2, help="the second proxy's workers")
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--requests", type=int, default=640, help="streams per round")
    options.add_argument("--chunks", type=int, default=200, help="prose chunks per stream")
    options.add_argument(
        "--concurrency", type=int, default=CONCURRENT_STREAMS, help="streams in flight at once"
    )
    args = options.parse_args()
    upstream_port = free_port()
    with (
        tempfile.TemporaryDirectory() as metrics_dir,
        server(canned_upstream_command(upstream_port), upstream_port) as upstream,
    ):
        env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        proxies = {}
        for workers in (1, args.workers):
            port = free_port()
            worker_env = dict(env)
            if workers > 1:
                worker_env["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(metrics_dir, str(workers))
            proxies[workers] = (proxy_command(port, workers), port, worker_env)
        with (
            server(*proxies[1]) as single,
            server(*proxies[args.workers]) as several,
        ):
            targets = {1: single, args.workers: several}
            counted_before = {n: requests_counted(t.url) for n, t in targets.items()}
            rounds: dict[int, list[dict[str, float]]] = {n: [] for n in targets}
            for _ in range(args.rounds):
                for workers, target in targets.items():
                    rounds[workers].append(
                        measured(target, upstream, args.requests, args.chunks, args.concurrency)
                    )
            counted = {n: requests_counted(t.url) - counted_before[n] for n, t in targets.items()}
    report(args, rounds, counted)


def report(
    args: argparse.Namespace, rounds: dict[int, list[dict[str, float]]], counted: dict[int, float]
) -> None:
    cores = os.cpu_count() or 1
    print(
        f"{cores} cores; {args.rounds} rounds of {args.requests} streams of {args.chunks} chunks, "
        f"{args.concurrency} at a time; medians over rounds"
    )
    print(
        f"{'workers':>7} {'streams/s':>10} {'proxy ms':>9} {'upstream ms':>12} {'client ms':>10}"
        f" {'ceiling/s':>10} {'requests counted':>17}"
    )
    rates = {}
    for workers, results in rounds.items():

        def median(key: str, results: list[dict[str, float]] = results) -> float:
            return statistics.median(result[key] for result in results)

        rates[workers] = median("rate")
        total_ms = median("proxy_ms") + median("upstream_ms") + median("client_ms")
        # One worker uses one core at most; the machine's cores are shared by everyone.
        ceiling = min(workers / median("proxy_ms"), cores / total_ms) * 1e3
        sent = args.rounds * streams_sent(args.requests, args.concurrency)
        print(
            f"{workers:>7} {rates[workers]:>10.1f} {median('proxy_ms'):>9.2f} "
            f"{median('upstream_ms'):>12.2f} {median('client_ms'):>10.2f} {ceiling:>10.1f} "
            f"{counted[workers]:>8.0f} of {sent}"
        )
    scaling = [
        several["rate"] / single["rate"]
        for single, several in zip(rounds[1], rounds[args.workers], strict=True)
    ]
    print(
        f"scaling 1 -> {args.workers} workers: {statistics.median(scaling):.2f}x "
        f"(per round {' '.join(f'{ratio:.2f}' for ratio in scaling)})"
    )


if __name__ == "__main__":
    main()
