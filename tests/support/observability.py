"""Helpers for the observability tests: a served proxy's `/metrics` read with
prometheus-client's own parser, and the proxy's log lines caught as they are written.

>>> scrape(proxy.http).value("toolcall_proxy_tool_calls_total", tool="get_weather")
1.0
>>> with caught_logs("toolcall_proxy.access") as logs:
...     proxy.chat(body)
>>> logs.messages
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from waits import HUNG_AFTER_SECONDS


@dataclass(frozen=True)
class Scrape:
    """One `/metrics` answer, parsed."""

    text: str
    samples: list[Sample]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples called `name` whose labels include `labels` (0 if none)."""
        return sum(
            sample.value
            for sample in self.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )

    @property
    def names(self) -> set[str]:
        return {sample.name for sample in self.samples}


def scrape(http: httpx.Client, path: str = "/metrics") -> Scrape:
    response = http.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    families = text_string_to_metric_families(response.text)
    return Scrape(response.text, [sample for family in families for sample in family.samples])


class CaughtLogs(logging.Handler):
    """Every message a logger writes, from whichever thread writes it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.records: list[logging.LogRecord] = []
        self._written = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._written:
            self.messages.append(record.getMessage())
            self.records.append(record)
            self._written.notify_all()

    @property
    def text(self) -> str:
        return "\n".join(self.messages)

    def wait_for(self, wanted: Callable[[str], bool]) -> str:
        """The first message that is `wanted`, waiting for it to be written."""
        with self._written:
            found = self._written.wait_for(
                lambda: next((m for m in self.messages if wanted(m)), None),
                HUNG_AFTER_SECONDS,
            )
        assert found is not None, f"no such line among {self.messages}"
        return found


@contextmanager
def caught_logs(logger_name: str) -> Iterator[CaughtLogs]:
    handler = CaughtLogs()
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
