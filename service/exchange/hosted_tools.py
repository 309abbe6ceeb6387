"""Tools that the API's own servers run (web search, code execution...): a text-only upstream
cannot run them, and agents declare them by default. Every endpoint that meets them treats
them alike: left out of what the model sees, counted, traced and told to the request's span
once per request, or, with
HOSTED_TOOLS=reject, a 400 naming the tool."""

from __future__ import annotations

from collections.abc import Sequence

from ..context import ProxyContext
from ..observability import RequestRecord
from ..settings import HostedTools
from .request import invalid


def check_hosted_tool(kind: str, param: str, hosted: HostedTools, *, runs_on: str) -> None:
    """A hosted tool of type `kind` (at `param` in the request) is about to be left out;
    raise the 400 instead when the deployment rejects them. `runs_on`: whose servers run it."""
    if hosted is HostedTools.REJECT:
        raise invalid(
            f"tools of type {kind!r} run on {runs_on}, which a text-only upstream cannot do"
            " (the proxy is set to HOSTED_TOOLS=reject)",
            param,
            "unsupported",
        )


def count_dropped_tools(
    context: ProxyContext, record: RequestRecord, dropped: Sequence[str]
) -> None:
    """Hosted tools left out of what the model sees: counted, and noted once in the trace
    and the request's span. `dropped`: their metric labels, one per tool, from a bounded set."""
    for kind in dropped:
        context.metrics.dropped_hosted_tools.labels(kind).inc()
    if dropped and context.debug is not None:
        context.debug.note(record.request_id, "hosted tools left out", ", ".join(dropped))
    if dropped and record.listener is not None:
        record.listener.hosted_tools_dropped(dropped)
