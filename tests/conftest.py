"""Fixtures for the service tests: the scripted upstream and the proxy in front of it, each
served by uvicorn on loopback, and the proxy's callers (the official SDK and raw httpx)."""

from __future__ import annotations

import compileall
import os
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import openai
import pytest
import redis
from hypothesis import settings

pytest.register_assert_rewrite("servers")

from redis_server import RedisServer  # noqa: E402
from servers import Proxy, StartProxy, http_client, serve  # noqa: E402
from upstream_server import ScriptedUpstream  # noqa: E402

from protocols import protocol_names  # noqa: E402

# Property tests run the same examples on every run and every machine: a failure in CI is
# reproducible at once, and a loaded CI runner cannot fail a test by being slow (no deadline).
# HYPOTHESIS_PROFILE=explore draws fresh random examples, for a longer local search.
settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's modules once, before the workers start: the tests start the
    proxy, its benchmarks and their servers as Python processes a hundred times or more, and
    where bytecode is not written (PYTHONDONTWRITEBYTECODE) each compiled every module of
    the proxy again, a second of CPU a start. Fresh bytecode is left as it is."""
    if not hasattr(config, "workerinput"):
        for package in ("protocols", "service"):
            compileall.compile_dir(ROOT / package, quiet=1)
        compileall.compile_dir(ROOT / "bench", maxlevels=0, quiet=1)  # not Pi's node_modules


@pytest.fixture(scope="module")
def served_upstream() -> Iterator[tuple[ScriptedUpstream, str]]:
    """One scripted upstream served for a whole test module, and its base URL: each test
    resets it (see `upstream`), so tests share the server, never a script or a request."""
    upstream = ScriptedUpstream()
    with serve(upstream.app) as url:
        yield upstream, url + "/v1"


@pytest.fixture
def upstream(served_upstream: tuple[ScriptedUpstream, str]) -> ScriptedUpstream:
    """Script it with `upstream.script(Reply(...))`; read `upstream.requests` afterwards."""
    upstream, _url = served_upstream
    upstream.reset()
    return upstream


@pytest.fixture
def upstream_url(
    upstream: ScriptedUpstream, served_upstream: tuple[ScriptedUpstream, str]
) -> Iterator[str]:
    """The scripted upstream's base URL ("http://127.0.0.1:PORT/v1")."""
    shared, url = served_upstream
    if upstream is shared:
        yield url
    else:  # a module that overrides `upstream` gets its own upstream served for each test
        with serve(upstream.app) as own_url:
            yield own_url + "/v1"


@pytest.fixture
def unreachable_url() -> Iterator[str]:
    """An upstream address that refuses connections: a port bound here, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        _host, port = sock.getsockname()
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def start_proxy(upstream_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[StartProxy]:
    """`start_proxy(tool_protocol="morph-xml", ...)`: serve a proxy with these settings in
    front of the scripted upstream. Everything it started is stopped after the test."""
    # Imported here so that a broken service fails its own tests, not the protocol tests.
    from service.app import create_app
    from service.settings import Settings

    for name in Settings.model_fields:  # the developer's exported knobs must not leak in
        monkeypatch.delenv(name.upper(), raising=False)
    with ExitStack() as stack:

        def start(**settings: Any) -> Proxy:
            app = create_app(Settings(**{"upstream_base_url": upstream_url, **settings}))
            url = stack.enter_context(serve(app))
            client = openai.OpenAI(
                base_url=url + "/v1", api_key="test", max_retries=0, http_client=http_client()
            )
            http = http_client(base_url=url)
            stack.enter_context(client)
            stack.enter_context(http)
            return Proxy(url, client, http)

        yield start


@pytest.fixture
def proxy(start_proxy: StartProxy) -> Proxy:
    """A proxy with the default settings (json-mix, no inbound keys)."""
    return start_proxy()


@pytest.fixture(params=protocol_names())
def protocol(request: pytest.FixtureRequest) -> str:
    """Runs the test once per text protocol."""
    return str(request.param)


@pytest.fixture
def protocol_proxy(start_proxy: StartProxy, protocol: str) -> Proxy:
    """A proxy speaking `protocol` (see that fixture: the test runs once per protocol)."""
    return start_proxy(tool_protocol=protocol)


@pytest.fixture(params=[False, True], ids=["json", "sse"])
def stream(request: pytest.FixtureRequest) -> bool:
    """Runs the test once non-streamed and once streamed."""
    return bool(request.param)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real Valkey server for the session, on a free loopback port (see `redis_url`)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's server, emptied for this test."""
    with redis.Redis.from_url(redis_server.url) as client:
        client.flushall()
    return redis_server.url


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Valkey server of this test's own, which it may stop and start again."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()
