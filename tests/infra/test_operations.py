"""Operations from day one (infra/app/alerts.bicep, the diagnostic settings, monitoring.bicep, host.json): the resources
log to the workspace, the workspace has a daily cap, alerts watch errors, latency, health, the poison queue and Event
Grid, an action group mails someone, an operator can read the data, and every threshold is a parameter.

Shapes follow Microsoft's templates reference: diagnosticSettings 2021-05-01-preview, scheduledQueryRules 2023-12-01,
metricAlerts 2018-03-01 (WebtestLocationAvailabilityCriteria, as the azure-quickstart-templates
monitoring-webtest-metric-alert sample), webtests 2022-06-15 (`kind: standard`), actionGroups 2023-01-01.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.responses import JSONResponse

from shared.compose import Health
from tests.infra.test_bicep import (
    AZD_REFERENCE,
    BICEP_FILES,
    INFRA,
    MAIN,
    ROOT,
    accessor,
    azd_parameters,
    body,
    bounds,
    parse,
    raw_parameter_values,
    resources,
)

ALERTS = INFRA / "app" / "alerts.bicep"


def modules() -> dict[str, Any]:
    return parse(MAIN)["modules"]


def workspace() -> Any:
    return accessor("monitoring", "outputs", "logAnalyticsId")


# --- resource logs --------------------------------------------------------------------------------------------


DIAGNOSED = {
    ("app/function.bicep", "site"): "api",
    ("app/storage.bicep", "blobService"): "storage",
    ("app/refresh-queue.bicep", "queueService"): "refreshQueue",
    ("app/refresh-queue.bicep", "blobService"): "refreshQueue",
    ("app/keyvault.bicep", "vault"): "keyVault",
    ("app/docs-events.bicep", "topic"): "docsEvents",
}
"""Each resource whose logs go to the workspace, and the main.bicep module that hands it the workspace."""


@pytest.mark.parametrize(
    ("target", "module"), DIAGNOSED.items(), ids=lambda x: ":".join(x) if isinstance(x, tuple) else x
)
def test_the_app_storage_vault_and_topic_send_their_logs_to_the_workspace(target: tuple[str, str], module: str) -> None:
    path, scope = INFRA / target[0], target[1]
    settings = [
        body(r)
        for r in resources(path).values()
        if r["type"] == "Microsoft.Insights/diagnosticSettings" and body(r)["scope"] == scope
    ]
    assert len(settings) == 1, f"{target}: one diagnostic setting"
    (setting,) = settings
    assert setting["properties"]["workspaceId"] == "logAnalyticsWorkspaceId"
    assert setting["properties"]["logs"] and all(log["enabled"] is True for log in setting["properties"]["logs"])
    assert body(modules()[module])["params"]["logAnalyticsWorkspaceId"] == workspace()


def test_event_grid_delivery_failures_land_in_the_table_the_docs_query() -> None:
    """Without logAnalyticsDestinationType a diagnostic setting writes to AzureDiagnostics; the topic's DeliveryFailures
    category has the resource-specific table AegDeliveryFailureLogs, which Dedicated selects and the docs query."""
    (setting,) = [
        body(r)
        for r in resources(INFRA / "app" / "docs-events.bicep").values()
        if r["type"] == "Microsoft.Insights/diagnosticSettings"
    ]
    assert setting["properties"]["logAnalyticsDestinationType"] == "Dedicated"
    assert [log["category"] for log in setting["properties"]["logs"]] == ["DeliveryFailures"]
    docs = (ROOT / "docs" / "deployment.md").read_text()
    assert "`AegDeliveryFailureLogs`" in docs and "destination type `Dedicated`" in docs


def test_the_workspace_has_a_daily_cap_and_a_retention_that_are_parameters() -> None:
    monitoring = INFRA / "app" / "monitoring.bicep"
    properties = body(resources(monitoring)["workspace"])["properties"]
    assert properties["workspaceCapping"] == {"dailyQuotaGb": "dailyCapGb"}
    assert properties["retentionInDays"] == "retentionInDays"
    params = body(modules()["monitoring"])["params"]
    assert (params["dailyCapGb"], params["retentionInDays"]) == ("logDailyCapGb", "logRetentionDays")
    assert bounds(MAIN, "logDailyCapGb") == {"min_value": 1}
    unset = azd_parameters({})
    assert (unset["logDailyCapGb"], unset["logRetentionDays"]) == ("2", "30")


# --- alerts ---------------------------------------------------------------------------------------------------


def alerts() -> dict[str, Any]:
    return {
        name: r
        for name, r in resources(ALERTS).items()
        if r["type"] in ("Microsoft.Insights/scheduledQueryRules", "Microsoft.Insights/metricAlerts")
    }


def thresholds(alert: dict[str, Any]) -> list[Any]:
    criteria = body(alert)["properties"]["criteria"]
    if "failedLocationCount" in criteria:
        return [criteria["failedLocationCount"]]
    return [criterion["threshold"] for criterion in criteria["allOf"]]


def test_the_alerts_cover_errors_latency_health_the_poison_queue_and_event_grid() -> None:
    found = alerts()
    assert set(found) == {
        "serverErrors",
        "latency",
        "availability",
        "poisonQueue",
        "deliveryFailuresAlert",
        "deadLetteredAlert",
    }
    # The refresh alerts exist with the option, the others always.
    for name in ("poisonQueue", "deliveryFailuresAlert", "deadLetteredAlert"):
        assert found[name]["config"]["condition"] == "refreshOnPublish", name
    for name in ("serverErrors", "latency", "availability"):
        assert "condition" not in found[name]["config"], name
    assert "condition" not in modules()["alerts"]["config"]


def test_every_threshold_is_a_parameter_with_a_default() -> None:
    parameters = parse(ALERTS)["parameters"]
    for name, alert in alerts().items():
        for threshold in thresholds(alert):
            assert isinstance(threshold, str) and threshold in parameters, f"{name}: {threshold!r} is not a parameter"
            assert parameters[threshold]["default"] is not None, f"{name}: {threshold} has no default"
            assert threshold in body(modules()["alerts"])["params"], f"main.bicep does not pass {threshold}"
    passed = body(modules()["alerts"])["params"]
    main_parameters = parse(MAIN)["parameters"]
    for name in (
        "serverErrorPercent",
        "latencyP95Ms",
        "minimumRequests",
        "windowMinutes",
        "availabilityFailedLocations",
        "availabilityFrequencySeconds",
        "poisonMessages",
        "deliveryFailures",
        "deadLetteredEvents",
    ):
        assert isinstance(passed[name], str) and main_parameters[passed[name]]["default"] is not None, name


def test_every_alert_tells_the_action_group_when_there_is_an_address() -> None:
    group = body(resources(ALERTS)["actionGroup"])
    assert resources(ALERTS)["actionGroup"]["config"]["condition"] == "notify"
    assert parse(ALERTS)["variables"]["notify"]["value"] == {
        "operator": {
            "type": "not",
            "operands": {"bool_value": {"function": {"type": "empty", "parameters": {"item_to_test": "alertEmail"}}}},
        }
    }
    (receiver,) = group["properties"]["emailReceivers"]
    assert receiver["emailAddress"] == "alertEmail" and receiver["useCommonAlertSchema"] is True
    assert len(group["properties"]["groupShortName"]) <= 12
    for name, alert in alerts().items():
        actions = body(alert)["properties"]["actions"]
        assert actions in ("logActions", "metricActions"), name
    assert body(modules()["alerts"])["params"]["alertEmail"] == "alertEmail"
    assert azd_parameters({})["alertEmail"] == ""


def test_request_alerts_judge_the_http_functions_requests_with_enough_of_them() -> None:
    for name in ("serverErrors", "latency"):
        properties = body(alerts()[name])["properties"]
        (criterion,) = properties["criteria"]["allOf"]
        assert criterion["query"].startswith("${apiRequests}"), name
        assert "where total >= ${minimumRequests}" in criterion["query"], name
        assert properties["scopes"] == [accessor("applicationInsights", "id")]
        assert properties["windowSize"] == "window"
    assert parse(ALERTS)["variables"]["apiRequests"]["value"] == 'requests | where url has "/api/"'
    latency = body(alerts()["latency"])["properties"]["criteria"]["allOf"][0]["query"]
    assert 'url !has "/api/admin/"' in latency, "the publish hook waits on purpose"
    assert "percentile(duration, 95)" in latency


def test_the_poison_alert_counts_messages_put_on_the_poison_queue_in_the_queue_logs() -> None:
    properties = body(alerts()["poisonQueue"])["properties"]
    (criterion,) = properties["criteria"]["allOf"]
    assert properties["scopes"] == ["logAnalyticsWorkspaceId"]
    assert properties["skipQueryValidation"] is True, "the table exists only once the queue service has logged"
    assert criterion["query"].startswith("StorageQueueLogs ")
    assert 'OperationName == "PutMessage"' in criterion["query"]
    assert "/${poisonQueueName}/messages" in criterion["query"]
    assert body(modules()["alerts"])["params"]["poisonQueueName"] == "${refreshOnPublishQueue}-poison"


def test_the_event_grid_alerts_watch_the_topics_failed_and_dead_lettered_deliveries() -> None:
    for name, metric in (
        ("deliveryFailuresAlert", "DeliveryAttemptFailCount"),
        ("deadLetteredAlert", "DeadLetteredCount"),
    ):
        properties = body(alerts()[name])["properties"]
        assert properties["scopes"] == ["docsEventsTopicId"]
        (criterion,) = properties["criteria"]["allOf"]
        assert (criterion["metricName"], criterion["metricNamespace"]) == (metric, "Microsoft.EventGrid/systemTopics")
        assert criterion["timeAggregation"] == "Total"
    topic = body(modules()["alerts"])["params"]["docsEventsTopicId"]
    assert topic["operator"]["operands"]["true_value"] == accessor("docsEvents", "outputs", "id")


# --- the availability test ------------------------------------------------------------------------------------


def test_a_standard_availability_test_gets_api_health_and_requires_status_ok() -> None:
    test = body(resources(ALERTS)["healthTest"])
    assert test["kind"] == "standard" and test["properties"]["Kind"] == "standard"
    assert test["properties"]["Request"]["RequestUrl"] == "healthUrl"
    assert test["properties"]["Request"]["HttpVerb"] == "GET"
    rules = test["properties"]["ValidationRules"]
    assert rules["ExpectedHttpStatusCode"] == 200
    assert rules["ContentValidation"] == {
        "ContentMatch": "availabilityContentMatch",
        "IgnoreCase": False,
        "PassIfTextFound": True,
    }
    assert test["properties"]["Locations"] == "locations"
    # Linked to Application Insights, as the portal links its own.
    assert test["tags"] == {"function": {"type": "union", "parameters": {"arg_1": "tags", "arg_2": "hiddenLink"}}}
    params = body(modules()["alerts"])["params"]
    assert params["healthUrl"] == "https://${api.outputs.defaultHostName}/api/health"
    criteria = body(alerts()["availability"])["properties"]["criteria"]
    assert criteria["'odata.type'"] == "Microsoft.Azure.Monitor.WebtestLocationAvailabilityCriteria"
    assert criteria["webTestId"] == accessor("healthTest", "id")
    unset = azd_parameters({})
    assert unset["availabilityTestLocations"].split(",") == ["emea-nl-ams-azr", "emea-gb-db3-azr", "us-va-ash-azr"]
    assert int(unset["availabilityFailedLocations"]) <= len(unset["availabilityTestLocations"].split(","))


def _health(status: str, provider_status: str) -> bytes:
    """The health answer as the app renders it: shared/api/rest.py puts `version` first, then the Health model."""
    report = {"status": status, "providers": {"mkdocs": {"status": provider_status}}, "cache": {}, "embedding": {}}
    return bytes(JSONResponse({"version": "1.0.0", **report}).body)


def test_the_content_match_finds_only_the_top_level_status_ok() -> None:
    """`"status":"ok"` alone would also match a provider's status inside a degraded answer."""
    match = azd_parameters({})["availabilityContentMatch"].encode()
    assert list(Health.model_fields)[:2] == ["status", "providers"], "health's first fields moved: update the match"
    assert match in _health("ok", "ok")
    assert match not in _health("degraded", "ok")
    assert match not in _health("unavailable", "ok")


