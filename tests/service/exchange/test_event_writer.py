"""An event written from its template is the same bytes as the event written whole, whatever
its text holds (quotes, line breaks JSON must escape, lone surrogates, non-ASCII)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from service.exchange import SEQUENCE, TEXT, EventTemplate, HeldText, named_event
from service.exchange.event_writer import PIECE_CHARS, named_event_pieces

NUMBERED = {"type": "response.output_text.delta", "sequence_number": SEQUENCE, "item_id": "msg_1"}
NESTED = {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": TEXT}}

# Text with what JSON writers treat apart: a lone surrogate (JavaScript slicing a string
# through an emoji), the line breaks a line-splitting client would cut at, quotes, escapes.
AWKWARD = st.sampled_from(["\ud83d", "\udc00", "\u2028", "\u2029", "\x85", '"', "\\", "\n"])


@given(text=st.text(), sequence=st.integers(min_value=0, max_value=10**9))
def test_a_numbered_event_from_its_template_is_the_event_written_whole(
    text: str, sequence: int
) -> None:
    template = EventTemplate({**NUMBERED, "delta": TEXT})

    whole = named_event({**NUMBERED, "sequence_number": sequence, "delta": text})
    assert template.encoded(text, sequence) == whole


@given(text=st.lists(st.text() | AWKWARD).map("".join))
def test_an_event_with_its_text_nested_is_the_event_written_whole(text: str) -> None:
    template = EventTemplate(NESTED)

    whole = named_event({**NESTED, "delta": {"type": "text_delta", "text": text}})
    assert template.encoded(text) == whole


@given(
    texts=st.lists(st.lists(st.text() | AWKWARD, min_size=1).map("".join), max_size=3),
    long_chars=st.integers(min_value=0, max_value=3 * PIECE_CHARS),
)
def test_an_event_in_pieces_is_the_event_written_whole(texts: list[str], long_chars: int) -> None:
    # A long string among short ones, in an object and a list, escapes split across slices.
    long_text = ('\u2028"é\\\n\ud83d' * (long_chars // 6 + 1))[:long_chars]
    event = {
        "type": "response.completed",
        "response": {"output": [{"text": long_text}, *({"text": text} for text in texts)]},
        "long": [long_text, long_text],
    }

    pieces = list(named_event_pieces(event))
    assert b"".join(pieces) == named_event(event)
    # Only the last piece ends as an event does: a client reading one would see it whole.
    assert [piece.endswith(b"\n\n") for piece in pieces].count(True) == 1
    assert pieces[-1].endswith(b"\n\n")


def test_held_text_is_given_back_as_one_string_and_a_long_one_as_it_came() -> None:
    # What a stream's end costs with it: tests/service/responses/test_events.py.
    held = HeldText()
    fragments = [
        f"{number} fragments of a model's answer, word by word. " for number in range(9000)
    ]
    for fragment in fragments:
        held.write(fragment)

    text = held.value()
    assert text == "".join(fragments) and held.chars == len(text)
    assert held.value() is text  # asked again, the same string

    whole_answer = "A whole answer's text, in one delta. " * 5000
    held = HeldText()
    held.write(whole_answer)
    assert held.value() is whole_answer
