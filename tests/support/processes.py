"""Commands a test runs to their end (a benchmark script, a client CLI), each in a process group
of its own, so that whatever it started (servers, workers, a native binary) is stopped with
it, whether it ended, failed or hung (see `waits`).

>>> run_to_the_end(["node", "script.mjs"]).stdout  # started, waited for, its group killed
>>> with Started(["python", "bench/parsers.py"]) as started:  # runs beside the test...
...     started.finish().returncode  # ...which waits for it when it needs its result
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from types import TracebackType
from typing import IO, Any

from waits import HUNG_AFTER_SECONDS


class Started:
    """A command running in its own process group, its output going to files (never a pipe
    it could fill while nobody reads it). Leaving its `with` block stops it."""

    def __init__(self, command: Sequence[str], **options: Any) -> None:
        """`options`: more `Popen` arguments."""
        # Open for the command's life, closed as its `with` block ends.
        self._stdout: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self._stderr: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self._process = subprocess.Popen(
            command,
            stdout=self._stdout,
            stderr=self._stderr,
            text=True,
            start_new_session=True,  # its own process group, whose id is its pid
            **options,
        )
        self._stopped = False

    def finish(self) -> subprocess.CompletedProcess[str]:
        """Its end, then every process still in its group killed; what it wrote."""
        try:
            self._process.wait(HUNG_AFTER_SECONDS)
        finally:
            self.stop()
        return subprocess.CompletedProcess(
            self._process.args, self._process.returncode, _read(self._stdout), _read(self._stderr)
        )

    def __enter__(self) -> Started:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
        self._stdout.close()
        self._stderr.close()

    def stop(self) -> None:
        """Kill it and all it started, if that is not done yet."""
        if self._stopped:
            return
        self._stopped = True
        with suppress(ProcessLookupError):  # nothing of it is left
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()


def run_to_the_end(command: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """`command` run to its end (`options`: more `Popen` arguments), its output as text."""
    with Started(command, **options) as started:
        return started.finish()


def _read(file: IO[str]) -> str:
    file.seek(0)
    return file.read()
