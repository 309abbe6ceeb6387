"""The benchmarks still run: each script, with the smallest sizes, against real servers it
starts itself. Their numbers are not checked (that is what running them is for); what they
print is, and so is every request they sent being counted by the proxy's metrics."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
SERVERS = ("bare relay", "toolcall-proxy")


def run(script: str, *arguments: str) -> str:
    finished = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def test_versus_relay_prints_every_row_and_counts_every_request() -> None:
    out = run(
        "versus_relay.py",
        *("--rounds", "1", "--repeat", "2", "--long-chunks", "10"),
        *("--concurrent-requests", "64", "--concurrent-chunks", "5"),
    )

    # At these sizes a per-chunk difference may well come out negative: noise, not news.
    for row in ("server CPU per chunk", "time to first byte added", "non-stream added"):
        assert re.search(rf"^{row} .* -?[\d.]+x ", out, re.MULTILINE), out
    assert "peak RSS (MB)" in out
    # 20 warm-up pairs; per round 2 first bytes, 2 short streams, 2 answers, 3 long streams,
    # then 64 warm-up and 64 measured concurrent streams.
    assert "proxy requests_total grew by 177 " in out


def test_workers_scaling_compares_one_worker_with_two_and_counts_every_stream() -> None:
    out = run("workers_scaling.py", "--rounds", "1", "--requests", "64", "--chunks", "5")

    counted = re.findall(r"^\s+([12]) .* (\d+) of (\d+)$", out, re.MULTILINE)
    assert [(workers, sent) for workers, _, sent in counted] == [("1", "128"), ("2", "128")], out
    assert all(got == sent for _, got, sent in counted), out
    assert re.search(r"^scaling 1 -> 2 workers: [\d.]+x", out, re.MULTILINE), out


def test_parser_benchmark_prints_every_protocol_and_the_stall_rows() -> None:
    out = run("parsers.py", "--quick")

    for protocol in ("json-mix", "morph-xml", "qwen3-coder"):
        assert re.search(rf"^{protocol}\s+prose, no calls\s+[\d.]+\s+[\d.]+$", out, re.MULTILINE)
    stall_rows = re.findall(r" ms  (\w+)$", out, re.MULTILINE)
    assert stall_rows, out


def test_contention_runs_both_servers_beside_busy_processes_and_probes_each_after() -> None:
    out = run(
        "contention.py",
        *("--streams", "4", "--seconds", "2", "--busy", "1"),
        *("--tokens", "16", "--client-timeout", "10", "--settle", "1"),
    )

    assert re.search(r"^\d+ cores, 1 busy processes; per server: 4 keep-alive", out, re.M), out
    # completed, timed out, failed, req/s, ratio, streams in progress, upstream connections
    # open / pool, the probe sent after the load, connections held after it.
    counts = r" +\d+ +\d+ +\d+ +[\d.]+ +(?:[\d.]+x|-)"
    after = r" +(?:\d+|-) +\d+ / \d+  (yes|no \(.+\)) [\d.]+ s +\d+$"
    for server in SERVERS:
        found = re.search(rf"^{server}{counts}{after}", out, re.MULTILINE)
        assert found, out
        assert found[1] == "yes", out  # the server still answers once its load is over
    assert re.search(r"^proxy >= 0.9x the relay's completed.*: (met|NOT met)$", out, re.M), out


def test_response_store_benchmark_prints_both_backends_and_the_entry_sizes() -> None:
    out = run("response_store.py", "--sizes", "1000", "--requests", "3")

    for backend in ("memory", "redis"):
        assert re.search(rf"^{backend}\s+1000(\s+-?[\d.]+){{5}}$", out, re.MULTILINE), out
    assert re.search(r"^\s+1000\s+\d+\s+\d+\s+[\d.]+\s+\d+\s+-?\d+$", out, re.MULTILINE), out
