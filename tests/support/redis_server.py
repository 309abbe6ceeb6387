"""A real redis-server for the store tests: started on a free loopback port in a directory of
its own, with nothing saved to disk, and stopped (or stopped and started again on the same
port, as a restarted server comes back) when the test says so.

>>> server = RedisServer(tmp_path)
>>> server.start()  # returns once the server has said it accepts connections
>>> server.url  # "redis://127.0.0.1:PORT/0"
>>> server.pause(); server.resume()  # stuck (SIGSTOP), then going again
>>> server.stop()
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

# What redis-server (and valkey-server) logs once it accepts connections.
READY_LINE = b"Ready to accept connections"
# A bound, not synchronisation: a server that never says it is ready fails the test.
START_BOUND_SECONDS = 10
STOP_BOUND_SECONDS = 10


def server_command() -> str:
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    assert found, "redis-server is needed (apt-get install redis-server; .ci/run does this)"
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()  # kept across restarts: clients find it where it was
        self._process: subprocess.Popen[bytes] | None = None
        self.log: list[bytes] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                server_command(),
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        ready = threading.Event()
        # Its log is read to the end (and kept), so that the server never blocks on the pipe.
        threading.Thread(target=self._read_log, args=(self._process, ready), daemon=True).start()
        if not ready.wait(START_BOUND_SECONDS) or self._process.poll() is not None:
            self.stop()  # a server that failed to start is not left running
            raise AssertionError(f"redis-server did not start: {b''.join(self.log).decode()}")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(STOP_BOUND_SECONDS)
            self._process = None

    def pause(self) -> None:
        """Stopped, not gone: connections still open, and nothing answered on them."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)

    def _read_log(self, process: subprocess.Popen[bytes], ready: threading.Event) -> None:
        """Keep every line; `ready` is set at the ready line, or at the end if it never came."""
        assert process.stdout is not None
        for line in process.stdout:
            self.log.append(line)
            if READY_LINE in line:
                ready.set()
        ready.set()
