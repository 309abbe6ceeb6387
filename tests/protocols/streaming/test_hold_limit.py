"""No hold outgrows the service's read-ahead: text held undecided (a JSON fence after prose,
a think block holding a call tag, an answer that may be call objects off the protocol, a
call read whole until the text after it decides) is
released as text once it passes MAX_HELD_CHARS, with one `hold_limit` record, so an output
that never decides costs what the read-ahead does, not its own length.

What is held is counted, not timed: after each feed, the characters fed less those the
parts given out account for."""

from __future__ import annotations

import pytest
from parser_harness import PROTOCOL_NAMES, Result, check_contract, run, sample_call

from protocols import ErrorKind
from protocols.streaming.call_hold import MAX_HELD_CHARS
from protocols.streaming.think_tags import THINK_TAGS

STEP = 4096  # an upstream read's worth of text per feed
FLOOD_CHARS = 2 * MAX_HELD_CHARS + STEP


def _held_most(result: Result) -> int:
    """The most characters fed and not yet accounted for by the parts, over the feeds."""
    fed = accounted = most = 0
    source = result.source
    for index, batch in enumerate(result.batches[:-1]):
        fed = min(len(source), (index + 1) * STEP)
        accounted += len(Result(source, result.mode, batch, [], []).reconstructed)
        most = max(most, fed - accounted)
    return most


def _call_opening(protocol: str) -> str:
    """The protocol's call for get_weather, cut inside its city's value."""
    call = sample_call(protocol)
    return call[: call.index("Paris")]


def _floods(protocol: str) -> dict[str, str]:
    """Outputs that hold text undecided from their start (or their first line) on."""
    objects, letters = '{"a": 1}, ', "x"
    openings = {
        "json-fence-after-prose": ("Here is the data:\n```json\n[", objects),
        "bare-json-array": ("[", objects),
        "bare-call-object": ('{"name": "write_file", "arguments": {"content": "', letters),
        "call-after-prose": (f"Sure {_call_opening(protocol)}", letters),
        "fence-of-calls-after-prose": (f"Sure:\n```\n{_call_opening(protocol)}", letters),
    }
    for open_tag in THINK_TAGS:
        opening = f"{open_tag}Plan: {_call_opening(protocol)}"
        openings[f"think-{open_tag}-holding-a-call"] = (opening, letters)
    return {
        name: opening + unit * ((FLOOD_CHARS - len(opening)) // len(unit))
        for name, (opening, unit) in openings.items()
    }


CASES = [
    pytest.param(protocol, source, id=f"{protocol}-{name}")
    for protocol in PROTOCOL_NAMES
    for name, source in _floods(protocol).items()
]


@pytest.mark.parametrize(("protocol", "source"), CASES)
def test_an_undecided_hold_past_the_bound_is_text(protocol: str, source: str) -> None:
    result = run(protocol, source, chunks=STEP)

    assert _held_most(result) <= MAX_HELD_CHARS + STEP
    assert result.error_kinds == [ErrorKind.HOLD_LIMIT]
    assert result.calls == []
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_think_block_given_up_holds_no_later_call(protocol: str) -> None:
    """Once a think block has held a call tag too long, it is text to its close: a call tag
    later in it is text too, even where the output ends inside the block."""
    opening = f"<think>Plan: {_call_opening(protocol)}"
    filler = "x" * (MAX_HELD_CHARS + STEP)
    source = opening + filler + " then " + sample_call(protocol)

    result = run(protocol, source, chunks=STEP)

    assert result.calls == []
    assert result.error_kinds == [ErrorKind.HOLD_LIMIT]
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_result_block_that_never_closes_is_text_past_the_bound(protocol: str) -> None:
    """A result the model writes for its call is held to its closing, to be dropped."""
    call = sample_call(protocol)
    opening = call + "\n<tool_response>"
    source = opening + "x" * (FLOOD_CHARS - len(opening))

    result = run(protocol, source, chunks=STEP)

    assert _held_most(result) <= MAX_HELD_CHARS + STEP
    assert result.call_values == [("get_weather", {"city": "Paris"})]
    assert result.error_kinds == [ErrorKind.HOLD_LIMIT]
    check_contract(result)
