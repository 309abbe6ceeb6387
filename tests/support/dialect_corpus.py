"""The dialect corpus (`tests/protocols/dialects/dialect_corpus/`, described in its README): model
outputs in the call formats models write on their own, each with the calls, error kinds and
text it must give."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parents[1] / "protocols" / "dialects" / "dialect_corpus"
HEADER = "=== "


@dataclass(frozen=True)
class Case:
    dialect: str
    name: str
    output: str
    expected: dict[str, Any]

    def expects(self, key: str, protocol: str) -> Any:
        return self.expected.get(f"{key}@{protocol}", self.expected.get(key))


def _cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    name, expected, lines = "", {}, list[str]()
    for line in [*path.read_text(encoding="utf-8").split("\n"), f"{HEADER}case: "]:
        if not line.startswith(HEADER):
            lines.append(line)
            continue
        key, _, value = line[len(HEADER) :].partition(": ")
        if key != "case":
            expected[key] = json.loads(value)
            continue
        if name:
            output = "\n".join(lines).removesuffix("\n")
            cases.append(Case(path.stem, name, output, expected))
        name, expected, lines = value, {}, []
    return cases


CASES = [case for path in sorted(CORPUS.glob("*.txt")) for case in _cases(path)]
