"""The Functions entry point, indexed the way the Python worker indexes it, and driven in-process."""

from __future__ import annotations

import base64
import importlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import azure.functions as func
import pytest
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from tests.support.sites import PUBLISHED_SITES, ROOTED_OVERRIDE, fixture_env
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin


def import_function_app(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> ModuleType:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    sys.modules.pop("function_app", None)
    return importlib.import_module("function_app")


@pytest.fixture(autouse=True)
async def _shut_down_the_asgi_app() -> AsyncIterator[None]:
    """Send the ASGI shutdown inside the test's loop; otherwise the app's __del__ runs asyncio.run() later."""
    yield
    module = sys.modules.pop("function_app", None)
    if module is not None and module.app.startup_task_done:
        await module.app.middleware.notify_shutdown()
        module.app.startup_task_done = False


@pytest.fixture
def function_app(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    env = {
        "Forge__Documentation__Origin": "http://127.0.0.1:9",
        "Forge__Documentation__Warmup__Schedule": "0 */15 * * * *",
    }
    return import_function_app(monkeypatch, env)


def functions(module: ModuleType) -> dict[str, Any]:
    # The worker indexes once; get_functions() refuses a second call on the same app.
    if not hasattr(module, "_indexed"):
        module._indexed = {fn.get_function_name(): fn for fn in module.app.get_functions()}
    return module._indexed


def test_worker_indexing_finds_the_http_app_the_admin_routes_and_the_timer(function_app: ModuleType) -> None:
    found = functions(function_app)
    assert set(found) == {"http_app_func", "admin_http", "health_http", "server_card_http", "warm_index_caches"}
    http = json.loads(found["http_app_func"].get_function_json())
    trigger, output = http["bindings"]
    assert trigger["type"] == "httpTrigger" and trigger["route"] == "/{*route}"
    assert trigger["authLevel"] == "FUNCTION"
    assert {"GET", "POST"} <= set(trigger["methods"])
    assert output == {"direction": "OUT", "type": "http", "name": "$return"}
    # The publish hook carries its own token, checked by the app: no Functions key in a docs pipeline.
    admin, admin_output = json.loads(found["admin_http"].get_function_json())["bindings"]
    assert admin["type"] == "httpTrigger" and admin["route"] == "api/admin/{*path}"
    assert admin["authLevel"] == "ANONYMOUS" and admin_output["type"] == "http"
    # The availability test probes health without a key.
    health, _ = json.loads(found["health_http"].get_function_json())["bindings"]
    assert health["route"] == "api/health" and health["authLevel"] == "ANONYMOUS" and health["methods"] == ["GET"]
    # A client reads the server card before it holds any credential.
    card, _ = json.loads(found["server_card_http"].get_function_json())["bindings"]
    assert card["route"] == ".well-known/mcp/server-card.json" and card["authLevel"] == "ANONYMOUS"
    timer = json.loads(found["warm_index_caches"].get_function_json())
    (binding,) = timer["bindings"]
    assert binding["type"] == "timerTrigger"
    assert binding["schedule"] == "0 */15 * * * *"  # from the app setting
    assert binding["name"] == "timer"


def test_with_entra_sign_in_the_app_is_the_gate_and_the_function_is_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "Forge__Documentation__Origin": "http://127.0.0.1:9",
        "Forge__Documentation__Auth__TenantId": "11111111-2222-3333-4444-555555555555",
        "Forge__Documentation__Auth__Audience": "api://docs",
    }
    module = import_function_app(monkeypatch, env)
    trigger, _ = json.loads(functions(module)["http_app_func"].get_function_json())["bindings"]
    assert trigger["authLevel"] == "ANONYMOUS"  # the metadata and the 401 challenge reach clients


def test_host_json_leaves_api_paths_to_the_app() -> None:
    with open("host.json", encoding="utf-8") as handle:
        host = json.load(handle)
    assert host["version"] == "2.0"
    assert host["extensions"]["http"]["routePrefix"] == ""
    assert host["extensionBundle"]["id"] == "Microsoft.Azure.Functions.ExtensionBundle"
    assert host["extensionBundle"]["version"].startswith("[4.")


async def call_http(
    module: ModuleType,
    path: str,
    params: dict[str, str] | None = None,
    *,
    method: str = "GET",
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> func.HttpResponse:
    fn = functions(module)["http_app_func"].get_user_function()
    # The host passes the query both in the URL and as params; the ASGI bridge reads the URL.
    url = f"http://localhost{path}" + (f"?{urlencode(params)}" if params else "")
    request = func.HttpRequest(method, url, headers=headers or {}, params=params or {}, body=body)
    context = SimpleNamespace(
        function_directory=".",
        function_name="http_app_func",
        invocation_id="1",
        thread_local_storage=None,
        trace_context=None,
        retry_context=None,
    )
    return await fn(request, context)


async def test_requests_reach_the_asgi_app_through_the_function(function_app: ModuleType) -> None:
    health = await call_http(function_app, "/api/health")
    assert health.status_code == 200
    body = json.loads(health.get_body())
    mkdocs = body["providers"]["mkdocs"]
    assert mkdocs["origin"] == "http://127.0.0.1:9"
    assert mkdocs["sites"]["forge"]["state"] == "not_loaded"
    bad = await call_http(function_app, "/api/docs/search", {"q": "x", "limit": "0"})
    assert bad.status_code == 400
    error = json.loads(bad.get_body())["error"]
    assert error["code"] == "bad_request" and error["message"].startswith("limit")
    missing = await call_http(function_app, "/api/nope")
    assert missing.status_code == 404


async def test_search_and_get_through_the_function_against_a_real_origin(
    monkeypatch: pytest.MonkeyPatch, static_origin: StaticOrigin
) -> None:
    module = import_function_app(monkeypatch, fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE))
    found = await call_http(module, "/api/docs/search", {"q": "install", "limit": "3"})
    assert found.status_code == 200
    results = json.loads(found.get_body())["results"]
    assert results and results[0]["provider"] == "mkdocs"
    got = await call_http(module, "/api/docs/get", {"location": results[0]["location"]})
    assert got.status_code == 200
    assert json.loads(got.get_body())["content"].startswith("---\nsource: ")
    ambiguous = await call_http(module, "/api/docs/get", {"location": "metrics"})
    assert ambiguous.status_code == 409
    assert json.loads(ambiguous.get_body())["resolution"]["reason"] == "ambiguous"


async def test_the_timer_warms_the_blob_cache(
    monkeypatch: pytest.MonkeyPatch, static_origin: StaticOrigin, azurite: Azurite, blob_container: str
) -> None:
    env = fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Cache__Container=blob_container)
    module = import_function_app(monkeypatch, {**env, "AzureWebJobsStorage": azurite.connection_string})
    timer = functions(module)["warm_index_caches"].get_user_function()
    await timer(SimpleNamespace(past_due=True))
    composition = module.api.state.composition
    # Over the service's own store and origin session (started for it), not a second of each.
    assert composition is not None and composition.store.describe().status == "ok"
    with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        names = {blob.name for blob in service.get_container_client(blob_container).list_blobs()}
    assert names == {f"{site}-docs-search-index.json" for site in PUBLISHED_SITES} | {
        f"derived/{site}/missing/pages.json" for site in PUBLISHED_SITES
    } | {f"derived/{site}/ranking/{part}" for site in PUBLISHED_SITES for part in ("ranker.bin", "code.bin")} | {
        f"derived/{site}/code/fences.json" for site in PUBLISHED_SITES
    }


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def call_mcp(module: ModuleType, method: str, params: dict[str, object], *, host: str) -> func.HttpResponse:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {**MCP_HEADERS, "host": host}
    return await call_http(module, "/api/mcp", method="POST", body=json.dumps(message).encode(), headers=headers)


