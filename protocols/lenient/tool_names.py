"""The declared tools by name, as models write their names: a name that is not declared but
spells exactly one declared name once `.`, `-`, `_` and case are set aside is that tool.
OpenAI names cannot hold a dot, so a client declares BFCL's `geodistance.find` as
`geodistance_find`, and a model that knows the original writes the dot."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..parts import ToolSpec

_SEPARATORS = str.maketrans({".": "_", "-": "_"})


def name_key(name: str) -> str:
    """What two spellings of one tool name share: `.`, `-`, `_` alike, case aside."""
    return name.translate(_SEPARATORS).casefold()


class DeclaredTools(Mapping[str, ToolSpec]):
    """The declared tools, keyed by their declared names (iteration gives those alone), and
    found also by another spelling of one (`tools["geodistance.find"]`, `"Read-File" in
    tools`). A spelling that fits two declared names fits none."""

    __slots__ = ("_sorted_keys", "_spellings", "_tools", "parameters")

    def __init__(self, tools: Iterable[ToolSpec]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        spellings: dict[str, str | None] = {}
        for name in self._tools:
            key = name_key(name)
            spellings[key] = None if key in spellings else name
        self._spellings = spellings
        self.parameters = _Parameters(self)  # each tool's JSON schema, found alike
        self._sorted_keys: list[str] | None = None

    def sorted_keys(self) -> list[str]:
        """Every declared name's `name_key`, sorted (made once a name being written is
        looked up: a dialect's tag still being written)."""
        if self._sorted_keys is None:
            self._sorted_keys = sorted(map(name_key, self._tools))
        return self._sorted_keys

    def declared_name(self, name: str) -> str | None:
        """The declared name `name` stands for, or None."""
        if name in self._tools:
            return name
        return self._spellings.get(name_key(name))

    def __getitem__(self, name: str) -> ToolSpec:
        declared = self.declared_name(name)
        if declared is None:
            raise KeyError(name)
        return self._tools[declared]

    # Looked up for every call and every held `<name`: without the ABC's try/except.
    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.declared_name(name) is not None

    def get(self, name: str, default: Any = None) -> Any:
        declared = self.declared_name(name)
        return default if declared is None else self._tools[declared]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


class _Parameters(Mapping[str, Mapping[str, Any]]):
    """The tools' parameter schemas, by name as `DeclaredTools` finds them."""

    __slots__ = ("_tools",)

    def __init__(self, tools: DeclaredTools) -> None:
        self._tools = tools

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return self._tools[name].parameters

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)
