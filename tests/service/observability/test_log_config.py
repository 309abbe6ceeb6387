"""Text logs: the access and debug lines are written as they are, and every other line of the
process, the proxy's own loggers included, says its level."""

from __future__ import annotations

import subprocess
import sys

LOG_IN_TEXT_FORMAT = """
import logging
from service.observability.log_config import LogFormat, LogLevel, configure_logging
configure_logging(LogFormat.TEXT, LogLevel.INFO)
logging.getLogger("toolcall_proxy.startup").warning("proxy warning")
logging.getLogger("service.chat.stream").warning("module warning")
logging.getLogger("toolcall_proxy.access").info("access line")
logging.getLogger("toolcall_proxy.debug").info("debug line")
"""


def stderr_lines(program: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stderr.splitlines()


def test_text_warnings_of_every_logger_carry_their_level() -> None:
    lines = stderr_lines(LOG_IN_TEXT_FORMAT)

    assert [line.split() for line in lines] == [
        ["WARNING:", "proxy", "warning"],
        ["WARNING:", "module", "warning"],
        ["access", "line"],
        ["debug", "line"],
    ]


def test_an_embedding_application_gets_the_access_and_debug_lines_alone_on_stderr() -> None:
    program = """
import logging
from service.observability.access_log import use_stderr_unless_configured
use_stderr_unless_configured(logging.Formatter("%(message)s"))
logging.getLogger("toolcall_proxy.access").info("access line")
logging.getLogger("toolcall_proxy.debug").info("debug line")
logging.getLogger("toolcall_proxy.other").info("not configured: dropped below WARNING")
"""

    assert stderr_lines(program) == ["access line", "debug line"]
