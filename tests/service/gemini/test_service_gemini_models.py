"""The Gemini API's model routes through the official google-genai SDK, on `v1beta` and `v1`:
the models `/v1/models` lists, as `Model` objects; the client's key checked in each form
Google's clients send it, and never passed on; errors in Google's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemini_client import KEY_FORM_NAMES, KEY_FORMS, PROXY_KEY, gemini_client
from google.genai import errors
from servers import Proxy, StartProxy
from upstream_server import MODELS, ScriptedUpstream


@pytest.fixture
def keyed_proxy(start_proxy: StartProxy) -> Proxy:
    return start_proxy(proxy_api_keys=[PROXY_KEY])


def test_models_list_holds_the_upstreams_models_and_every_route(
    start_proxy: StartProxy, upstream_url: str, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps({"routes": {"coder": {"base_url": upstream_url}}}))
    proxy = start_proxy(routes_file=routes)

    with gemini_client(proxy) as client:
        models = list(client.models.list())

    assert [model.name for model in models] == ["models/upstream-model", "models/coder"]
    assert models[0].display_name == "upstream-model"
    assert models[0].supported_actions == [
        "generateContent",
        "streamGenerateContent",
        "countTokens",
    ]


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
def test_models_get_answers_a_listed_model_in_either_spelling(
    proxy: Proxy, api_version: str
) -> None:
    with gemini_client(proxy, api_version=api_version) as client:
        bare = client.models.get(model="upstream-model")
        prefixed = client.models.get(model="models/upstream-model")

    assert bare.name == prefixed.name == "models/upstream-model"


def test_a_model_the_list_lacks_is_a_404_in_googles_shape(proxy: Proxy) -> None:
    with gemini_client(proxy) as client, pytest.raises(errors.ClientError) as caught:
        client.models.get(model="gemini-9-ultra")

    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"
    assert caught.value.message == "models/gemini-9-ultra is not found"


def test_a_context_length_the_upstream_lists_is_the_input_token_limit(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.models = {"object": "list", "data": [{"id": "long", "max_model_len": 32768}]}

    with gemini_client(proxy) as client:
        [model] = list(client.models.list())

    assert model.input_token_limit == 32768


def test_v1_models_answers_openais_list_to_openais_clients_and_googles_to_googles(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with gemini_client(proxy, api_version="v1") as client:
        names = [model.name for model in client.models.list()]

    assert names == ["models/upstream-model"]
    assert proxy.http.get("/v1/models").json() == MODELS
    assert proxy.client.models.retrieve("upstream-model").id == "upstream-model"
    assert upstream.requests[-1].path == "/v1/models/upstream-model"  # relayed as before


@pytest.mark.parametrize("sent", KEY_FORMS, ids=KEY_FORM_NAMES)
def test_each_form_of_the_key_is_checked_and_none_reaches_the_upstream(
    upstream: ScriptedUpstream, keyed_proxy: Proxy, sent: dict[str, dict[str, str]]
) -> None:
    answered = keyed_proxy.http.get("/v1beta/models", **sent)
    wrong = {
        kind: {name: value.replace(PROXY_KEY, "wrong") for name, value in pairs.items()}
        for kind, pairs in sent.items()
    }
    refused = keyed_proxy.http.get("/v1beta/models", **wrong)

    assert answered.status_code == 200, answered.text
    assert [model["name"] for model in answered.json()["models"]] == ["models/upstream-model"]
    assert refused.status_code == 401
    assert refused.json()["error"]["status"] == "UNAUTHENTICATED"
    [listed] = upstream.requests
    assert PROXY_KEY not in json.dumps(listed.headers) + listed.query


def test_the_sdk_with_the_proxy_key_is_let_in_and_with_another_is_refused(
    keyed_proxy: Proxy,
) -> None:
    with gemini_client(keyed_proxy, api_key=PROXY_KEY) as client:
        assert [model.name for model in client.models.list()] == ["models/upstream-model"]
    with (
        gemini_client(keyed_proxy, api_key="wrong") as client,
        pytest.raises(errors.ClientError) as caught,
    ):
        list(client.models.list())

    assert caught.value.code == 401 and caught.value.status == "UNAUTHENTICATED"
    assert "x-goog-api-key" in (caught.value.message or "")


def test_the_key_parameter_is_no_key_on_routes_that_relay_their_query(
    upstream: ScriptedUpstream, keyed_proxy: Proxy
) -> None:
    body = {"model": "upstream-embedder", "input": "hi"}
    response = keyed_proxy.http.post("/v1/embeddings", params={"key": PROXY_KEY}, json=body)

    assert response.status_code == 401
    assert upstream.requests == []


def test_an_unknown_path_of_the_gemini_api_is_a_404_in_googles_shape(proxy: Proxy) -> None:
    response = proxy.http.get("/v1beta/tunedModels")

    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": 404, "message": "Not Found", "status": "NOT_FOUND"}
    }
