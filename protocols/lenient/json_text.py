"""JSON text as the parsers write it (call arguments, canonical fragments, values in
prompts): UTF-8 characters, not ASCII escapes, exactly as `json.dumps(value,
ensure_ascii=False)` writes it."""

from __future__ import annotations

import json

# One encoder made once: `json.dumps` with any argument builds a new encoder on every call,
# ten times what encoding a short string costs, and the parsers encode per streamed delta.
json_text = json.JSONEncoder(ensure_ascii=False).encode
