"""The layer rule of `service/`: each part imports only the parts below it, and a part that is
a package is imported through its `__init__` (its surface), never past it. `protocols` is
imported through its surface too. A planted import that climbs or reaches past a surface
fails here, naming the file, the line and the import."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"

# Lowest first. Parts on one row are independent of each other.
LAYERS: list[tuple[str, ...]] = [
    ("wire",),
    ("observability",),
    ("settings",),
    ("upstream",),
    ("context",),
    ("exchange",),
    ("passthrough", "chat", "responses", "messages"),
    ("auth", "server_limits", "demo_upstream"),
    ("app",),
    ("__main__",),
]
RANK = {part: rank for rank, row in enumerate(LAYERS) for part in row}
PACKAGES = {path.parent.name for path in SERVICE.glob("*/__init__.py")}


def module_name(path: Path) -> str:
    relative = path.relative_to(SERVICE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported_modules(module: str, source: str, *, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every `from … import` in `source`."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def part_of(module: str) -> str | None:
    """The part of `service` a module belongs to (`service.exchange.stream` -> `exchange`)."""
    names = module.split(".")
    return names[1] if names[0] == "service" and len(names) > 1 else None


def violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """What in `source` (the text of `module`) breaks the layer rule."""
    own = part_of(module)
    assert own in RANK, f"{module} belongs to no layer: add its part to LAYERS"
    found = []
    for line, target in imported_modules(module, source, is_package=is_package):
        where = f"{module}:{line} imports {target}"
        if target.startswith("protocols."):
            found.append(f"{where}: past the surface of protocols")
        other = part_of(target)
        if other is None or other == own:
            continue
        if RANK[other] >= RANK[own]:
            found.append(f"{where}: {other} is not below {own}")
        elif other in PACKAGES and target != f"service.{other}":
            found.append(f"{where}: past the surface of service.{other}")
    return found


def test_every_import_of_service_points_down_and_through_a_surface() -> None:
    found = []
    for path in sorted(SERVICE.rglob("*.py")):
        module = module_name(path)
        if module == "service":
            continue
        found += violations(module, path.read_text(), is_package=path.name == "__init__.py")

    assert found == []


def test_an_import_that_climbs_is_named() -> None:
    planted = "from ..chat import create_completion\n"

    assert violations("service.upstream.client", planted) == [
        "service.upstream.client:1 imports service.chat: chat is not below upstream"
    ]


def test_an_import_past_a_surface_is_named() -> None:
    planted = "from .wire.sse import data_event\nfrom protocols.relaxed_json import x\n"

    assert violations("service.app", planted) == [
        "service.app:1 imports service.wire.sse: past the surface of service.wire",
        "service.app:2 imports protocols.relaxed_json: past the surface of protocols",
    ]


def test_parts_of_one_layer_do_not_import_each_other() -> None:
    planted = "from .passthrough import forward\n"

    assert violations("service.chat.completions", planted.replace(".", "..", 1)) == [
        "service.chat.completions:1 imports service.passthrough: passthrough is not below chat"
    ]


def test_a_front_door_does_not_import_another() -> None:
    planted = "from ..chat import create_completion\n"

    assert violations("service.responses.api", planted) == [
        "service.responses.api:1 imports service.chat: chat is not below responses"
    ]


def test_every_part_of_service_has_a_layer() -> None:
    parts = {part_of(module_name(path)) for path in SERVICE.rglob("*.py")} - {None}

    assert parts == set(RANK)


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


def test_no_module_of_service_imports_itself_through_others() -> None:
    modules = {}
    for path in sorted(SERVICE.rglob("*.py")):
        module = module_name(path)
        imported = imported_modules(module, path.read_text(), is_package=path.name == "__init__.py")
        modules[module] = [target for _, target in imported if target.startswith("service.")]

    assert import_cycle(modules) == []


def test_an_import_cycle_is_named() -> None:
    modules = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}

    assert import_cycle(modules) == ["a", "b", "c", "a"]
