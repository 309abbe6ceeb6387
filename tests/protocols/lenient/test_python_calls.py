"""Python call lists (`[get_weather(city="Paris")]`) are read with `ast.parse`, which builds
~800 bytes of tree per character of code: what it is handed is bounded by the code around
the string literals, which real lists keep to a few hundred characters."""

from __future__ import annotations

import pytest
from parser_harness import run

from protocols.lenient.call_objects import CallObjectError
from protocols.lenient.python_calls import MAX_CALL_CODE_CHARS, pythonic_calls
from protocols.lenient.relaxed_json import RelaxedParseBudget

ITEM = "read_file(limit=12), "  # no string: all of it is code


def _call_list(code_chars: int) -> str:
    return "[" + ITEM * (code_chars // len(ITEM)) + "read_file(limit=1)]"


def test_a_list_with_more_code_than_the_limit_is_no_call_list() -> None:
    # 0.9 MB of such calls took +159 MB and more than a second.
    with pytest.raises(CallObjectError, match="characters of code"):
        pythonic_calls(_call_list(MAX_CALL_CODE_CHARS), RelaxedParseBudget(), one_list=True)


def test_a_list_within_the_limit_is_read() -> None:
    calls = pythonic_calls(
        _call_list(MAX_CALL_CODE_CHARS // 2), RelaxedParseBudget(), one_list=True
    )
    assert calls[-1] == ("read_file", {"limit": 1})


def test_string_arguments_do_not_count_as_code() -> None:
    content = 'print("a < b")\n' * 20_000  # 300 KB of a file, in one string
    text = f"[write_file(path={'big.py'!r}, content={content!r})]"
    assert len(text) > 10 * MAX_CALL_CODE_CHARS
    assert pythonic_calls(text, RelaxedParseBudget(), one_list=True) == [
        ("write_file", {"path": "big.py", "content": content})
    ]


def test_an_answer_of_too_much_code_is_text() -> None:
    answer = _call_list(MAX_CALL_CODE_CHARS)
    result = run("json-mix", answer)
    assert (result.calls, result.text) == ([], answer)
