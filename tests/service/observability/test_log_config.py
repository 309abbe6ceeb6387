"""Text logs: the access and debug lines are written as they are, and every other line of the
process, the proxy's own loggers included, says its level. In both formats, logged text (an
upstream's error message, say) is escaped: it can neither drive a terminal nor forge a line,
wherever a reader splits lines (str.splitlines splits at U+2028 and the C1 NEL)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from waits import HUNG_AFTER_SECONDS

LOG_IN_TEXT_FORMAT = """
import logging
from service.observability.log_config import LogFormat, LogLevel, configure_logging
configure_logging(LogFormat.TEXT, LogLevel.INFO)
logging.getLogger("toolcall_proxy.startup").warning("proxy warning")
logging.getLogger("service.exchange.stream").warning("module warning")
logging.getLogger("toolcall_proxy.access").info("access line")
logging.getLogger("toolcall_proxy.debug").info("debug line")
"""


# What an upstream could put in an error message: a forged access line after a newline,
# terminal controls (ESC, the C1 CSI, CR, BEL, DEL) and the line breaks str.splitlines knows;
# other text, non-ASCII included, is written as it is.
FORGED = '"POST /v1/chat/completions" 200 1.0ms model="m"'
HOSTILE = f"boom\n{FORGED}\x1b[2J\r\x9b31m\x07\x7f\x85\u2028\u2029\x0b\x1c 21 °C —"
HOSTILE_ESCAPED = "\\x1b[2J\\r\\x9b31m\\x07\\x7f\\x85\\u2028\\u2029\\x0b\\x1c 21 °C —"
# Everything but the newline that ends each line.
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
LOG_HOSTILE_TEXT = """
import logging
from service.observability.log_config import LogFormat, LogLevel, configure_logging
configure_logging(LogFormat.{log_format}, LogLevel.INFO)
hostile = {hostile!r}
logging.getLogger("service.exchange.stream").warning("upstream stream failed: %s", hostile)
logging.getLogger("toolcall_proxy.access").info(hostile)
logging.getLogger("toolcall_proxy.debug").info(hostile)
try:
    raise ValueError(hostile)
except ValueError:
    logging.getLogger("service.exchange.stream").exception("streaming answer failed")
"""


def stderr_of(program: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, check=True, timeout=HUNG_AFTER_SECONDS
    )
    return done.stderr.decode()


def stderr_lines(program: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=HUNG_AFTER_SECONDS,
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


def test_text_logs_escape_logged_text_and_indent_its_lines() -> None:
    written = stderr_of(LOG_HOSTILE_TEXT.format(log_format="TEXT", hostile=HOSTILE))

    assert not CONTROLS.search(written), written
    lines = written.splitlines()
    records = [line for line in lines if not line.startswith("  ")]
    assert records == [
        "WARNING:  upstream stream failed: boom",
        "boom",
        "boom",
        "ERROR:    streaming answer failed",
    ]
    assert lines.count(f"  {FORGED}{HOSTILE_ESCAPED}") == 4
    assert "  Traceback (most recent call last):" in lines


def test_json_logs_are_one_object_per_line_whatever_splits_them() -> None:
    written = stderr_of(LOG_HOSTILE_TEXT.format(log_format="JSON", hostile=HOSTILE))

    assert not CONTROLS.search(written), written
    records = [json.loads(line) for line in written.splitlines()]
    shown = f"boom\n{FORGED}{HOSTILE_ESCAPED}"
    assert [record["message"] for record in records] == [
        f"upstream stream failed: {shown}",
        shown,
        shown,
        "streaming answer failed",
    ]
    assert records[-1]["exception"].endswith(f"ValueError: {shown}")
