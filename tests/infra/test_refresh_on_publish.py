"""The `refreshOnPublish` option of infra/main.bicep: off by default; when on, Event Grid's BlobCreated events of the
docs container's search indexes reach a queue that the app reads (Refresh__QueueName), in a storage account of its own
(app/refresh-queue.bicep), so that the host storage never opens its public endpoint for Event Grid.

Parsed with pycep-parser like tests/infra/test_bicep.py; the resource shapes follow Microsoft's Event Grid references
("Storage queue as an event handler", deliveryWithResourceIdentity with the system topic's system-assigned identity).
"""

from __future__ import annotations

import json
from typing import Any

from shared.providers.mkdocs.lifecycle.loading import ZENSICAL_INDEX_PATH
from shared.providers.mkdocs.lifecycle.versions import VERSIONS_PATH
from shared.settings import PREFIX, DocumentationSettings, load_settings
from tests.infra.test_bicep import (
    INFRA,
    MAIN,
    accessor,
    azd_parameters,
    body,
    bounds,
    deployed_settings,
    parse,
    resources,
    values_below,
)

EVENTING = ("refreshQueue", "docsEvents", "docsEventsAccess", "docsEventsSubscription")
"""The modules that exist only with the option: the queue's account, the system topic, its rights there, the
subscription."""
QUEUE_ACCOUNT = INFRA / "app" / "refresh-queue.bicep"


def when_on(true_value: Any, false_value: Any) -> dict[str, Any]:
    return {
        "operator": {
            "type": "conditional",
            "operands": {"condition": "refreshOnPublish", "true_value": true_value, "false_value": false_value},
        }
    }


def modules() -> dict[str, Any]:
    return parse(MAIN)["modules"]


def test_the_option_is_off_by_default_and_then_deploys_no_topic_subscription_queue_or_role() -> None:
    parameters = parse(MAIN)["parameters"]
    assert parameters["refreshOnPublish"]["default"] is False
    assert azd_parameters({})["refreshOnPublish"] == "false"
    for name in EVENTING:
        assert modules()[name]["config"]["condition"] == "refreshOnPublish", f"{name} is deployed without the option"
    # Off, no queue account, no queue role for the app's identity and no queue setting for the host; the host storage
    # never holds a queue, on or off.
    assert body(modules()["rbac"])["params"]["refreshQueue"] == "refreshOnPublish"
    assert body(modules()["api"])["params"]["queueServiceUri"] == when_on(
        accessor("refreshQueue", "outputs", "queueEndpoint"), ""
    )
    storage = resources(INFRA / "app" / "storage.bicep")
    assert not [r for r in storage.values() if "queue" in r["type"].lower()], "the host storage holds no queue"
    rbac = resources(INFRA / "app" / "rbac.bicep")
    assert rbac["storageQueueDataContributorAssignment"]["config"]["condition"] == "refreshQueue"
    assert parse(INFRA / "app" / "rbac.bicep")["parameters"]["refreshQueue"]["default"] is False
    assert parse(INFRA / "app" / "function.bicep")["parameters"]["queueServiceUri"]["default"] == ""
    # The queue account's private endpoints come with it; the host storage's is blob only.
    assert parse(MAIN)["variables"]["storageServices"]["value"] == ["blob"]
    endpoints = modules()["refreshQueueEndpoints"]["config"]["loop_type"]["detail"]
    assert endpoints["array_name"]["operator"]["operands"] == {
        "condition": {
            "operator": {"type": "and", "operands": {"operand_1": "privateNetworking", "operand_2": "refreshOnPublish"}}
        },
        "true_value": "refreshQueueServices",
        "false_value": [],
    }
    assert parse(MAIN)["variables"]["refreshQueueServices"]["value"] == ["queue", "blob"]


def _empty(name: str) -> dict[str, Any]:
    return {"function": {"type": "empty", "parameters": {"item_to_test": name}}}


def test_the_queue_name_setting_is_the_queue_only_when_the_option_is_on() -> None:
    assert deployed_settings()[f"{PREFIX}Refresh__QueueName"] == when_on("refreshOnPublishQueue", "")
    assert DocumentationSettings.model_fields["refresh"].default_factory().queue_name == ""
    queue = parse(MAIN)["parameters"]["refreshOnPublishQueue"]["default"]
    # The same name everywhere: the queue created, the role's scope, the delivery's destination, the app's trigger.
    assert body(modules()["refreshQueue"])["params"]["queueName"] == "refreshOnPublishQueue"
    assert body(modules()["docsEventsAccess"])["params"]["queueName"] == "refreshOnPublishQueue"
    assert body(modules()["docsEventsSubscription"])["params"]["queueName"] == "refreshOnPublishQueue"
    # The default is a name the service accepts (storage queue naming).
    assert load_settings({f"{PREFIX}Refresh__QueueName": queue}).refresh.queue_name == queue
    assert azd_parameters({})["refreshOnPublishQueue"] == queue
    assert azd_parameters({"REFRESH_ON_PUBLISH": "true"})["refreshOnPublish"] == "true"


