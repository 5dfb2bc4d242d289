"""The Functions entry point, indexed the way the Python worker indexes it, and driven in-process."""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import azure.functions as func
import pytest


@pytest.fixture
def function_app(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("Forge__Documentation__Origin", "http://127.0.0.1:9")
    monkeypatch.setenv("Forge__Documentation__Warmup__Schedule", "0 */15 * * * *")
    sys.modules.pop("function_app", None)
    return importlib.import_module("function_app")


def functions(module: ModuleType) -> dict[str, Any]:
    # The worker indexes once; get_functions() refuses a second call on the same app.
    if not hasattr(module, "_indexed"):
        module._indexed = {fn.get_function_name(): fn for fn in module.app.get_functions()}
    return module._indexed


def test_worker_indexing_finds_the_http_app_and_the_timer(function_app: ModuleType) -> None:
    found = functions(function_app)
    assert set(found) == {"http_app_func", "warm_index_caches"}
    http = json.loads(found["http_app_func"].get_function_json())
    trigger, output = http["bindings"]
    assert trigger["type"] == "httpTrigger" and trigger["route"] == "/{*route}"
    assert trigger["authLevel"] == "FUNCTION"
    assert {"GET", "POST"} <= set(trigger["methods"])
    assert output == {"direction": "OUT", "type": "http", "name": "$return"}
    timer = json.loads(found["warm_index_caches"].get_function_json())
    (binding,) = timer["bindings"]
    assert binding["type"] == "timerTrigger"
    assert binding["schedule"] == "0 */15 * * * *"  # from the app setting
    assert binding["name"] == "timer"


def test_host_json_leaves_api_paths_to_the_app() -> None:
    with open("host.json", encoding="utf-8") as handle:
        host = json.load(handle)
    assert host["version"] == "2.0"
    assert host["extensions"]["http"]["routePrefix"] == ""
    assert host["extensionBundle"]["id"] == "Microsoft.Azure.Functions.ExtensionBundle"
    assert host["extensionBundle"]["version"].startswith("[4.")


def test_sample_settings_document_every_setting_the_service_reads() -> None:
    from shared.settings import PREFIX, DocumentationSettings

    with open("local.settings.sample.json", encoding="utf-8") as handle:
        sample = json.load(handle)
    values, comments = sample["Values"], sample["_comments"]
    assert values["FUNCTIONS_WORKER_RUNTIME"] == "python"
    expected = set()
    for name, field in DocumentationSettings.model_fields.items():
        alias = field.alias or name
        annotation = field.annotation
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            expected |= {f"{PREFIX}{alias}__{sub.alias}" for sub in annotation.model_fields.values()}
        elif not alias.startswith("AzureWebJobs"):
            expected.add(PREFIX + alias)
    assert expected <= set(values), expected - set(values)
    assert expected <= set(comments), expected - set(comments)


async def call_http(module: ModuleType, path: str, params: dict[str, str] | None = None) -> func.HttpResponse:
    fn = functions(module)["http_app_func"].get_user_function()
    request = func.HttpRequest("GET", f"http://localhost{path}", headers={}, params=params or {}, body=b"")
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
    assert body["origin"] == "http://127.0.0.1:9"
    assert body["sites"]["forge"]["state"] == "not_loaded"
    bad = await call_http(function_app, "/api/docs/search", {"q": "x", "limit": "0"})
    assert bad.status_code == 400
    assert json.loads(bad.get_body())["error"]["code"] == "bad_request"
    missing = await call_http(function_app, "/api/nope")
    assert missing.status_code == 404
