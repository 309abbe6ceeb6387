"""What the agent CLI checks share: an HTTP proxy address that refuses connections, for the
environment that keeps a CLI on loopback (`node_projects.offline_environment`)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def refused_proxy() -> Iterator[str]:
    """An HTTP proxy address that refuses connections: a port bound here, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