def test_the_host_reads_the_queue_in_its_own_account_with_its_identity_when_the_option_is_on() -> None:
    """function_app.py's queue trigger reads the connection AzureWebJobsStorage; its queue service URI is the queue
    account's, its blob service URI stays the host storage's, and the identity's queue role is on the queue account."""
    properties = body(resources(INFRA / "app" / "function.bicep")["settings"])["properties"]
    queues = properties["function"]["parameters"]["arg_3"]
    assert queues == {
        "operator": {
            "type": "conditional",
            "operands": {
                "condition": _empty("queueServiceUri"),
                "true_value": {},
                "false_value": {"AzureWebJobsStorage__queueServiceUri": "queueServiceUri"},
            },
        }
    }
    host = properties["function"]["parameters"]["arg_2"]
    assert host["AzureWebJobsStorage__blobServiceUri"] == accessor("storage", "properties", "primaryEndpoints", "blob")
    assert body(resources(INFRA / "app" / "rbac.bicep")["storageQueueDataContributorAssignment"])["scope"] == (
        "refreshQueueAccount"
    )
    assert body(modules()["rbac"])["params"]["refreshQueueAccountName"] == "refreshQueueAccountName"
    assert body(modules()["refreshQueue"])["params"]["name"] == "refreshQueueAccountName"
    assert parse(MAIN)["variables"]["refreshQueueAccountName"]["value"] == (
        "${abbrs.storageStorageAccounts}ev${resourceToken}"
    )
    assert parse(QUEUE_ACCOUNT)["outputs"]["queueEndpoint"]["value"] == accessor(
        "storage", "properties", "primaryEndpoints", "queue"
    )


def test_the_system_topic_is_the_docs_accounts_with_a_system_assigned_identity() -> None:
    path = INFRA / "app" / "docs-events.bicep"
    topic = body(resources(path)["topic"])
    assert resources(path)["docs"]["existing"] is True
    assert resources(path)["docs"]["type"] == "Microsoft.Storage/storageAccounts"
    assert topic["properties"] == {"source": accessor("docs", "id"), "topicType": "Microsoft.Storage.StorageAccounts"}
    assert topic["identity"] == {"type": "SystemAssigned"}
    assert topic["location"] == accessor("docs", "location"), "a regional source's topic lives in its region"
    assert parse(path)["outputs"]["principalId"]["value"] == accessor("topic", "identity", "principalId")
    # Deployed where the docs account is (same subscription), default the app's resource group.
    for name in ("docsEvents", "docsEventsSubscription"):
        scope = body(modules()[name])["scope"]["function"]["parameters"]["resource_group_name"]
        assert scope["operator"]["operands"]["condition"] == _empty("docsStorageResourceGroupName"), name
        assert scope["operator"]["operands"]["true_value"] == accessor("rg", "name"), name
    # An unnamed docs account stops the deployment with a message instead of an unknown-resource error.
    account = body(modules()["docsEvents"])["params"]["storageAccountName"]["operator"]["operands"]
    assert account["condition"] == _empty("docsStorageAccountName")
    assert account["true_value"]["function"]["type"] == "fail"
    assert "DOCS_STORAGE_ACCOUNT" in account["true_value"]["function"]["parameters"]["arg_1"]


