"""A call form on a line the model read in a tool result is quoted (`QuotedLines`): only a
call form whose line begins like a line read (the same text before it, the same tag) waits
for its line to end; every other call streams as it did."""

from __future__ import annotations

from parser_harness import run

from protocols import ToolCallStart
from protocols.quoted_lines import MAX_QUOTED_LINES, QuotedLines

READ = "To read a file, answer with:\n<read_file><path>notes.md</path></read_file>\n"
WRITE = "<write_file><path>b.txt</path><content>" + "x" * 4000 + "</content></write_file>"


def _first_start_batch(batches: list[list[object]]) -> int:
    return next(
        at for at, batch in enumerate(batches) if any(isinstance(p, ToolCallStart) for p in batch)
    )


def test_a_call_unlike_any_line_read_streams_at_once() -> None:
    result = run("morph-xml", WRITE, chunks=100, small_call_chars=0, tool_results=[READ])

    assert result.call_values == [("write_file", {"path": "b.txt", "content": "x" * 4000})]
    assert _first_start_batch(result.batches) < len(result.batches) // 2


def test_a_call_that_begins_like_a_line_read_waits_for_its_line() -> None:
    other = "<read_file><path>" + "y" * 4000 + "</path></read_file>"
    result = run("morph-xml", other, chunks=100, small_call_chars=0, tool_results=[READ])

    assert result.call_values == [("read_file", {"path": "y" * 4000})]
    assert _first_start_batch(result.batches) >= len(result.batches) - 2


def test_only_lines_where_a_call_may_begin_are_kept_and_no_more_than_the_bound() -> None:
    lines = QuotedLines.of(
        ["plain prose\n  <a>x</a>  \n", "\n".join(f"[{n}]" for n in range(MAX_QUOTED_LINES + 5))]
    )

    assert "plain prose" not in lines.lines and "<a>x</a>" in lines.lines
    assert len(lines.lines) == MAX_QUOTED_LINES
    assert lines.may_quote("  ", "<a>") and not lines.may_quote("so", "<a>")