async def test_mcp_through_the_function_initialize_list_and_call(
    monkeypatch: pytest.MonkeyPatch, static_origin: StaticOrigin
) -> None:
    env = fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    module = import_function_app(monkeypatch, {**env, "WEBSITE_HOSTNAME": "docs-func.azurewebsites.net"})
    host = "docs-func.azurewebsites.net"
    client = {"name": "test", "version": "1"}
    initialize = await call_mcp(
        module, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}, host=host
    )
    listed = await call_mcp(module, "tools/list", {}, host=host)
    called = await call_mcp(module, "tools/call", {"name": "search_docs", "arguments": {"query": "install"}}, host=host)
    refused = await call_mcp(module, "tools/list", {}, host="attacker.example.net")

    assert initialize.status_code == 200, initialize.get_body()
    assert json.loads(initialize.get_body())["result"]["serverInfo"]["name"] == "documentation"
    assert {tool["name"] for tool in json.loads(listed.get_body())["result"]["tools"]} == {
        "search_docs",
        "get_doc",
        "list_versions",
    }
    result = json.loads(called.get_body())["result"]
    assert not result.get("isError") and result["structuredContent"]["provider"] == "mkdocs"
    assert result["structuredContent"]["results"]
    assert refused.status_code == 421


# -- fresh on publish: the hook without a Functions key, and the Event Grid queue