def test_the_subscription_sends_only_search_index_writes_of_the_docs_container() -> None:
    path = INFRA / "app" / "docs-events-subscription.bicep"
    subscription = body(resources(path)["subscription"])
    assert subscription["parent"] == "topic" and resources(path)["topic"]["existing"] is True
    assert subscription["properties"]["filter"] == {
        "includedEventTypes": ["Microsoft.Storage.BlobCreated"],
        "subjectBeginsWith": "/blobServices/default/containers/${containerName}/blobs/",
        "advancedFilters": [  # MkDocs' index, or a Zensical site's
            {
                "key": "subject",
                "operatorType": "StringEndsWith",
                "values": ["indexPath", "/search.json", "/versions.json"],
            }
        ],
    }
    assert (ZENSICAL_INDEX_PATH, VERSIONS_PATH) == ("/search.json", "/versions.json")
    params = body(modules()["docsEventsSubscription"])["params"]
    assert params["containerName"] == "docsStorageContainer"
    assert params["indexPath"] == "searchIndexPath"
    parameters = parse(MAIN)["parameters"]
    index_path = DocumentationSettings.model_fields["search_index_path"].default
    assert parameters["searchIndexPath"]["default"] == index_path == "/search/search_index.json"
    # `$web` (a static website) survives azd's substitution, which would read a bare `$web` as a variable.
    assert parameters["docsStorageContainer"]["default"] == "$web"
    assert azd_parameters({})["docsStorageContainer"] == "$web"
    assert azd_parameters({"DOCS_STORAGE_CONTAINER": "site"})["docsStorageContainer"] == "site"


def test_events_reach_the_refresh_queue_as_the_topics_identity_once_it_may_send() -> None:
    path = INFRA / "app" / "docs-events-subscription.bicep"
    properties = body(resources(path)["subscription"])["properties"]
    assert "destination" not in properties, "deliver with the topic's identity, not a key"
    assert properties["deliveryWithResourceIdentity"] == {
        "identity": {"type": "SystemAssigned"},
        "destination": {
            "endpointType": "StorageQueue",
            "properties": {"resourceId": "queueStorageAccountId", "queueName": "queueName"},
        },
    }
    assert properties["eventDeliverySchema"] == "EventGridSchema"
    params = body(modules()["docsEventsSubscription"])["params"]
    assert params["queueStorageAccountId"] == accessor("refreshQueue", "outputs", "id"), "the queue's own account"
    assert params["systemTopicName"] == accessor("docsEvents", "outputs", "name")
    assert body(modules()["docsEventsSubscription"])["dependsOn"] == ["docsEventsAccess"]
    sender = body(modules()["docsEventsAccess"])
    assert sender["scope"] == "rg"
    assert sender["params"]["principalId"] == accessor("docsEvents", "outputs", "principalId")
    assert sender["params"]["storageAccountName"] == accessor("refreshQueue", "outputs", "name")


def test_the_publish_hook_endpoint_is_an_output() -> None:
    output = parse(MAIN)["outputs"]["REFRESH_ENDPOINT"]["value"]
    assert output == "https://${api.outputs.defaultHostName}/api/admin/refresh"


def test_undeliverable_events_are_retried_then_dead_lettered_as_the_topics_identity() -> None:
    """Without a dead-letter destination Event Grid drops an event once its retries run out (24 hours by default)."""
    path = INFRA / "app" / "docs-events-subscription.bicep"
    properties = body(resources(path)["subscription"])["properties"]
    assert properties["retryPolicy"] == {
        "maxDeliveryAttempts": "maxDeliveryAttempts",
        "eventTimeToLiveInMinutes": "eventTimeToLiveInMinutes",
    }
    assert "deadLetterDestination" not in properties, "dead-letter with the topic's identity, not a key"
    assert properties["deadLetterWithResourceIdentity"] == {
        "identity": {"type": "SystemAssigned"},
        "deadLetterDestination": {
            "endpointType": "StorageBlob",
            "properties": {"resourceId": "queueStorageAccountId", "blobContainerName": "deadLetterContainerName"},
        },
    }
    # Event Grid's own limits, and the parameters the deployment passes with their defaults.
    assert (
        bounds(path, "maxDeliveryAttempts")
        == bounds(MAIN, "refreshDeliveryAttempts")
        == {"min_value": 1, "max_value": 30}
    )
    assert (
        bounds(path, "eventTimeToLiveInMinutes")
        == bounds(MAIN, "refreshEventTimeToLiveMinutes")
        == {
            "min_value": 1,
            "max_value": 1440,
        }
    )
    params = body(modules()["docsEventsSubscription"])["params"]
    assert (params["maxDeliveryAttempts"], params["eventTimeToLiveInMinutes"]) == (
        "refreshDeliveryAttempts",
        "refreshEventTimeToLiveMinutes",
    )
    assert params["deadLetterContainerName"] == "refreshDeadLetterContainer"
    assert body(modules()["refreshQueue"])["params"]["deadLetterContainerName"] == "refreshDeadLetterContainer"
    assert body(resources(QUEUE_ACCOUNT)["deadLetterContainer"])["name"] == "deadLetterContainerName"
    unset = azd_parameters({})
    assert (unset["refreshDeliveryAttempts"], unset["refreshEventTimeToLiveMinutes"]) == ("30", "1440")
    # The topic's identity may write there (Storage Blob Data Contributor on that container alone: test_bicep.py).
    access = resources(INFRA / "app" / "docs-events-access.bicep")
    assert body(access["storageBlobDataContributorAssignment"])["scope"] == "deadLetterContainer"


