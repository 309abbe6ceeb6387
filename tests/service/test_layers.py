"""The layer rule of `service/`: each part imports only the parts below it, and a part that is
a package is imported through its `__init__` (its surface), never past it. `protocols` is
imported through its surface too. A planted import that climbs or reaches past a surface
fails here, naming the file, the line and the import."""

from __future__ import annotations

from pathlib import Path

from layers import Layers, import_cycle

SERVICE = Layers(
    Path(__file__).resolve().parents[2] / "service",
    # Lowest first. Parts on one row are independent of each other.
    [
        ("wire",),
        ("observability",),
        ("settings",),
        ("upstream",),
        ("context", "auth"),
        ("exchange",),
        ("passthrough",),
        ("chat", "responses", "messages", "gemini"),
        ("model_routes", "probes", "server_limits", "demo_upstream"),
        ("app",),
        ("__main__",),
    ],
    through_surfaces=True,
    surfaces=["protocols"],
)


def test_every_import_of_service_points_down_and_through_a_surface() -> None:
    assert SERVICE.all_violations() == []


def test_an_import_that_climbs_is_named() -> None:
    planted = "from ..chat import create_completion\n"

    assert SERVICE.violations("service.upstream.client", planted) == [
        "service.upstream.client:1 imports service.chat: chat is not below upstream"
    ]


def test_an_import_past_a_surface_is_named() -> None:
    planted = "from .wire.sse import data_event\nfrom protocols.lenient.relaxed_json import x\n"

    assert SERVICE.violations("service.app", planted) == [
        "service.app:1 imports service.wire.sse: past the surface of service.wire",
        "service.app:2 imports protocols.lenient.relaxed_json: past the surface of protocols",
    ]


def test_parts_of_one_layer_do_not_import_each_other() -> None:
    planted = "from ..gemini import model_method\n"

    assert SERVICE.violations("service.chat.completions", planted) == [
        "service.chat.completions:1 imports service.gemini: gemini is not below chat"
    ]


def test_a_front_door_does_not_import_another() -> None:
    planted = "from ..chat import create_completion\n"

    assert SERVICE.violations("service.responses.api", planted) == [
        "service.responses.api:1 imports service.chat: chat is not below responses"
    ]


def test_every_part_of_service_has_a_layer() -> None:
    assert SERVICE.parts() == set(SERVICE.rank)


def test_no_module_of_service_imports_itself_through_others() -> None:
    assert import_cycle(SERVICE.import_graph()) == []


def test_an_import_cycle_is_named() -> None:
    modules = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}

    assert import_cycle(modules) == ["a", "b", "c", "a"]
