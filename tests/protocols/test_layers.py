"""The layer rule of `protocols/`: the vocabulary at the bottom, then the lenient readers, the
contracts, the streaming machinery, the protocols, the dialects; each part imports only the
parts below it. (Inside `protocols/` modules import each other's modules directly: the
package's surface is for those outside it.) A planted import that climbs fails here, naming
the file, the line and the import."""

from __future__ import annotations

from pathlib import Path

from layers import Layers

PROTOCOLS = Layers(
    Path(__file__).resolve().parents[2] / "protocols",
    # Lowest first. Parts on one row are independent of each other.
    [
        ("parts", "registry", "quoted_lines"),
        ("lenient",),
        ("base",),
        ("streaming",),
        ("formats",),
        ("dialects",),
    ],
)


def test_every_import_of_protocols_points_down() -> None:
    assert PROTOCOLS.all_violations() == []


def test_an_import_that_climbs_is_named() -> None:
    planted = "from typing import Any\n\nfrom ..formats.json_mix import hermes_call\n"

    assert PROTOCOLS.violations("protocols.streaming.tag_loop", planted) == [
        "protocols.streaming.tag_loop:3 imports protocols.formats.json_mix: "
        "formats is not below streaming"
    ]


def test_the_vocabulary_imports_no_parsing_helper() -> None:
    planted = "from .streaming.call_shell import CallShell\n"

    assert PROTOCOLS.violations("protocols.parts", planted) == [
        "protocols.parts:1 imports protocols.streaming.call_shell: streaming is not below parts"
    ]


def test_parts_of_one_layer_do_not_import_each_other() -> None:
    planted = "from .parts import ToolSpec\n"

    assert PROTOCOLS.violations("protocols.registry", planted) == [
        "protocols.registry:1 imports protocols.parts: parts is not below registry"
    ]


def test_every_part_of_protocols_has_a_layer() -> None:
    assert PROTOCOLS.parts() == set(PROTOCOLS.rank)


def test_no_two_modules_share_a_name() -> None:
    # One basename, one idea: a reader who greps for a module finds the one meant. (The
    # front doors of `service/` each have their own `routes.py`, `request.py` ...: one role
    # per name, by convention; `protocols/` has no such parallel packages.)
    modules = [
        path.relative_to(PROTOCOLS.root.parent).as_posix()
        for path in PROTOCOLS.root.rglob("*.py")
        if path.name != "__init__.py"
    ]
    by_name: dict[str, list[str]] = {}
    for module in modules:
        by_name.setdefault(module.rsplit("/", 1)[-1], []).append(module)

    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
