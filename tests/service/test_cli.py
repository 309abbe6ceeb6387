"""The `toolcall-proxy` command run for real, as a deployment runs it: a separate process,
configured by flags and environment variables, read back through its log lines (JSON, one
object per line) and over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from servers import DONE, WEATHER_TOOL, chat_body, read_events
from upstream_server import Paused, ScriptedUpstream

from service.__main__ import banner
from service.settings import Settings

# Bounds, not synchronisation: a broken command fails its test instead of hanging it.
LINE_WITHIN_SECONDS = 30.0
EXIT_WITHIN_SECONDS = 30.0
CLIENT_TIMEOUT_SECONDS = 30.0
# httpx backs off exponentially between connection attempts: 8 retries wait about a minute.
CONNECT_RETRIES = 8
STARTED = "Application startup complete."
# How a process ends after a graceful stop on SIGTERM: uvicorn re-raises the signal once it
# has shut down (a single process); its supervisor of several workers exits 0.
STOPPED = {0, -signal.SIGTERM}
SHUTTING_DOWN = "Shutting down"
# What Kubernetes exports for Services named `proxy` and `metrics` in the pod's namespace.
SERVICE_LINKS = {
    "PROXY_PORT": "tcp://10.0.0.8:8000",
    "PROXY_PORT_8000_TCP": "tcp://10.0.0.8:8000",
    "PROXY_SERVICE_HOST": "10.0.0.8",
    "PROXY_SERVICE_PORT": "8000",
    "METRICS_PORT": "tcp://10.0.0.9:9090",
    "METRICS_SERVICE_HOST": "10.0.0.9",
    "METRICS_SERVICE_PORT": "9090",
}


class RunningProxy:
    """A `toolcall-proxy` process; its output lines (stderr and stdout, each decoded as a
    JSON object) collected as they are written."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._written = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(stream,), daemon=True)
            for stream in (process.stdout, process.stderr)
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            with self._written:
                self.raw.append(raw)
                self.lines.append(json.loads(raw))  # a line that is not JSON fails the test
                self._written.notify_all()

    def wait_for(self, wanted: Callable[[list[dict[str, Any]]], bool]) -> None:
        with self._written:
            found = self._written.wait_for(lambda: wanted(self.lines), LINE_WITHIN_SECONDS)
        assert found, f"no such lines among {self.raw}"

    def messages(self, message: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["message"] == message]

    def stop(self) -> int:
        """SIGTERM, as Kubernetes stops a container; every line read; the exit status."""
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(EXIT_WITHIN_SECONDS)
        for reader in self._readers:
            reader.join(EXIT_WITHIN_SECONDS)
        return status


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def command_environment(**environment: str) -> dict[str, str]:
    """This process's environment without the developer's own settings, with LOG_FORMAT=json
    and `environment`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name.lower() not in Settings.model_fields and name != "PROMETHEUS_MULTIPROC_DIR"
    }
    return {**env, "LOG_FORMAT": "json", "PYTHONUNBUFFERED": "1", **environment}


@contextmanager
def running(*flags: str, started: bool = True, **environment: str) -> Iterator[RunningProxy]:
    """`toolcall-proxy --port <free> *flags` in `command_environment(**environment)`; if
    `started`, returned once every worker has said so."""
    env = command_environment(**environment)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "--port", str(port), *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proxy = RunningProxy(process, f"http://127.0.0.1:{port}")
    try:
        workers = int(environment.get("PROXY_WORKERS", "1"))
        if started:
            proxy.wait_for(lambda lines: len(proxy.messages(STARTED)) == workers)
        yield proxy
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(EXIT_WITHIN_SECONDS)


def test_every_line_is_one_json_object_with_time_level_logger_message_and_request_id() -> None:
    with running(DEBUG_PARSER_MW="loud") as proxy:
        response = httpx.post(
            proxy.url + "/v1/chat/completions",
            json={**chat_body(WEATHER_TOOL, stream=True), "model": "demo"},
            headers={"x-request-id": "json-logs-1"},
            timeout=CLIENT_TIMEOUT_SECONDS,
        )
        assert response.status_code == 200
        assert proxy.stop() in STOPPED

    assert proxy.lines and len(proxy.lines) == len(proxy.raw)
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in proxy.lines)
    loggers = {line["logger"] for line in proxy.lines}
    assert {"uvicorn.error", "toolcall_proxy.startup", "toolcall_proxy.access"} <= loggers
    [access] = [
        line
        for line in proxy.lines
        if line["logger"] == "toolcall_proxy.access" and line["path"] == "/v1/chat/completions"
    ]
    assert (access["request_id"], access["status"], access["tool_calls"]) == ("json-logs-1", 200, 1)
    [banner] = [line for line in proxy.lines if line["logger"] == "toolcall_proxy.startup"]
    assert banner["message"].startswith("toolcall-proxy: OpenAI API at")
    # The unknown value is warned about once, by the command, not again by the worker.
    [warning] = [line for line in proxy.lines if "DEBUG_PARSER_MW" in line["message"]]
    assert warning["level"] == "warning"


def test_service_link_variables_are_ignored_with_one_warning_each() -> None:
    with running(**SERVICE_LINKS) as proxy:
        response = httpx.get(proxy.url + "/metrics", timeout=CLIENT_TIMEOUT_SECONDS)
        assert proxy.stop() in STOPPED

    assert response.status_code == 200  # METRICS_PORT unset: metrics on the API port
    warned = [line["message"] for line in proxy.lines if line["level"] == "warning"]
    assert len(warned) == 1 and "METRICS_PORT" in warned[0]  # PROXY_PORT: --port overrides


def test_two_workers_create_a_missing_multiprocess_directory_and_answer(tmp_path: Path) -> None:
    directory = tmp_path / "not" / "there"

    with running(PROXY_WORKERS="2", PROMETHEUS_MULTIPROC_DIR=str(directory)) as proxy:
        health = httpx.get(proxy.url + "/healthz", timeout=CLIENT_TIMEOUT_SECONDS)
        metrics = httpx.get(proxy.url + "/metrics", timeout=CLIENT_TIMEOUT_SECONDS)
        assert proxy.stop() in STOPPED

    assert health.status_code == 200
    assert "toolcall_proxy_requests_total" in metrics.text
    assert len(proxy.messages(STARTED)) == 2
    assert directory.is_dir()


def test_log_level_warning_quiets_access_lines_and_uvicorn() -> None:
    # Nothing announces the start at this level: the client retries its connection instead.
    transport = httpx.HTTPTransport(retries=CONNECT_RETRIES)
    with running("--log-level", "warning", started=False) as proxy:
        with httpx.Client(transport=transport, timeout=CLIENT_TIMEOUT_SECONDS) as client:
            assert client.get(proxy.url + "/healthz").status_code == 200
        assert proxy.stop() in STOPPED

    assert [line for line in proxy.lines if line["level"] == "info"] == []


def test_a_stream_open_at_shutdown_finishes_before_the_process_exits(
    upstream: ScriptedUpstream, upstream_url: str
) -> None:
    step = Paused(before=("Working on it. ",), after=("Done.",))
    upstream.script(step)

    with running("--upstream", upstream_url, DRAIN_TIMEOUT="60") as proxy:
        with httpx.stream(
            "POST",
            proxy.url + "/v1/chat/completions",
            json=chat_body(WEATHER_TOOL, stream=True),
            timeout=CLIENT_TIMEOUT_SECONDS,
        ) as response:
            lines = response.iter_lines()
            events = []
            for event in read_events(lines):  # up to the text sent before the pause
                events.append(event)
                if "Working on it." in json.dumps(event):
                    break
            proxy.process.send_signal(signal.SIGTERM)
            proxy.wait_for(lambda lines: any(x["message"] == SHUTTING_DOWN for x in lines))
            step.resume.set()
            events += list(read_events(lines))
        status = proxy.process.wait(EXIT_WITHIN_SECONDS)

    assert events[-1] == DONE
    text = "".join(
        chunk["choices"][0]["delta"].get("content") or ""
        for chunk in events[:-1]
        if chunk["choices"]
    )
    assert text == "Working on it. Done."
    assert status in STOPPED


@pytest.mark.parametrize("variable", ["PROXY_PORT", "METRICS_PORT"])
def test_settings_ignore_a_kubernetes_service_link_in_a_port_variable(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv(variable, SERVICE_LINKS[variable])

    settings = Settings()

    assert (settings.proxy_port, settings.metrics_port) == (8000, None)


def test_no_line_carries_a_query_string_even_with_the_access_log_off() -> None:
    secret = "query-secret-3141"

    with running(ACCESS_LOG="false", LOG_LEVEL="debug") as proxy:
        response = httpx.post(
            proxy.url + f"/v1/embeddings?api-key={secret}",
            json={"model": "demo", "input": "x"},
            timeout=CLIENT_TIMEOUT_SECONDS,
        )
        assert proxy.stop() in STOPPED

    assert response.status_code in {200, 404}  # whatever the demo upstream makes of it
    assert proxy.raw and not [line for line in proxy.raw if secret in line]


def test_banner_asks_for_a_real_upstreams_model_not_the_demo_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)

    with_demo = banner(Settings())
    with_upstream = banner(Settings(upstream_base_url="http://127.0.0.1:8001/v1"))

    assert '"model":"demo"' in with_demo
    assert '"model":"demo"' not in with_upstream
    assert '"model":"MODEL"' in with_upstream and "/v1/models lists" in with_upstream


def refused_command(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`toolcall-proxy` run in `env`, which it should refuse at once."""
    return subprocess.run(
        [sys.executable, "-m", "service"],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXIT_WITHIN_SECONDS,
    )


def test_a_bad_configuration_is_one_json_error_line_and_exit_status_2() -> None:
    env = {
        name: value
        for name, value in os.environ.items()
        if name.lower() not in Settings.model_fields
    }
    env.update({"LOG_FORMAT": "json", "PROXY_WORKERS": "0"})

    result = refused_command(env)

    [line] = [json.loads(raw) for raw in result.stderr.splitlines()]
    assert result.returncode == 2
    assert line["level"] == "error" and "proxy_workers" in line["message"]


def test_a_bad_store_url_is_refused_without_printing_its_password() -> None:
    result = refused_command(command_environment(RESPONSE_STORE_URL="http://:pw@cache:6379/0"))

    assert result.returncode == 2
    assert "response_store_url" in result.stderr and "redis://" in result.stderr
    assert ":pw@" not in result.stderr + result.stdout
