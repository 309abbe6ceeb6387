"""What following the answer's structure costs per streamed chunk: a long answer of prose
(Markdown with lists, inline code, a fence of code, `<`, `[` and backticks in it, no call)
fed to a JSON-mix and a Morph-XML parser in word-sized deltas, as a model streams it. The
figure is the parsing thread's CPU time per delta, best of several rounds; `--against`
runs the same measurement on another checkout of the project in the same run, so a change
is shown against the code before it:

    git worktree add /tmp/before <commit> && python bench/reading_context.py --against /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

PROSE = (
    "## What changed\n\n"
    "The handler now checks `a < b` before it writes, and the `[config]` section gained a"
    " `retries` key. See the list:\n\n"
    "- the parser reads `<tool_call>` tags only where a message begins;\n"
    "- a log line such as 2026-12-07 INFO started is quoted;\n"
    "- <!-- a comment --> stays text.\n\n"
    "```python\ndef handler(request):  # <div> & a < b\n    return {'ok': True}\n```\n\n"
    "That is all for this part, and the next one follows the same shape.\n\n"
)
ROUNDS = 5
TARGET_CHARS = 400_000


def deltas(text: str) -> list[str]:
    """Word-sized deltas, as a model streams (a word and the blank after it)."""
    return re.findall(r"\S*\s*", text)


def per_delta_microseconds(protocol: str) -> float:
    from protocols import ToolSpec, get_protocol

    tools = [
        ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {}}}),
        ToolSpec("write_file", "Write a file", {"type": "object", "properties": {"path": {}}}),
    ]
    pieces = deltas(PROSE * (TARGET_CHARS // len(PROSE)))
    best = float("inf")
    for _ in range(ROUNDS):
        parser = get_protocol(protocol).stream_parser(tools)
        started = time.thread_time()
        for piece in pieces:
            parser.feed(piece)
        parser.finish()
        best = min(best, time.thread_time() - started)
    return best / len(pieces) * 1e6


def measure() -> dict[str, float]:
    return {protocol: per_delta_microseconds(protocol) for protocol in ("json-mix", "morph-xml")}


def measured_in(checkout: Path) -> dict[str, float]:
    """The same measurement with `checkout`'s protocols imported."""
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, __file__, "--json"],
        env=environment,
        cwd=checkout,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--against", type=Path, help="another checkout, measured in the same run")
    options.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = options.parse_args()
    if args.json:
        print(json.dumps(measure()))
        return
    here = measured_in(Path(__file__).resolve().parents[1])
    before = measured_in(args.against) if args.against else None
    print(
        f"{'protocol':<10} {'this tree µs/delta':>20}"
        + (f" {'against µs/delta':>18} {'ratio':>7}" if before else "")
    )
    for protocol, cost in here.items():
        row = f"{protocol:<10} {cost:>20.2f}"
        if before:
            row += f" {before[protocol]:>18.2f} {cost / before[protocol]:>7.2f}"
        print(row)


if __name__ == "__main__":
    main()
