"""Error shapes by request: OpenAI's everywhere, but under the paths a front door registered
with its own shape, and on a path two APIs share when the other API's client asks."""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection

from service.wire import INVALID_REQUEST, ErrorShapes, error_body

BODY = error_body("no such thing", error_type=INVALID_REQUEST, param="x")


def other_api(error: dict[str, Any], status: int) -> tuple[dict[str, Any], int]:
    """An API that answers every error of the proxy's 502 as its own 503."""
    return {"problem": error["message"], "status": status}, 503 if status == 502 else status


def to(path: str, query: str = "") -> HTTPConnection:
    """A request to `path` (with `query`), as the error handlers see it."""
    scope = {"type": "http", "path": path, "query_string": query.encode(), "headers": []}
    return HTTPConnection(scope)


def test_a_registered_path_and_the_paths_below_it_answer_in_its_shape() -> None:
    shapes = ErrorShapes({"/v1/other": other_api})

    assert shapes.shaped(to("/v1/other"), BODY, 400) == (
        {"problem": "no such thing", "status": 400},
        400,
    )
    assert shapes.shaped(to("/v1/other/count"), BODY, 404)[0] == {
        "problem": "no such thing",
        "status": 404,
    }


def test_a_shape_may_answer_with_a_status_of_its_own() -> None:
    shapes = ErrorShapes({"/v1/other": other_api})

    assert shapes.shaped(to("/v1/other"), BODY, 502)[1] == 503
    assert shapes.shaped(to("/v1/chat/completions"), BODY, 502) == (BODY, 502)


def test_a_path_that_only_begins_with_the_same_letters_answers_in_openais_shape() -> None:
    shapes = ErrorShapes({"/v1/other": other_api})

    assert shapes.shaped(to("/v1/otherwise"), BODY, 400) == (BODY, 400)
    assert shapes.shaped(to("/v1/chat/completions"), BODY, 400) == (BODY, 400)
    assert ErrorShapes().shaped(to("/v1/other"), BODY, 400) == (BODY, 400)


def test_a_custom_method_below_a_shared_prefix_answers_in_its_apis_shape() -> None:
    shapes = ErrorShapes(custom_methods={"/v1/models": other_api})

    assert shapes.shaped(to("/v1/models/m:generate"), BODY, 400)[0]["problem"] == "no such thing"
    assert shapes.shaped(to("/v1/models/org/m:generate"), BODY, 400)[0]["problem"] == (
        "no such thing"
    )
    assert shapes.shaped(to("/v1/models/m"), BODY, 404) == (BODY, 404)
    assert shapes.shaped(to("/v1/models"), BODY, 401) == (BODY, 401)
    assert shapes.shaped(to("/v1/models:generate"), BODY, 400) == (BODY, 400)
    assert shapes.shaped(to("/v1/models/a:b/c"), BODY, 400) == (BODY, 400)


def test_a_shared_path_answers_in_the_other_apis_shape_when_its_client_asks() -> None:
    def asks_other(connection: HTTPConnection) -> bool:
        return "other_key" in connection.query_params

    shapes = ErrorShapes(shared={"/v1/models": (asks_other, other_api)})

    assert shapes.shaped(to("/v1/models/m", "other_key=k"), BODY, 404)[0]["status"] == 404
    assert shapes.shaped(to("/v1/models", "other_key=k"), BODY, 401)[0]["status"] == 401
    assert shapes.shaped(to("/v1/models/m"), BODY, 404) == (BODY, 404)
    assert shapes.shaped(to("/v1/modelsx", "other_key=k"), BODY, 404) == (BODY, 404)
