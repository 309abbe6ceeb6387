"""A worker's start, and what the first requests pay for what it left for later: cold start
to `/readyz`, the CPU to import the app and build it, resident memory idle and after the
first requests, and the first answer of each kind against the same request sent again.

    python bench/start_up.py [--starts 9] [--baseline DIR]

`--baseline DIR` measures the proxy whose code is in DIR (a checkout of an earlier commit,
say) too: the two start turn about, so a busy spell of a shared machine falls on both.
Printed per variant, medians over the starts: seconds from the command to `/readyz`
answering 200; the CPU seconds a fresh process takes to import the app and build it; RSS
when ready and after the first requests; and for a whole chat answer with a tool, a streamed
one, and one without a tool (relayed), the first request's milliseconds less the median of
the next REPEATS of the same request.

A worker reads its modules' bytecode where it finds it. The image's install compiles every
module; a checkout run with PYTHONDONTWRITEBYTECODE set (the image sets it too) and no
`__pycache__` compiles the proxy's sources again at every start, which here took about a
third of it. `python -m compileall -q service protocols` (and the same in DIR) first
measures what the image does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import httpx
from added_latency import cold_start_process, load_average, rss_mb
from proxy import CLIENT_TLS, MESSAGES, canned_upstream_command, free_port, server
from tracing import BUILD_APP
from versus_relay import body

REPEATS = 5  # the same request again, once the first has been answered
# Each first request, in the order a worker meets them.
FIRSTS = {
    "with tool, whole": body(stream=False),
    "with tool, streamed": body(stream=True),
    "no tool, whole": json.dumps({"model": "bench", "messages": MESSAGES}).encode(),
}
CHAT_PATH = "/v1/chat/completions"
HEADERS = {"content-type": "application/json"}


def request_ms(client: httpx.Client, payload: bytes) -> float:
    """Milliseconds to the end of the answer."""
    started = time.perf_counter()
    with client.stream("POST", CHAT_PATH, content=payload, headers=HEADERS) as response:
        for _ in response.iter_raw():
            pass
        response.raise_for_status()
    return (time.perf_counter() - started) * 1e3


def one_start(upstream: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh worker: its start, its memory, and its first requests."""
    port = free_port()
    seconds, process = cold_start_process(upstream, port, env)
    try:
        figures = {"ready s": seconds, "RSS ready MB": rss_mb(process.pid)}
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=30, verify=CLIENT_TLS) as client:
            for name, payload in FIRSTS.items():
                first = request_ms(client, payload)
                later = statistics.median(request_ms(client, payload) for _ in range(REPEATS))
                figures[f"first {name} +ms"] = first - later
        figures["RSS after MB"] = rss_mb(process.pid)
        return figures
    finally:
        process.terminate()
        process.wait()


def build_cpu_seconds(env: dict[str, str]) -> float:
    """CPU seconds a fresh process takes to import the app and build it."""
    done = subprocess.run(
        [sys.executable, "-c", BUILD_APP],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--starts", type=int, default=9, help="starts of each variant")
    options.add_argument("--baseline", help="a directory holding earlier code of the proxy")
    args = options.parse_args()
    variants = {"this code": {}} | (
        {} if args.baseline is None else {"baseline": {"PYTHONPATH": args.baseline}}
    )
    load_before = load_average()
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    port = free_port()
    with server(canned_upstream_command(port), port) as upstream:
        for _ in range(args.starts):
            for name, env in variants.items():
                start = one_start(upstream.url, env)
                start["import + build CPU s"] = build_cpu_seconds(env)
                figures[name].append(start)
    for name, starts in figures.items():
        print(f"{name} (medians of {len(starts)} starts):")
        for figure in starts[0]:
            print(f"  {figure:<28} {statistics.median(start[figure] for start in starts):8.3f}")
    print(f"load average: {load_before} before, {load_average()} after")


if __name__ == "__main__":
    main()