# --- the operator ---------------------------------------------------------------------------------------------


def test_an_operator_principal_gets_data_plane_read_access_when_named() -> None:
    module = modules()["operatorAccess"]
    assert module["config"]["condition"] == {
        "operator": {
            "type": "not",
            "operands": {
                "bool_value": {"function": {"type": "empty", "parameters": {"item_to_test": "operatorPrincipalId"}}}
            },
        }
    }
    params = body(module)["params"]
    assert (params["principalId"], params["principalType"]) == ("operatorPrincipalId", "operatorPrincipalType")
    assert params["queues"] == "refreshOnPublish"
    assert azd_parameters({})["operatorPrincipalId"] == ""
    assert bounds(MAIN, "operatorPrincipalType")["allowed"] == ["User", "Group", "ServicePrincipal"]
    access = resources(INFRA / "app" / "operator-access.bicep")
    scopes = {body(r)["scope"] for r in access.values() if r["type"] == "Microsoft.Authorization/roleAssignments"}
    assert scopes == {"cacheContainer", "deadLetterContainer", "queue", "poisonQueue"}


# --- host.json ------------------------------------------------------------------------------------------------


def test_host_json_records_every_request_for_latency_and_availability() -> None:
    """`Host.Results` at Error recorded failed invocations only: no successful request, so no latency or error rate.
    Requests are kept out of sampling so the error share and the p95 are computed over all of them."""
    logging = json.loads((ROOT / "host.json").read_text())["logging"]
    assert logging["logLevel"]["Host.Results"] == "Information"
    sampling = logging["applicationInsights"]["samplingSettings"]
    assert sampling["isEnabled"] is True
    assert "Request" in sampling["excludedTypes"].split(";")


