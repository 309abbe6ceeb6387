"""JSON as the proxy writes it on the wire: compact UTF-8, with any lone surrogate escaped.

A lone surrogate (`"\\ud83d"`) is valid JSON, and real clients send one (JavaScript slicing a
string through an emoji), as a model's output may; plain UTF-8 cannot encode it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

COMPACT = (",", ":")
# Compact ASCII JSON from one encoder made once: `json.dumps` with `separators` builds a new
# encoder on every call, which cost more than encoding a streamed chunk's delta.
compact_json = json.JSONEncoder(separators=COMPACT).encode
JSON_MEDIA_TYPE = "application/json"


def json_bytes(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON. A lone surrogate can only occur inside a JSON string,
    where `backslashreplace` writes it as `\\udXXX`: exactly JSON's escape for it."""
    return json.dumps(value, ensure_ascii=False, separators=COMPACT).encode(
        "utf-8", "backslashreplace"
    )


def json_response(value: Any, status_code: int = 200) -> Response:
    """Starlette's `JSONResponse`, without its 500 on a lone surrogate."""
    return Response(json_bytes(value), status_code=status_code, media_type=JSON_MEDIA_TYPE)