def conditional(condition: Any, true_value: Any, false_value: Any) -> dict[str, Any]:
    return {
        "operator": {
            "type": "conditional",
            "operands": {"condition": condition, "true_value": true_value, "false_value": false_value},
        }
    }


def test_with_private_networking_the_host_storage_stays_private_and_the_queue_account_takes_event_grid() -> None:
    """Event Grid cannot deliver through a private endpoint; Microsoft documents delivery to a storage queue behind a
    firewall as the topic's system-assigned identity with trusted Azure services allowed. Only the queue's own account
    does that (public endpoint on, default Deny, bypass AzureServices under private networking); the host storage
    (package, cache, the host's keys) keeps publicNetworkAccess Disabled, whatever refreshOnPublish says, and nothing
    asks it to admit trusted services for Event Grid."""
    storage = body(resources(INFRA / "app" / "storage.bicep")["storage"])["properties"]
    assert storage["publicNetworkAccess"] == conditional("privateNetworking", "Disabled", "Enabled")
    host_params = parse(INFRA / "app" / "storage.bicep")["parameters"]
    assert set(host_params) == {
        "name",
        "location",
        "tags",
        "deploymentContainerName",
        "cacheContainerName",
        "privateNetworking",
        "zoneRedundant",
        "logAnalyticsWorkspaceId",
    }, "the host storage is asked nothing about Event Grid"
    assert "refreshOnPublish" not in json.dumps(body(modules()["storage"])["params"])
    queue_account = body(resources(QUEUE_ACCOUNT)["storage"])["properties"]
    assert queue_account["publicNetworkAccess"] == "Enabled"
    assert queue_account["networkAcls"] == {
        "bypass": "AzureServices",
        "defaultAction": conditional("privateNetworking", "Deny", "Allow"),
    }
    assert body(modules()["refreshQueue"])["params"]["privateNetworking"] == "privateNetworking"
    # The subscription delivers, and dead-letters, to the queue account, not to the host storage.
    params = body(modules()["docsEventsSubscription"])["params"]
    assert params["queueStorageAccountId"] == accessor("refreshQueue", "outputs", "id")
    assert accessor("storage", "outputs", "id") not in list(values_below(params))
    path = INFRA / "app" / "docs-events-subscription.bicep"
    properties = body(resources(path)["subscription"])["properties"]
    # The one identity a storage firewall lets through.
    assert properties["deliveryWithResourceIdentity"]["identity"] == {"type": "SystemAssigned"}
    assert properties["deadLetterWithResourceIdentity"]["identity"] == {"type": "SystemAssigned"}


def test_the_queue_account_holds_the_queues_and_dead_letters_and_logs_them() -> None:
    account = resources(QUEUE_ACCOUNT)
    assert body(account["queue"])["name"] == "queueName"
    assert body(account["poisonQueue"])["name"] == "${queueName}-poison"
    assert body(account["deadLetterContainer"])["properties"] == {"publicAccess": "None"}
    for name in ("storage", "queue", "poisonQueue", "deadLetterContainer", "queueDiagnostics", "blobDiagnostics"):
        assert "condition" not in account[name]["config"], f"{name}: the module exists only with the option"
    storage = body(account["storage"])
    assert storage["sku"]["name"] == conditional("zoneRedundant", "Standard_ZRS", "Standard_LRS")
    assert body(modules()["refreshQueue"])["params"]["zoneRedundant"] == "zoneRedundant"
    # The operator reads the queues and the dead letters there.
    operator = body(modules()["operatorAccess"])["params"]
    assert operator["refreshQueueAccountName"] == "refreshQueueAccountName"
    access = resources(INFRA / "app" / "operator-access.bicep")
    assert body(access["queueService"])["parent"] == "refreshQueueAccount"
    assert body(access["deadLetterBlobService"])["parent"] == "refreshQueueAccount"
    assert body(parse(MAIN)["modules"]["alerts"])["params"]["refreshQueueAccountName"] == "refreshQueueAccountName"
    assert parse(MAIN)["outputs"]["AZURE_REFRESH_QUEUE_ACCOUNT_NAME"]["value"] == when_on("refreshQueueAccountName", "")