def test_every_bicep_file_with_a_diagnostic_setting_names_a_workspace_parameter() -> None:
    for path in BICEP_FILES:
        for name, resource in resources(path).items():
            if resource["type"] == "Microsoft.Insights/diagnosticSettings":
                assert "logAnalyticsWorkspaceId" in parse(path)["parameters"], f"{path.name}:{name}"


# --- the docs -------------------------------------------------------------------------------------------------


def _section(docs: str, heading: str) -> str:
    start = docs.index(heading)
    level = heading.split(" ")[0] + " "
    end = docs.find("\n" + level, start + len(heading))
    return docs[start : end if end != -1 else len(docs)]


def test_the_deployment_docs_have_the_combinations_the_operations_and_the_migration() -> None:
    docs = (ROOT / "docs" / "deployment.md").read_text()
    combinations = _section(docs, "## Option combinations")
    for option in ("`privateNetworking` + `refreshOnPublish`", "`entraAuth`", "`zoneRedundant`", "Refused before"):
        assert option in combinations, option
    operations = _section(docs, "## Operations")
    names = {body(alert)["name"] for alert in alerts().values()}
    for name in names:
        assert name.replace("${alertNamePrefix}", "alert-<token>") in operations, f"say what {name} means"
    assert "What to do" in operations and "operatorPrincipalId" in operations
    migration = _section(docs, "### Migrating an environment from the settings' own names")
    assert "azd env set DOCS_FORGE_DOCUMENTATION_ORIGIN" in migration and "Forge__Documentation__Origin" in migration
    assert "### What a first real deployment must confirm" in docs
    assert "### checkov" in docs


def test_every_variable_the_deployment_reads_is_in_the_docs() -> None:
    docs = (ROOT / "docs" / "deployment.md").read_text()
    for value in raw_parameter_values().values():
        reference = AZD_REFERENCE.fullmatch(value)
        assert reference, value
        name = reference["name"]
        if name.startswith("DOCS_FORGE_DOCUMENTATION_") or name in ("AZURE_ENV_NAME", "AZURE_LOCATION"):
            continue  # the settings' variables follow one rule, stated once; azd sets its own two
        assert f"`{name}`" in docs, f"{name} is not in docs/deployment.md"
