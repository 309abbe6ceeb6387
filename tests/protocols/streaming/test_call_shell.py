"""The empty shell calls were written in (a code fence, a wrapper tag), once the calls are
taken out of it, is layout: a 0.5B model's answers left ```` ```xml\n\n``` ```` and
`<tool_result>\n\n</tool_result>` as the message's content."""

from __future__ import annotations

import pytest
from parser_harness import (
    CHUNKINGS,
    MODES,
    PROTOCOL_NAMES,
    Chunks,
    check_contract,
    run,
    sample_call,
)

from protocols import ArgumentsMode

# (what the model wrote around its calls, with {} for each call; the text that is left)
SHELLS = {
    "fence": ("```xml\n{}\n```", ""),
    "fence-without-language": ("```\n{}\n```\n", ""),
    "wrapper-tag": ("<tool_result>\n{}\n</tool_result>", ""),
    "wrapper-tag-with-attributes": ('<tool_result tool="x">\n\n{}\n\n</tool_result>', ""),
    "indented-fence-two-calls": ("  ```xml\n  {}\n  {}\n  ```", ""),
    "two-fences": ("```xml\n{}\n```\n```xml\n{}\n```", ""),
    "prose-after": ("```xml\n{}\n```\nDone.", "Done."),
    "closing-never-written": ("```xml\n{}\n", ""),
    # A fence that holds only calls is their shell after prose too (the fence's opening is
    # held until its first line shows a call).
    "prose-before": ("Sure:\n```xml\n{}\n```", "Sure:\n"),
    # Not shells: a fence opening a code block ends the calls' fence, and is text; a
    # closing that is more than a closing is text.
    "fence-opening-a-code-block": ("```xml\n{}\n```python\nx\n```", "```python\nx\n```"),
    "tag-on-the-call-line": ("<result>{}</result>", "<result></result>"),
}


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize(("shell", "text"), SHELLS.values(), ids=SHELLS.keys())
def test_the_empty_shell_around_calls_is_layout(
    protocol: str, mode: ArgumentsMode, chunks: Chunks, shell: str, text: str
) -> None:
    call = sample_call(protocol)
    source = shell.replace("{}", call)

    result = run(protocol, source, chunks=chunks, mode=mode)

    assert len(result.calls) == shell.count("{}")
    assert result.text == text
    check_contract(result)