def publishing_env(origin: StaticOrigin, azurite: Azurite, container: str, **settings: str) -> dict[str, str]:
    env = fixture_env(
        origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=container,
        Search__Semantic="false",
        **settings,
    )
    return env | {"AzureWebJobsStorage": azurite.connection_string}


async def test_the_publish_hook_is_served_through_its_own_function_with_its_own_token(
    monkeypatch: pytest.MonkeyPatch, static_origin: StaticOrigin, azurite: Azurite, blob_container: str
) -> None:
    env = publishing_env(static_origin, azurite, blob_container, Refresh__Tokens="hook-token")
    module = import_function_app(monkeypatch, env)
    admin = functions(module)["admin_http"].get_user_function()

    async def call(headers: dict[str, str]) -> func.HttpResponse:
        request = func.HttpRequest(
            "POST", "http://localhost/api/admin/refresh", headers=headers, params={}, body=b'{"sites": ["beta-docs"]}'
        )
        context = SimpleNamespace(
            function_directory=".",
            function_name="admin_http",
            invocation_id="2",
            thread_local_storage=None,
            trace_context=None,
            retry_context=None,
        )
        return await admin(request, context)

    assert (await call({})).status_code == 401
    answered = await call({"Authorization": "Bearer hook-token", "Content-Type": "application/json"})
    assert answered.status_code == 200, answered.get_body()
    assert json.loads(answered.get_body())["sites"]["beta-docs"]["outcome"] == "changed"


def event_grid_message(blob: str) -> str:
    """A `BlobCreated` event as Event Grid writes it to a storage queue (Event Grid schema, base64 by default)."""
    event = {
        "topic": "/subscriptions/0/resourceGroups/docs/providers/Microsoft.Storage/storageAccounts/docs",
        "subject": f"/blobServices/default/containers/$web/blobs/{blob}",
        "eventType": "Microsoft.Storage.BlobCreated",
        "id": "1",
        "data": {"api": "PutBlob", "url": f"https://docs.blob.core.windows.net/$web/{blob}"},
        "dataVersion": "",
        "metadataVersion": "1",
        "eventTime": "2026-12-02T10:00:00Z",
    }
    return base64.b64encode(json.dumps(event).encode()).decode()


async def test_an_index_blob_written_to_the_docs_container_refreshes_that_site_through_the_queue(
    monkeypatch: pytest.MonkeyPatch,
    static_origin: StaticOrigin,
    built_origin: Path,
    azurite: Azurite,
    blob_container: str,
) -> None:
    env = publishing_env(static_origin, azurite, blob_container, Refresh__QueueName="docs-refresh")
    module = import_function_app(monkeypatch, env)
    found = functions(module)
    (binding,) = json.loads(found["refresh_on_publish"].get_function_json())["bindings"]
    assert binding["type"] == "queueTrigger" and binding["queueName"] == "docs-refresh"
    assert binding["connection"] == "AzureWebJobsStorage"
    handler = found["refresh_on_publish"].get_user_function()

    # Event Grid drops the event into the queue; the host dequeues it and base64-decodes it (its default).
    with Azurite(service="queue") as queues:
        queue = QueueClient.from_connection_string(queues.connection_string, "docs-refresh")
        queue.create_queue()
        queue.send_message(event_grid_message("beta-docs/search/search_index.json"))
        queue.send_message(event_grid_message("beta-docs/assets/app.css"))
        delivered = list(queue.receive_messages(messages_per_page=10))
    assert len(delivered) == 2

    with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        container = service.get_container_client(blob_container)
        for message in delivered:
            body = base64.b64decode(message.content)
            await handler(func.QueueMessage(id=message.id, body=body, pop_receipt=message.pop_receipt))
        names = {blob.name for blob in container.list_blobs()}
    assert names == {  # only that site
        "beta-docs-docs-search-index.json",
        "derived/beta-docs/missing/pages.json",
        "derived/beta-docs/ranking/ranker.bin",
        "derived/beta-docs/ranking/code.bin",
        "derived/beta-docs/code/fences.json",
    }

    # A refresh that fails raises, so the queue delivers the message again (and, at last, to the poison queue).
    static_origin.fail("/beta-docs/search/search_index.json", 503)
    with pytest.raises(RuntimeError, match="beta-docs"):
        body = base64.b64decode(event_grid_message("beta-docs/search/search_index.json"))
        await handler(func.QueueMessage(id="3", body=body))
    # Not JSON, or no site's index: dropped, said in the log, never retried forever.
    await handler(func.QueueMessage(id="4", body=b"not json"))
