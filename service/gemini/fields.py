"""Fields of the Gemini API's objects by their camelCase names, as the REST API and the
JavaScript SDK write them, or in snake_case, as the Python SDK writes some of them
(`parameters_json_schema`, `include_thoughts`) even from its typed objects."""

from __future__ import annotations

import functools
import re
from typing import Any

_CAPITAL = re.compile(r"(?<!^)(?=[A-Z])")


@functools.cache
def snake_case(name: str) -> str:
    """`parametersJsonSchema` -> `parameters_json_schema`."""
    return _CAPITAL.sub("_", name).lower()


def field(obj: dict[str, Any], name: str) -> Any:
    """`obj[name]` in either spelling, None when absent or null.

    >>> field({"include_thoughts": True}, "includeThoughts")
    True
    """
    value = obj.get(name)
    return obj.get(snake_case(name)) if value is None else value
