"""The parser of an answer offered no tools whose think blocks are wanted apart
(`ThinkBlocks`): every think block the tag loop knows is read, nothing is lost, any chunking
gives the same text and markers, and what cannot begin a tag goes out at once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols import Part, TextDelta, ThinkEnd, ThinkStart
from protocols.streaming.think_blocks import ThinkBlocks
from protocols.streaming.think_tags import THINK_TAGS

PAIRS = [pytest.param(open_tag, close, id=open_tag) for open_tag, close in THINK_TAGS.items()]


def fed(*pieces: str) -> list[Part]:
    parser = ThinkBlocks()
    parts = [part for piece in pieces for part in parser.feed(piece)]
    return parts + parser.finish()


def merged(parts: list[Part]) -> list[object]:
    """Parts with adjacent texts joined: chunkings differ only in how text is split."""
    out: list[object] = []
    for part in parts:
        if isinstance(part, TextDelta) and out and isinstance(out[-1], str):
            out[-1] += part.text
        else:
            out.append(part.text if isinstance(part, TextDelta) else part)
    return out


@pytest.mark.parametrize(("open_tag", "close"), PAIRS)
def test_a_block_is_read_apart_from_the_text_around_it(open_tag: str, close: str) -> None:
    answer = f"{open_tag}Hm, Paris.{close}It is sunny."

    every_split = {repr(merged(fed(answer[:cut], answer[cut:]))) for cut in range(len(answer) + 1)}

    assert every_split == {
        repr([ThinkStart(open_tag), "Hm, Paris.", ThinkEnd(close), "It is sunny."])
    }


def test_a_block_the_answer_never_closes_ends_with_it() -> None:
    assert merged(fed("<think>still thinking")) == [
        ThinkStart("<think>"),
        "still thinking",
        ThinkEnd(""),
    ]


def test_text_that_cannot_begin_a_tag_goes_out_at_once() -> None:
    parser = ThinkBlocks()

    assert merged(parser.feed("It is <thi")) == ["It is "]
    assert merged(parser.feed("s>")) == ["<this>"]
    assert merged(parser.feed("<think>a</think")) == [ThinkStart("<think>"), "a"]


@given(st.lists(st.sampled_from(["<think>", "</think>", "<", "a", "think>", "\n"]), max_size=12))
def test_nothing_is_lost_and_any_chunking_reads_alike(pieces: list[str]) -> None:
    answer = "".join(pieces)

    whole, split = fed(answer), fed(*pieces)

    assert merged(whole) == merged(split)
    written = "".join(part.text if isinstance(part, TextDelta) else part.tag for part in whole)
    assert written == answer
