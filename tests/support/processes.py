"""Commands a test runs to their end (a benchmark script, a client CLI), each in a process group
of its own, so that whatever it started (servers, workers, a native binary) is stopped with
it, whether it ended, failed or hung (see `waits`)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from waits import HUNG_AFTER_SECONDS


def run(command: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """`command` run to its end, its output captured as text (`options`: more `Popen`
    arguments); every process still in its group then is killed."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, whose id is its pid
        **options,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=HUNG_AFTER_SECONDS)
        finally:
            with suppress(ProcessLookupError):  # nothing of it is left
                os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
