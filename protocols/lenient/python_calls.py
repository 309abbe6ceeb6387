"""Calls written as Python function calls, as Llama 3.2 and Gemma are prompted to write them:
`[get_weather(city="Paris"), get_time()]`. Read with Python's own parser (`ast`): nothing
runs, and only literal values count (strings, numbers, booleans, None or JSON's `true`,
`false`, `null`, and lists and dicts of them), given as keyword arguments."""

from __future__ import annotations

import ast
import re
from typing import Any

from .call_objects import CallObjectError
from .relaxed_json import RelaxedJSONError, RelaxedParseBudget

_NAMED_CONSTANTS = {"true": True, "false": False, "null": None, "none": None}
# What a list of calls may hold outside its string literals, whose characters add nothing to
# the parser's tree: `ast.parse` builds ~800 bytes of it per character of dense code (0.9 MB
# took +159 MB). Real lists are a few hundred characters; 16 KiB, ten times a long one,
# keeps the worst tree near 13 MB, what reading 1 MB of JSON takes, while a file written in
# a string argument fits as in any other format.
MAX_CALL_CODE_CHARS = 16 * 1024
# A Python string literal (any prefix; triple quotes, then single ones), to measure the code
# around them.
_STRING_LITERAL = re.compile(
    r"[rRbBuUfF]{0,2}"
    r"(?:(?P<triple>\"\"\"|''')[\s\S]*?(?P=triple)"
    r"|\"(?:[^\"\\\n]|\\[\s\S])*\"|'(?:[^'\\\n]|\\[\s\S])*')"
)


def pythonic_calls(
    text: str, budget: RelaxedParseBudget, *, one_list: bool
) -> list[tuple[str, dict[str, Any]]]:
    """The calls `text` holds: with `one_list`, one list of calls (Llama 3.2's answer);
    else calls one per line, or lists of them (a Gemma `tool_code` block; `print(...)`
    around a call is dropped). Charged to `budget` as relaxed parsing; raises
    CallObjectError when the text is anything else."""
    try:
        budget.spend_relaxed(len(text))
        code_chars = len(_STRING_LITERAL.sub('""', text))
        if code_chars > MAX_CALL_CODE_CHARS:
            raise CallObjectError(f"{code_chars} characters of code, past {MAX_CALL_CODE_CHARS}")
        # Python's parser refuses nesting past 200 levels, so walking the tree stays shallow.
        tree = ast.parse(text.strip())
    except (RelaxedJSONError, SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise CallObjectError(f"not Python calls: {error}") from None
    if one_list and not (
        len(tree.body) == 1
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(tree.body[0].value, ast.List)
    ):
        raise CallObjectError("not one list of calls")
    calls = []
    for statement in tree.body:
        if not isinstance(statement, ast.Expr):
            raise CallObjectError("a statement that is no call")
        value = statement.value
        for item in value.elts if isinstance(value, ast.List) else [value]:
            calls.append(_call(item))
    if not calls:
        raise CallObjectError("no call")
    return calls


def _call(node: ast.expr) -> tuple[str, dict[str, Any]]:
    if not isinstance(node, ast.Call):
        raise CallObjectError("a value that is no call")
    if _dotted_name(node.func) == "print" and len(node.args) == 1 and not node.keywords:
        return _call(node.args[0])
    if node.args or any(keyword.arg is None for keyword in node.keywords):
        raise CallObjectError("arguments must be given by name")
    arguments = {keyword.arg: _literal(keyword.value) for keyword in node.keywords}
    return _dotted_name(node.func), arguments  # type: ignore[return-value]


def _dotted_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr}"
    raise CallObjectError("the call names no function")


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | None):
        return node.value  # bool is an int
    if isinstance(node, ast.Name) and node.id.lower() in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id.lower()]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _literal(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        keys = [_literal(key) if key is not None else None for key in node.keys]
        if all(isinstance(key, str) for key in keys):
            return dict(zip(keys, map(_literal, node.values), strict=True))
    raise CallObjectError("an argument value that is no literal")
