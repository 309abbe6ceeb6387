"""docs/protocols.md's dialect table and the registered dialects are one list: a row for each
dialect, named as registered, whose "what the model writes" shows every marker its open
forms begin with (the rows of `dialects/table.py` and the modules' alike)."""

from __future__ import annotations

import re
from pathlib import Path

from protocols.streaming.dialect_forms import Dialect, dialect_names

DOCS = Path(__file__).parents[3] / "docs" / "protocols.md"
_ROW = re.compile(r"^\| `(?P<name>[\w-]+)` \| (?P<writes>.*?) \| (?:mid-text|whole answer only) \|")


def _documented() -> dict[str, str]:
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        found = _ROW.match(line)
        if found:
            rows[found["name"]] = found["writes"].replace("\\|", "|")
    return rows


def test_the_docs_table_lists_every_registered_dialect_and_no_other() -> None:
    assert sorted(_documented()) == sorted(dialect_names())


def test_each_dialects_row_shows_every_marker_it_opens_with() -> None:
    documented = _documented()
    for name in dialect_names():
        for form in Dialect.registered[name].forms:
            assert form.marker in documented[name], (name, form.marker)
