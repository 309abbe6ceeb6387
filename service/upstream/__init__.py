"""The seam to the model server: the one shared httpx client and its read limits, the
shape an upstream answer must have, relaying an upstream response byte for byte, and the
model routes that choose an upstream per request."""

from __future__ import annotations

from .answer import (
    REASONING_KEYS,
    CallFragment,
    UpstreamChoice,
    bad_chunk,
    call_fragments,
    checked_answer,
    checked_envelope,
    chunk_choices,
    matched_stop,
    model_entries,
)
from .client import ReadLimits, Upstream, UpstreamStream, build_client
from .relay import ClosingResponse, relayed
from .routing import Router, RoutesFileError, Target, load_routes

__all__ = [
    "REASONING_KEYS",
    "CallFragment",
    "ClosingResponse",
    "ReadLimits",
    "Router",
    "RoutesFileError",
    "Target",
    "Upstream",
    "UpstreamChoice",
    "UpstreamStream",
    "bad_chunk",
    "build_client",
    "call_fragments",
    "checked_answer",
    "checked_envelope",
    "chunk_choices",
    "load_routes",
    "matched_stop",
    "model_entries",
    "relayed",
]
