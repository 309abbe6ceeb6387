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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from servers import DONE, WEATHER_TOOL, chat_body, http_client, read_events
from upstream_server import Paused, ScriptedUpstream
from waits import HUNG_AFTER_SECONDS

from protocols import protocol_names
from service.__main__ import banner
from service.settings import Settings

STARTED = "Application startup complete."
# What uvicorn logs once its socket listens: after the startup line when there is one worker.
LISTENING = "Uvicorn running on"
# Between two looks at a command that says nothing while it starts.
POLL_SECONDS = 0.05
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

    def __init__(self, process: subprocess.Popen[str], url: str, http: httpx.Client) -> None:
        self.process = process
        self.url = url
        self.http = http  # a client with the proxy's URL as its base
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._written = threading.Condition()
        self._streams_open = 2
        self._readers = [
            threading.Thread(target=self._read, args=(stream,), daemon=True)
            for stream in (process.stdout, process.stderr)
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any) -> None:
        try:
            for raw in stream:
                with self._written:
                    self.raw.append(raw)
                    self.lines.append(json.loads(raw))  # a line that is not JSON fails the test
                    self._written.notify_all()
        finally:
            with self._written:
                self._streams_open -= 1
                self._written.notify_all()

    def wait_for(self, wanted: Callable[[list[dict[str, Any]]], bool]) -> None:
        """Until the lines written so far are `wanted`, or the command has ended."""
        with self._written:
            self._written.wait_for(
                lambda: wanted(self.lines) or not self._streams_open, HUNG_AFTER_SECONDS
            )
            assert wanted(self.lines), f"no such lines among {self.raw}"

    def messages(self, message: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["message"] == message]

    def stop(self) -> int:
        """SIGTERM, as Kubernetes stops a container; every line read; the exit status."""
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(HUNG_AFTER_SECONDS)
        for reader in self._readers:
            reader.join(HUNG_AFTER_SECONDS)
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
    `started`, returned once it listens and every worker has said it started."""
    env = command_environment(**environment)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "--port", str(port), *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    proxy = RunningProxy(process, url, http_client(base_url=url))
    try:
        workers = int(environment.get("PROXY_WORKERS", "1"))
        if started:
            proxy.wait_for(
                lambda lines: (
                    len(proxy.messages(STARTED)) == workers
                    and any(line["message"].startswith(LISTENING) for line in lines)
                )
            )
        yield proxy
    finally:
        proxy.http.close()
        if process.poll() is None:
            process.kill()
            process.wait(HUNG_AFTER_SECONDS)


def test_every_line_is_one_json_object_with_time_level_logger_message_and_request_id() -> None:
    with running(DEBUG_PARSER_MW="loud") as proxy:
        response = proxy.http.post(
            "/v1/chat/completions",
            json={**chat_body(WEATHER_TOOL, stream=True), "model": "demo"},
            headers={"x-request-id": "json-logs-1"},
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
        response = proxy.http.get("/metrics")
        assert proxy.stop() in STOPPED

    assert response.status_code == 200  # METRICS_PORT unset: metrics on the API port
    warned = [line["message"] for line in proxy.lines if line["level"] == "warning"]
    assert len(warned) == 1 and "METRICS_PORT" in warned[0]  # PROXY_PORT: --port overrides


def test_two_workers_create_a_missing_multiprocess_directory_and_answer(tmp_path: Path) -> None:
    directory = tmp_path / "not" / "there"

    with running(PROXY_WORKERS="2", PROMETHEUS_MULTIPROC_DIR=str(directory)) as proxy:
        # With workers, the supervisor binds the socket and says so, and each worker says its
        # startup is complete before it listens: asked until one answers (or the command exits).
        while (health := health_once_listening(proxy)) is None:
            time.sleep(POLL_SECONDS)
        metrics = proxy.http.get("/metrics")
        assert proxy.stop() in STOPPED

    assert health.status_code == 200
    assert "toolcall_proxy_requests_total" in metrics.text
    assert len(proxy.messages(STARTED)) == 2
    assert directory.is_dir()


def health_once_listening(proxy: RunningProxy) -> httpx.Response | None:
    """GET /healthz, or None while the command is still starting."""
    try:
        return proxy.http.get("/healthz")
    except httpx.ConnectError:
        assert proxy.process.poll() is None, f"the command exited: {proxy.raw}"
        return None


def test_log_level_warning_quiets_access_lines_and_uvicorn() -> None:
    with running("--log-level", "warning", started=False) as proxy:
        # Nothing announces the start at this level: asked until it answers (or has exited).
        while (health := health_once_listening(proxy)) is None:
            time.sleep(POLL_SECONDS)
        assert health.status_code == 200
        assert proxy.stop() in STOPPED

    assert [line for line in proxy.lines if line["level"] == "info"] == []


def test_a_stream_open_at_shutdown_finishes_before_the_process_exits(
    upstream: ScriptedUpstream, upstream_url: str
) -> None:
    step = Paused(before=("Working on it. ",), after=("Done.",))
    upstream.script(step)

    with running("--upstream", upstream_url, DRAIN_TIMEOUT="60") as proxy:
        with proxy.http.stream(
            "POST", "/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=True)
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
        status = proxy.process.wait(HUNG_AFTER_SECONDS)

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
        response = proxy.http.post(
            f"/v1/embeddings?api-key={secret}", json={"model": "demo", "input": "x"}
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


def refused_command(env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    """`toolcall-proxy *flags` run in `env`, which it should refuse at once."""
    return subprocess.run(
        [sys.executable, "-m", "service", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=HUNG_AFTER_SECONDS,
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
    assert line["level"] == "error" and "PROXY_WORKERS='0'" in line["message"]


def test_a_bad_store_url_is_refused_without_printing_its_password() -> None:
    result = refused_command(command_environment(RESPONSE_STORE_URL="http://:pw@cache:6379/0"))

    assert result.returncode == 2
    assert "RESPONSE_STORE_URL=(not shown" in result.stderr and "redis://" in result.stderr
    assert ":pw@" not in result.stderr + result.stdout


ACCEPTED_PROTOCOLS = f"accepted: {', '.join(protocol_names())}"


@pytest.mark.parametrize(
    ("upstream", "problem"),
    [
        pytest.param(
            "localhost:8001/v1",
            "not an http:// or https:// URL with a host; "
            "accepted: a base URL like http://localhost:8001/v1",
            id="no-scheme",
        ),
        pytest.param(
            "http://127.0.0.1:8001/v1/chat/completions",
            "ends in the endpoint /chat/completions, which the proxy adds itself; "
            "accepted: the API's base URL (http://127.0.0.1:8001/v1)",
            id="endpoint-pasted",
        ),
    ],
)
def test_every_bad_setting_is_named_with_its_value_and_what_it_accepts(
    upstream: str, problem: str
) -> None:
    env = command_environment(LOG_FORMAT="text", TOOL_PROTOCOL="morph_xml", PROXY_WORKERS="0")

    result = refused_command(env, "--upstream", upstream)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "toolcall-proxy: bad configuration:",
        f"  UPSTREAM_BASE_URL={upstream!r}: {problem} (flag --upstream)",
        f"  TOOL_PROTOCOL='morph_xml': not a protocol (did you mean 'morph-xml'?); "
        f"{ACCEPTED_PROTOCOLS} (flag --protocol)",
        "  PROXY_WORKERS='0': should be greater than or equal to 1 (flag --workers)",
    ]


def _refused_with_routes(tmp_path: Path, routes_text: str) -> tuple[Path, list[str]]:
    """The command started with a routes file of `routes_text`, refused with exit status 2:
    the file, and the lines it wrote."""
    routes = tmp_path / "routes.toml"
    routes.write_text(routes_text)
    env = command_environment(LOG_FORMAT="text")

    result = refused_command(env, "--upstream", "http://127.0.0.1:8001/v1", "--routes", str(routes))

    assert result.returncode == 2
    return routes, result.stderr.splitlines()


def test_a_route_naming_an_unknown_protocol_stops_the_command(tmp_path: Path) -> None:
    routes_text = '[routes.coder]\nmodel = "qwen2.5-coder-7b"\nprotocol = "morph_xml"\n'
    routes, said = _refused_with_routes(tmp_path, routes_text)

    assert said == [
        "toolcall-proxy: bad configuration:",
        f"  ROUTES_FILE={str(routes)!r}: route 'coder': protocol = 'morph_xml': not a protocol "
        f"(did you mean 'morph-xml'?); {ACCEPTED_PROTOCOLS} (flag --routes)",
    ]


def test_a_route_whose_call_format_cannot_be_read_stops_the_command(tmp_path: Path) -> None:
    routes_text = '[routes.mine]\nformat = { open = "{name}>", arguments = "json" }\n'
    routes, said = _refused_with_routes(tmp_path, routes_text)

    assert said == [
        "toolcall-proxy: bad configuration:",
        f"  ROUTES_FILE={str(routes)!r}: route 'mine': format.open: '{{name}}>' must begin "
        "with text, its marker (flag --routes)",
    ]


def test_a_route_whose_response_template_cannot_be_streamed_stops_the_command(
    tmp_path: Path,
) -> None:
    # gpt-oss's: what stands between the tool's name and the message is a pattern, not text.
    tool_calls = {"open_pattern": r"to=(?P<name>\w+).*?<m>", "close": "<c>", "content": "json"}
    config = {"response_template": {"fields": {"tool_calls": tool_calls}}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    routes_text = '[routes.mine]\nresponse_template = "tokenizer_config.json"\n'
    routes, said = _refused_with_routes(tmp_path, routes_text)

    assert said == [
        "toolcall-proxy: bad configuration:",
        f"  ROUTES_FILE={str(routes)!r}: route 'mine': response_template.fields.tool_calls."
        "open_pattern: at '.*?<m>': a stream finds an open tag of literal text, blanks (\\s*) and"
        " one (?P<name>...) group, nothing else (flag --routes)",
    ]
