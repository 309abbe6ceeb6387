"""The layer rule of a package: its parts (top-level modules and sub-packages) stand in rows,
lowest first, and each imports only the parts below its row. With `through_surfaces`, a part
that is a package is imported through its `__init__` (its surface), never past it, and so is
every package named in `surfaces` from outside. What breaks the rule is named by module, line
and import."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path


def imported_modules(module: str, source: str, *, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`, the text of `module`."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if not node.level:
                found.append((node.lineno, node.module or ""))
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            if node.module:
                found.append((node.lineno, f"{base}.{node.module}"))
            else:  # `from . import conventions` imports the package's module `conventions`
                found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return sorted(found)


class Layers:
    def __init__(
        self,
        root: Path,
        rows: Sequence[tuple[str, ...]],
        *,
        through_surfaces: bool = False,
        surfaces: Sequence[str] = (),
    ) -> None:
        """`root`: the package's folder; `rows`: its parts, lowest first (parts on one row
        are independent of each other)."""
        self.root = root
        self.name = root.name
        self.rank = {part: rank for rank, row in enumerate(rows) for part in row}
        self.through_surfaces = through_surfaces
        self.surfaces = tuple(surfaces)
        self.packages = {path.parent.name for path in root.glob("*/__init__.py")}

    def module_name(self, path: Path) -> str:
        relative = path.relative_to(self.root.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        return ".".join(parts)

    def part_of(self, module: str) -> str | None:
        """The part of the package a module belongs to (`service.chat.stream` -> `chat`)."""
        names = module.split(".")
        return names[1] if names[0] == self.name and len(names) > 1 else None

    def modules(self) -> Iterator[tuple[str, Path]]:
        """Every module of the package but its own surface, with its file."""
        for path in sorted(self.root.rglob("*.py")):
            module = self.module_name(path)
            if module != self.name:
                yield module, path

    def violations(self, module: str, source: str, *, is_package: bool = False) -> list[str]:
        """What in `source` (the text of `module`) breaks the layer rule."""
        own = self.part_of(module)
        assert own in self.rank, f"{module} belongs to no layer: add its part to the rows"
        found = []
        for line, target in imported_modules(module, source, is_package=is_package):
            where = f"{module}:{line} imports {target}"
            found.extend(
                f"{where}: past the surface of {surface}"
                for surface in self.surfaces
                if target.startswith(f"{surface}.")
            )
            other = self.part_of(target)
            if other is None or other == own:
                continue
            if self.rank[other] >= self.rank[own]:
                found.append(f"{where}: {other} is not below {own}")
            elif (
                self.through_surfaces
                and other in self.packages
                and target != f"{self.name}.{other}"
            ):
                found.append(f"{where}: past the surface of {self.name}.{other}")
        return found

    def all_violations(self) -> list[str]:
        return [
            violation
            for module, path in self.modules()
            for violation in self.violations(
                module, path.read_text(), is_package=path.name == "__init__.py"
            )
        ]

    def import_graph(self) -> dict[str, list[str]]:
        """Each module of the package with the modules of the package it imports."""
        return {
            module: [
                target
                for _, target in imported_modules(
                    module, path.read_text(), is_package=path.name == "__init__.py"
                )
                if target.startswith(f"{self.name}.")
            ]
            for module, path in self.modules()
        }

    def parts(self) -> set[str]:
        """The parts the package's files belong to."""
        return {self.part_of(module) for module, _ in self.modules()} - {None}


def import_cycle(modules: dict[str, list[str]]) -> list[str]:
    """A path of imports that comes back to where it started, or [] when there is none."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for target in modules.get(module, ()):
            if cycle := visit(target, [*path, module]):
                return cycle
        done.add(module)
        return []

    for module in modules:
        if cycle := visit(module, []):
            return cycle
    return []
