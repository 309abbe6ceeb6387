"""A request body nested deeper than the JSON decoder goes is a 400 like any invalid JSON."""

from __future__ import annotations

from servers import Proxy


def test_deeply_nested_body_is_a_400(proxy: Proxy) -> None:
    response = proxy.http.post(
        "/v1/chat/completions",
        content=b"[" * 200_000,
        headers={"content-type": "application/json"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert response.headers.get("connection") != "close"
