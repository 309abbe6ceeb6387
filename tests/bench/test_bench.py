"""The benchmarks still run: each script, with the smallest sizes, against real servers it
starts itself (the real-model benchmark against a scripted model). Their numbers are not
checked (that is what running them is for); what they print is, and so is every request
they sent being counted by the proxy's metrics.

Each test runs its script alone, so pytest-xdist shares them out among its workers like any
other tests: most of a script's time is its servers starting, one process after another."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from processes import run_to_the_end
from upstream_server import Reply, ScriptedUpstream, rendered_calls

from protocols.streaming.dialect_forms import dialect_names

BENCH = Path(__file__).resolve().parents[2] / "bench"
SERVERS = ("bare relay", "toolcall-proxy")


def command(script: str, *arguments: str) -> list[str]:
    return [sys.executable, str(BENCH / script), *arguments]


def output_of(finished: subprocess.CompletedProcess[str]) -> str:
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def run(script: str, *arguments: str) -> str:
    """What the script printed, run to its end; the servers it started are stopped with it,
    even if it hung."""
    return output_of(run_to_the_end(command(script, *arguments)))


def test_versus_relay_prints_every_row_and_counts_every_request() -> None:
    out = run(
        "versus_relay.py",
        *("--rounds", "1", "--repeat", "2", "--long-chunks", "10"),
        *("--concurrent-requests", "4", "--concurrency", "4", "--concurrent-chunks", "5"),
        *("--warm-up", "1"),
    )

    # At these sizes a per-chunk difference may well come out negative: noise, not news.
    for row in ("server CPU per chunk", "time to first byte added", "non-stream added"):
        assert re.search(rf"^{row} .* -?[\d.]+x ", out, re.MULTILINE), out
    assert re.search(r"^4 concurrent streams \(req/s\) ", out, re.MULTILINE), out
    assert "peak RSS (MB)" in out
    # 1 warm-up pair; per round 2 first bytes, 2 short streams, 2 answers, 3 long streams,
    # then 4 warm-up and 4 measured concurrent streams.
    assert "proxy requests_total grew by 19 " in out


def test_workers_scaling_compares_one_worker_with_two_and_counts_every_stream() -> None:
    out = run(
        "workers_scaling.py",
        *("--rounds", "1", "--requests", "4", "--concurrency", "4", "--chunks", "5"),
    )

    counted = re.findall(r"^\s+([12]) .* (\d+) of (\d+)$", out, re.MULTILINE)
    assert [(workers, sent) for workers, _, sent in counted] == [("1", "8"), ("2", "8")], out
    assert all(got == sent for _, got, sent in counted), out
    assert re.search(r"^scaling 1 -> 2 workers: [\d.]+x", out, re.MULTILINE), out


def test_front_doors_prints_each_door_against_chat_and_counts_every_stream() -> None:
    out = run("front_doors.py", "--rounds", "1", "--repeat", "2", "--chunks", "5", "--warm-up", "1")

    for door in ("chat completions", "Responses", "Messages", "Gemini"):
        assert re.search(rf"^{door} +[\d.]+ +[\d.]+x  [\d.]+$", out, re.MULTILINE), out
    # 1 warm-up stream, then 2 per round, through each door.
    for route in ("chat", "responses", "messages", "gemini"):
        assert f"proxy requests_total{{route='{route}'}} grew by 3 of 3" in out, out
    assert re.search(
        r"^every front door within 1.05x chat's CPU per stream: (met|NOT met)$", out, re.M
    )


def test_parser_benchmark_prints_every_protocol_and_the_stall_rows() -> None:
    out = run("parsers.py", "--quick")

    for protocol in ("json-mix", "morph-xml", "qwen3-coder"):
        assert re.search(rf"^{protocol}\s+prose, no calls\s+[\d.]+\s+[\d.]+$", out, re.MULTILINE)
    stall_rows = re.findall(r" ms  (\w+)$", out, re.MULTILINE)
    assert stall_rows, out
    # A flood of each dialect's calls, openings and inner tags, read whole and streamed.
    for dialect in dialect_names():
        for shape in ("calls", "openings", "inner tags"):
            row = rf"^{re.escape(dialect)}: {shape} +[\w-]+ +-?[\d.]+ +-?[\d.]+  s  (ok|OVER)$"
            assert re.search(row, out, re.MULTILINE), (dialect, shape, out)


def test_schema_check_benchmark_prints_each_tool_the_mean_and_the_hostile_schema() -> None:
    out = run("schema_check.py", "--rounds", "1")

    for tool in ("get_weather", "write_file", "bash", "memory", "mean"):
        assert re.search(rf"^{tool}(\s+[\d.]+){{4}}$", out, re.MULTILINE), out
    assert re.search(r"^hostile schema .*: \d+ ms$", out, re.MULTILINE), out


def test_response_store_benchmark_prints_both_backends_and_the_entry_sizes() -> None:
    out = run("response_store.py", "--sizes", "1000", "--requests", "3")

    for backend in ("memory", "redis"):
        assert re.search(rf"^{backend}\s+1000(\s+-?[\d.]+){{5}}$", out, re.MULTILINE), out
    assert re.search(r"^\s+1000\s+\d+\s+\d+\s+[\d.]+\s+\d+\s+-?\d+$", out, re.MULTILINE), out


def test_contention_runs_both_servers_beside_busy_processes_and_probes_each_after() -> None:
    out = run(
        "contention.py",
        *("--streams", "4", "--seconds", "2", "--busy", "1"),
        *("--tokens", "16", "--client-timeout", "10", "--settle", "0.25", "--max-requests", "4"),
    )

    assert re.search(r"^\d+ cores, 1 busy processes; per server: 4 keep-alive", out, re.M), out
    # completed, timed out, failed, req/s, ratio, streams in progress, upstream connections
    # open / pool, the probe sent after the load, connections held after it.
    counts = r" +(?P<completed>\d+) +(?P<timed_out>\d+) +(?P<failed>\d+) +[\d.]+ +(?:[\d.]+x|-)"
    after = r" +(?:\d+|-) +\d+ / \d+  (?P<probe>yes|no \(.+\)) [\d.]+ s +\d+$"
    for server in SERVERS:
        found = re.search(rf"^{server}{counts}{after}", out, re.MULTILINE)
        assert found, out
        # Every request of the budget (--max-requests) was sent and classed.
        outcomes = [int(found[outcome]) for outcome in ("completed", "timed_out", "failed")]
        assert sum(outcomes) == 4, out
        assert found["probe"] == "yes", out  # the server still answers once its load is over
    assert re.search(r"^proxy >= 0.9x the relay's completed.*: (met|NOT met)$", out, re.M), out


def test_real_model_calls_scores_each_answer_and_keeps_it_for_rescoring(
    upstream: ScriptedUpstream, upstream_url: str, tmp_path: Path
) -> None:
    bmi = rendered_calls("calculate_bmi", {"weight": 80, "height": 1.8})["json-mix"]
    upstream.script(
        Reply(rendered_calls("get_weather", {"city": "Paris"})["json-mix"]),
        Reply(bmi),  # one call where two were asked for
        Reply("It pairs up items of several iterables."),
        Reply(rendered_calls("get_weather", {"city": "Paris"})["json-mix"]),  # answered already
    )
    out = tmp_path / "calls.jsonl"
    tasks = ("weather", "bmi_two", "no_tool", "after_weather")
    arguments = ("--protocol", "json-mix", "--tasks", *tasks, "--out", str(out))
    printed = run("real_model_calls.py", "--upstream", upstream_url, *arguments)

    # The model saw the proxy's own prompt, the tools in it and not in the request.
    asked = upstream.chat_requests[0].json
    assert "tools" not in asked and "calculate_bmi" in asked["messages"][0]["content"]
    assert re.search(r"^bmi_two +wrong +missing call calculate_bmi", printed, re.M), printed
    # calls correct, wrong calls, text where a call was due, call where none was due, then
    # per category: simple, parallel, multiple, after-result, none.
    row = "| current | json-mix | model | direct | 1/2 | 1/2 | 0/2 | 1/2 | 1/1 | 0/1 | 0/0 |"
    row += " 0/1 | 1/1 |"
    assert row in printed, printed
    assert [json.loads(line)["task"] for line in out.read_text().splitlines()] == list(tasks)
    assert row in run("real_model_calls.py", "--reclassify", str(out))


def test_tracing_benchmark_prints_each_variant() -> None:
    out = run("tracing.py", "--rounds", "1", "--repeat", "2", "--starts", "1", "--warm-up", "1")

    for variant in ("off", "on", "on + content"):
        assert re.search(rf"^{re.escape(variant)}(\s+-?[\d.]+){{4}}$", out, re.MULTILINE), out
    assert re.search(r"^import \+ build, CPU s(\s+[\d.]+){3}$", out, re.MULTILINE), out


def test_added_latency_benchmark_prints_every_door_level_cold_start_and_memory() -> None:
    out = run(
        "added_latency.py",
        *("--requests", "2", "--chunks", "3", "--starts", "1"),
        *("--concurrency", "1,2", "--warm-up", "1"),
    )

    number = r"\s+[-+][\d.]+"
    for door in ("chat completions", "Responses", "Messages", "Gemini"):
        for tool in ("with", "no"):
            assert re.search(rf"^{door}, whole, {tool} tool({number}){{4}}$", out, re.M), out
            assert re.search(rf"^{door}, streamed, {tool} tool({number}){{5}}$", out, re.M), out
    assert re.search(rf"^bare relay, whole({number}){{4}}$", out, re.MULTILINE), out
    assert re.search(rf"^bare relay, streamed({number}){{5}}$", out, re.MULTILINE), out
    assert re.search(r"^proxy's own account \(overhead_seconds mean\): [\d.]+ ms$", out, re.M)
    assert re.search(r"^cold start to /readyz: median [\d.]+ s of 1$", out, re.MULTILINE), out
    assert re.search(r"^RSS: idle [\d.]+ MB, under 2 streams [\d.]+ MB$", out, re.M), out
    assert re.search(r"^load average: [\d. ]+ before, [\d. ]+ after$", out, re.M), out


def test_start_up_benchmark_prints_each_figure_of_each_variant() -> None:
    out = run("start_up.py", "--starts", "1", "--baseline", str(BENCH.parent))

    for variant in ("this code", "baseline"):
        assert re.search(rf"^{variant} \(medians of 1 starts\):$", out, re.MULTILINE), out
    for figure in ("ready s", "RSS ready MB", r"first with tool, whole \+ms", "RSS after MB"):
        assert len(re.findall(rf"^  {figure} +-?[\d.]+$", out, re.MULTILINE)) == 2, out
    assert re.search(r"^load average: [\d. ]+ before, [\d. ]+ after$", out, re.M), out


def test_layers_benchmark_prints_each_server_and_the_layer_it_adds() -> None:
    out = run("layers.py", "--rounds", "1", "--requests", "3", "--warm-up", "1")

    assert re.search(r"^upstream alone +-?[\d.]+ +[\d.]+$", out, re.MULTILINE), out
    for server, beneath in (
        ("uvicorn \\+ httpx", "upstream alone"),
        ("Starlette \\+ httpx", "uvicorn \\+ httpx"),
        ("FastAPI \\+ httpx", "Starlette \\+ httpx"),
        ("proxy, no tool \\(relayed\\)", "Starlette \\+ httpx"),
        ("proxy, with a tool", "proxy, no tool \\(relayed\\)"),
    ):
        row = rf"^{server} +-?[\d.]+ +[\d.]+ +{beneath} +[-+][\d.]+$"
        assert re.search(row, out, re.MULTILINE), out
