"""The Bicep under infra/, parsed with pycep-parser (no Bicep CLI, no network) and checked against what it deploys.

The app-setting checks derive the expected names from the settings model itself, so a setting added to
`shared/settings/` fails here until the artefacts are generated again (`tools/settings_artifacts.py`, whose
equality with the committed files tests/infra/test_settings_artifacts.py checks); these check what they deploy.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pycep import BicepParser

from shared.settings import PREFIX, load_settings
from tools.settings_artifacts import NOT_DEPLOYED, SHIPPED, WIRED, Setting, azd_variable, settings

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
MAIN = INFRA / "main.bicep"
BICEP_FILES = sorted(INFRA.rglob("*.bicep"))

ALLOWED_API_VERSIONS = {
    "Microsoft.Insights/workbooks": "2023-06-01",
    "Microsoft.Authorization/roleAssignments": "2022-04-01",
    "Microsoft.EventGrid/systemTopics": "2025-02-15",
    "Microsoft.EventGrid/systemTopics/eventSubscriptions": "2025-02-15",
    # entraAuth's app registration (app/entra-app.bicep): the Microsoft Graph Bicep extension's v1.0 types, whose
    # version is the extension's in infra/bicepconfig.json (tests/infra/test_entra_auth.py).
    "Microsoft.Graph/applications": "v1.0",
    "Microsoft.Graph/servicePrincipals": "v1.0",
    "Microsoft.Insights/actionGroups": "2023-01-01",
    "Microsoft.Insights/components": "2020-02-02",
    "Microsoft.Insights/diagnosticSettings": "2021-05-01-preview",
    "Microsoft.Insights/metricAlerts": "2018-03-01",
    "Microsoft.Insights/scheduledQueryRules": "2023-12-01",
    "Microsoft.Insights/webtests": "2022-06-15",
    "Microsoft.KeyVault/vaults": "2023-07-01",
    "Microsoft.KeyVault/vaults/secrets": "2023-07-01",
    "Microsoft.ManagedIdentity/userAssignedIdentities": "2023-01-31",
    "Microsoft.Network/natGateways": "2023-11-01",
    "Microsoft.Network/networkSecurityGroups": "2023-11-01",
    "Microsoft.Network/privateDnsZones": "2020-06-01",
    "Microsoft.Network/privateDnsZones/virtualNetworkLinks": "2020-06-01",
    "Microsoft.Network/privateEndpoints": "2023-11-01",
    "Microsoft.Network/privateEndpoints/privateDnsZoneGroups": "2023-11-01",
    "Microsoft.Network/publicIPAddresses": "2023-11-01",
    "Microsoft.Network/virtualNetworks": "2023-11-01",
    # An existing spoke's subnets, read only (app/spoke-subnets.bicep).
    "Microsoft.Network/virtualNetworks/subnets": "2023-11-01",
    "Microsoft.OperationalInsights/workspaces": "2023-09-01",
    "Microsoft.Resources/resourceGroups": "2022-09-01",
    "Microsoft.Search/searchServices": "2023-11-01",
    "Microsoft.Storage/storageAccounts": "2023-05-01",
    "Microsoft.Storage/storageAccounts/blobServices": "2023-05-01",
    "Microsoft.Storage/storageAccounts/blobServices/containers": "2023-05-01",
    "Microsoft.Storage/storageAccounts/queueServices": "2023-05-01",
    "Microsoft.Storage/storageAccounts/queueServices/queues": "2023-05-01",
    "Microsoft.Web/serverfarms": "2024-04-01",
    "Microsoft.Web/sites": "2024-04-01",
    "Microsoft.Web/sites/basicPublishingCredentialsPolicies": "2024-04-01",
    "Microsoft.Web/sites/config": "2024-04-01",
}

ROLES = {
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
    "3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
    "1407120a-92aa-4202-b7e9-c0e197c71c8f": "Search Index Data Reader",
    "4633458b-17de-408a-b874-0445c86b69e6": "Key Vault Secrets User",
    "974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
}
"""Every role the app's identity holds, by built-in role definition id: exactly what the app touches."""

OTHER_HOLDERS = {
    "app/docs-events-access.bicep": (
        ("docsEvents", "outputs", "principalId"),
        {
            "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a": "Storage Queue Data Message Sender",
            "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
        },
    ),
    "app/operator-access.bicep": (
        ("operatorPrincipalId",),
        {
            "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader",
            "19e7f393-937e-4f77-808e-94535e297925": "Storage Queue Data Reader",
        },
    ),
}
"""The role assignments that go to another identity than the app's: which module, whose principal, which roles.

With `refreshOnPublish`, Event Grid delivers the docs account's BlobCreated events to the refresh queue (in an account
of its own, app/refresh-queue.bicep) as the docs account's system topic (its system-assigned identity), and
dead-letters what it cannot deliver to a blob container as the same identity: Microsoft's documented keyless delivery,
and the only identity it may use past a storage firewall. It may add messages to that one queue and write to that one
container, nothing else. The operator (`operatorPrincipalId`) may read the cache container, the queues and the dead
letters. Every such assignment is scoped to one queue or one container, never the account.
"""
NARROW_SCOPES = {
    "Microsoft.Storage/storageAccounts/queueServices/queues",
    "Microsoft.Storage/storageAccounts/blobServices/containers",
}

HOST_OWNED = re.compile(r"^(FUNCTIONS_|AzureWebJobs|APPLICATIONINSIGHTS_|AZURE_|WEBSITE_)", re.IGNORECASE)
"""Names the Functions host or the platform owns (the model reads some, such as `WEBSITE_HOSTNAME`, as they are)."""


@cache
def parse(path: Path) -> dict[str, Any]:
    return BicepParser().parse(file_path=path)


def resources(path: Path) -> dict[str, Any]:
    return parse(path).get("resources") or {}


def body(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource's or module's properties, under any deploy condition."""
    config = resource["config"]
    return config["config"] if "condition" in config else config


def model_settings() -> dict[str, Setting]:
    """Every app-setting name the model reads (host-owned names apart), with what the model says of it."""
    return {setting.key: setting for setting in settings()}


def bicep_string(value: Any) -> Any:
    """A parsed Bicep string literal as the string it denotes (pycep keeps the escapes)."""
    if not isinstance(value, str):
        return value
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1), m.group(1)), value)


def values_below(node: Any) -> Iterator[Any]:
    """Every value below a parsed node."""
    if isinstance(node, dict):
        for value in node.values():
            yield value
            yield from values_below(value)
    elif isinstance(node, list):
        for item in node:
            yield item
            yield from values_below(item)


def parameter_for(setting: str) -> str:
    """The Bicep parameter named after a setting: `Forge__Documentation__Cache__Container` -> `cacheContainer`."""
    name = "".join(setting.removeprefix(PREFIX).split("__"))
    return name[0].lower() + name[1:]


def pairs(node: Any) -> Iterator[tuple[str, Any]]:
    """Every key: value pair of every object literal below a parsed node."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key.strip("'"), value
            yield from pairs(value)
    elif isinstance(node, list):
        for item in node:
            yield from pairs(item)


def accessor(*names: str) -> Any:
    """How pycep spells `a.b.c`."""
    if len(names) == 1:
        return names[0]
    return {
        "operator": {
            "type": "property_accessor",
            "operands": {"operand_1": names[0], "operand_2": accessor(*names[1:])},
        }
    }


def deployed_settings() -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for key, value in pairs(parse(MAIN)["variables"]):
        if key.startswith(PREFIX):
            assert key not in settings, f"{key} is set twice"
            settings[key] = value
    return settings


def bounds(path: Path, parameter: str) -> dict[str, Any]:
    """A parameter's `@minValue`, `@maxValue` and `@allowed`, as `min_value`, `max_value` and `allowed`."""
    decorators = parse(path)["parameters"][parameter]["decorators"]
    return {d["type"]: d["argument"] for d in decorators if d["type"] in ("min_value", "max_value", "allowed")}


def secure_parameters(path: Path) -> set[str]:
    return {
        name
        for name, param in (parse(path).get("parameters") or {}).items()
        if any(d["type"] == "secure" for d in param["decorators"])
    }


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_bicep_file_parses_and_uses_only_local_modules(path: Path) -> None:
    document = parse(path)
    for name, module in (document.get("modules") or {}).items():
        assert module["type"] == "local", f"{name}: registry modules cannot be inspected here"
        assert (path.parent / module["detail"]["path"]).is_file(), f"{name}: {module['detail']['path']} is missing"


def test_resource_types_and_api_versions_are_allow_listed() -> None:
    seen = set()
    for path in BICEP_FILES:
        for name, resource in resources(path).items():
            kind, version = resource["type"], resource["api_version"]
            assert ALLOWED_API_VERSIONS.get(kind) == version, f"{path.name}:{name} uses {kind}@{version}"
            seen.add(kind)
    assert seen == set(ALLOWED_API_VERSIONS), f"allow-listed but unused: {set(ALLOWED_API_VERSIONS) - seen}"


def test_the_app_runs_on_a_flex_consumption_fc1_linux_plan() -> None:
    function = resources(INFRA / "app" / "function.bicep")
    plans = [body(r) for r in function.values() if r["type"] == "Microsoft.Web/serverfarms"]
    assert [(p["sku"]["name"], p["sku"]["tier"], p["properties"]["reserved"]) for p in plans] == [
        ("FC1", "FlexConsumption", True)
    ]
    site = body(function["site"])
    assert site["kind"] == "functionapp,linux"
    scale = site["properties"]["functionAppConfig"]["scaleAndConcurrency"]
    assert scale["instanceMemoryMB"] == "instanceMemoryMB"
    assert scale["maximumInstanceCount"] == "maximumInstanceCount"
    assert scale["triggers"]["http"]["perInstanceConcurrency"] == "httpPerInstanceConcurrency"
    storage = site["properties"]["functionAppConfig"]["deployment"]["storage"]
    assert storage["type"] == "blobContainer"
    assert storage["authentication"] == {"type": "UserAssignedIdentity", "userAssignedIdentityResourceId": "identityId"}
    parameters = parse(MAIN)["parameters"]
    assert parameters["alwaysReadyInstanceCount"]["default"] == 0
    assert parameters["privateNetworking"]["default"] is False


def test_the_runtime_is_the_projects_python() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    project = re.fullmatch(r">=(\d+\.\d+),<\d+\.\d+", requires)
    assert project, f"requires-python {requires!r} no longer names one minor version"
    assert parse(MAIN)["variables"]["pythonVersion"]["value"] == project.group(1)
    assert body(parse(MAIN)["modules"]["api"])["params"]["pythonVersion"] == "pythonVersion"
    runtime = body(resources(INFRA / "app" / "function.bicep")["site"])["properties"]["functionAppConfig"]["runtime"]
    assert runtime == {"name": "python", "version": "pythonVersion"}


def test_storage_and_telemetry_accept_no_keys() -> None:
    accounts = [
        body(r)["properties"]
        for path in BICEP_FILES
        for r in resources(path).values()
        if r["type"] == "Microsoft.Storage/storageAccounts" and not r["existing"]
    ]
    assert accounts
    for account in accounts:
        assert account["allowSharedKeyAccess"] is False
        assert account["allowBlobPublicAccess"] is False
        assert account["minimumTlsVersion"] == "TLS1_2"
    monitoring = resources(INFRA / "app" / "monitoring.bicep")
    assert body(monitoring["applicationInsights"])["properties"]["DisableLocalAuth"] is True
    assert body(monitoring["applicationInsights"])["properties"]["WorkspaceResourceId"] == accessor("workspace", "id")


def test_no_output_exposes_a_key_connection_string_or_secret() -> None:
    for path in BICEP_FILES:
        secure = secure_parameters(path)
        for name, output in (parse(path).get("outputs") or {}).items():
            assert not re.search(r"key(?!_?vault)|secret|connection|password|token", name, re.IGNORECASE), (
                f"{path.name}:{name}"
            )
            text = json.dumps(output["value"])
            assert not re.search(r"list[A-Za-z]*keys|ConnectionString|InstrumentationKey", text, re.I), path.name
            assert not any(re.search(rf'"{s}"|\${{{s}}}', text) for s in secure), f"{path.name}:{name}"


def test_every_role_assignment_goes_to_the_apps_identity_with_a_named_role() -> None:
    """All but the Event Grid topic's and the operator's (OTHER_HOLDERS), each narrowed to one queue or container."""
    apps_principal = accessor("identity", "outputs", "principalId")
    granted: dict[str, set[str]] = {}
    for path in BICEP_FILES:
        text = path.read_text()
        for name, resource in resources(path).items():
            if resource["type"] != "Microsoft.Authorization/roleAssignments":
                continue
            config = body(resource)
            role_var = config["properties"]["roleDefinitionId"]["function"]["parameters"]["resource_name_1"]
            definition = re.search(rf"^var {role_var} = '([0-9a-f-]{{36}})' // (.+)$", text, re.MULTILINE)
            assert definition, f"{path.name}:{name}: {role_var} is not a role id with its name in a comment"
            module_path = path.relative_to(INFRA).as_posix()
            holder, allowed = OTHER_HOLDERS.get(module_path, (("identity", "outputs", "principalId"), ROLES))
            role = allowed.get(definition.group(1))
            assert role == definition.group(2), f"{path.name}:{role_var} is {role}, commented {definition.group(2)}"
            assert re.search(rf"^// {role} on .+\nresource {name} ", text, re.MULTILINE), f"{name}: say the role"
            assert config["properties"]["principalId"] == "principalId"
            expected_type = "principalType" if module_path == "app/operator-access.bicep" else "ServicePrincipal"
            assert config["properties"]["principalType"] == expected_type
            guid = config["name"]["function"]["parameters"]
            scope = config["scope"]
            assert guid["base_string"] == accessor(scope, "id")
            assert (guid["extra_string_1"], guid["extra_string_2"]) == ("principalId", role_var)
            callers = [m for m in parse(MAIN)["modules"].values() if m["detail"]["path"] == module_path]
            assert callers, f"{module_path} is not deployed by main.bicep"
            for module in callers:
                assert body(module)["params"]["principalId"] == accessor(*holder)
            if module_path in OTHER_HOLDERS:
                assert resources(path)[scope]["type"] in NARROW_SCOPES, f"{module_path}:{name} is scoped too widely"
            granted.setdefault(module_path if module_path in OTHER_HOLDERS else "app", set()).add(role)
    assert granted.pop("app") == set(ROLES.values())
    assert granted == {path: set(roles.values()) for path, (_, roles) in OTHER_HOLDERS.items()}
    assert apps_principal == accessor("identity", "outputs", "principalId")
    identity = resources(INFRA / "app" / "identity.bicep")["identity"]
    assert identity["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities"
    assert body(resources(INFRA / "app" / "function.bicep")["site"])["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": {"'${identityId}'": {}},
    }
    assert body(parse(MAIN)["modules"]["api"])["params"]["identityId"] == accessor("identity", "outputs", "id")


def test_app_settings_are_exactly_the_settings_the_service_reads() -> None:
    expected = model_settings()
    assert set(NOT_DEPLOYED) <= set(expected), "NOT_DEPLOYED names a setting the service no longer reads"
    assert all(expected[name].secret for name in NOT_DEPLOYED)
    deployed = set(deployed_settings())
    assert deployed == set(expected) - set(NOT_DEPLOYED), (
        f"missing from infra/main.bicep: {sorted(set(expected) - set(NOT_DEPLOYED) - deployed)}; "
        f"not read by the service: {sorted(deployed - set(expected))}"
    )
    elsewhere = {k for p in BICEP_FILES if p != MAIN for k, _ in pairs(parse(p)) if k.startswith(PREFIX)}
    assert not elsewhere, f"settings belong in main.bicep's settings object: {elsewhere}"
    assert body(parse(MAIN)["modules"]["api"])["params"]["appSettings"] == "documentationSettings"


def test_local_settings_sample_lists_exactly_the_settings_the_service_reads() -> None:
    values = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    listed = {name for name in values if not HOST_OWNED.match(name)}
    assert listed == set(model_settings())


def test_settings_parameters_carry_the_services_defaults() -> None:
    fields = model_settings()
    parameters = parse(MAIN)["parameters"]
    for name, value in deployed_settings().items():
        if name in WIRED or fields[name].secret:
            continue
        parameter = parameter_for(name)
        assert value == parameter, f"{name} should be the parameter {parameter}"
        default = bicep_string(parameters[parameter]["default"])
        service = fields[name].default
        if name in SHIPPED:
            assert default == SHIPPED[name][0], f"{name}: Bicep default {default!r}, shipped {SHIPPED[name][0]!r}"
            assert default != service, f"{name} now ships the service's own default: drop it from SHIPPED"
            continue
        try:
            assert float(default) == float(service), name
        except ValueError:
            assert str(default) == service, f"{name}: Bicep default {default!r}, service default {service!r}"
    for name in WIRED:
        # An empty app setting reads as unset (shared/settings/), so "" (an empty list too) hides no default either.
        assert fields[name].default == "", f"{name} has a service default the deployment would hide"


def test_a_deployment_with_every_default_configures_the_service_as_its_own_defaults_do() -> None:
    parameters = parse(MAIN)["parameters"]
    always = parse(MAIN)["variables"]["coreSettings"]["value"]
    environ = {
        name: str(parameters[value]["default"])
        for name, value in always.items()
        if isinstance(value, str) and value in parameters
    }
    assert load_settings(environ) == load_settings({})


def test_secrets_are_key_vault_references_from_secure_parameters() -> None:
    fields = model_settings()
    secrets = {name for name, setting in fields.items() if setting.secret} - set(NOT_DEPLOYED)
    assert secrets, "the model has no secret left to deploy"
    settings = deployed_settings()
    secure = secure_parameters(MAIN)
    assert body(parse(MAIN)["modules"]["keyVault"])["params"]["secrets"] == "keyVaultSecrets"
    vault_secrets = parse(MAIN)["variables"]["keyVaultSecrets"]["value"]
    for name in secrets:
        reference = re.fullmatch(r"@Microsoft\.KeyVault\(SecretUri=https://\S+/secrets/(\S+)\)", settings[name])
        assert reference, f"{name} must be a Key Vault reference, not {settings[name]!r}"
        assert vault_secrets[f"'{reference.group(1)}'"] == parameter_for(name)
        assert parameter_for(name) in secure, f"{parameter_for(name)} must be @secure()"
    plain = {json.dumps(value) for name, value in settings.items()}
    assert not any(f'"{s}"' in text or f"${{{s}}}" in text for s in secure for text in plain)


def test_host_settings_are_identity_based() -> None:
    properties = body(resources(INFRA / "app" / "function.bicep")["settings"])["properties"]
    assert properties["function"]["type"] == "union"
    service, host = properties["function"]["parameters"]["arg_1"], properties["function"]["parameters"]["arg_2"]
    assert service == "appSettings"
    assert all(HOST_OWNED.match(name) for name in host)
    assert host["AzureWebJobsStorage__credential"] == "managedidentity"
    assert host["AzureWebJobsStorage__clientId"] == "identityClientId"
    assert "AzureWebJobsStorage__blobServiceUri" in host
    assert host["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == "ClientId=${identityClientId};Authorization=AAD"
    # A connection string would carry a key; the runtime settings are rejected on Flex Consumption.
    assert not {"AzureWebJobsStorage", "FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION"} & set(host)
    api = body(parse(MAIN)["modules"]["api"])["params"]
    assert api["identityClientId"] == deployed_settings()[f"{PREFIX}Identity__ClientId"]


AZURE_NAMED = {"serviceName", "dnsZoneName", "poisonQueueName"}
"""Name parameters whose values Azure or azd fix (azure.yaml's service, privatelink zones, the Functions host's
`<queue>-poison`)."""


def test_resource_names_come_from_abbreviations_and_the_token() -> None:
    abbreviations = json.loads((INFRA / "abbreviations.json").read_text())
    names = [body(parse(MAIN)["resources"]["rg"])["name"]["operator"]["operands"]["true_value"]]
    for module in parse(MAIN)["modules"].values():
        params = body(module)["params"]
        names += [v for k, v in params.items() if k.endswith(("name", "Name")) and k not in AZURE_NAMED]
    for name in (n for n in names if isinstance(n, str) and "${" in n):
        used = re.findall(r"\$\{abbrs\.(\w+)\}", name)
        assert used and all(u in abbreviations for u in used), name
        assert "${resourceToken}" in name or "${environmentName}" in name, name
    assert parse(MAIN)["variables"]["abbrs"]["value"]["function"]["parameters"]["file_path"] == "abbreviations.json"


def test_owner_and_cost_centre_tags_are_parameters_on_every_resource() -> None:
    tags = parse(MAIN)["variables"]["tags"]["value"]["function"]
    assert tags["type"] == "union"
    arguments = list(tags["parameters"].values())
    assert arguments[0] == {"'azd-env-name'": "environmentName"}
    given = [argument["operator"]["operands"] for argument in arguments[1:]]
    assert [(g["condition"]["function"]["parameters"]["item_to_test"], g["false_value"]) for g in given] == [
        ("ownerTag", {"owner": "ownerTag"}),
        ("costCentreTag", {"'cost-center'": "costCentreTag"}),
    ]
    assert all(g["true_value"] == {} for g in given), "an empty tag is no tag"
    for name, module in parse(MAIN)["modules"].items():
        if "tags" in parse(INFRA / module["detail"]["path"]).get("parameters", {}):
            assert body(module)["params"]["tags"] == "tags", f"{name} does not get the tags"


def test_outputs_for_azd_are_upper_snake_case() -> None:
    outputs = parse(MAIN)["outputs"]
    assert {"AZURE_LOCATION", "AZURE_TENANT_ID", "SERVICE_API_NAME"} <= set(outputs)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", name) for name in outputs)


AZD_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<default>=[^}]*)?\}")
"""`${VAR}` and `${VAR=default}` as azd reads them (github.com/drone/envsubst): a default runs to the first `}`."""


def azd_parameters(environ: dict[str, str]) -> dict[str, Any]:
    """infra/main.parameters.json as azd hands it to ARM: substituted as text, then read as JSON.

    drone/envsubst, which azd uses, gives the default whenever the variable is unset *or empty* (`toDefault`), so
    the older azd that passed an unset variable as "" gets the default too. A default cannot hold `}` (it ends the
    reference), so the file writes it as the JSON escape `\\u007d`.
    """
    text = (INFRA / "main.parameters.json").read_text()
    remains = AZD_REFERENCE.sub("", text)
    assert "${" not in remains, "only ${VAR} and ${VAR=default} are understood here"

    def substitute(match: re.Match[str]) -> str:
        value = environ.get(match["name"], "")
        return value if value or match["default"] is None else match["default"][1:]

    return {
        name: entry["value"] for name, entry in json.loads(AZD_REFERENCE.sub(substitute, text))["parameters"].items()
    }


def raw_parameter_values() -> dict[str, str]:
    """Each parameter's `value` in main.parameters.json as written, JSON escapes and all (the text azd substitutes)."""
    text = (INFRA / "main.parameters.json").read_text()
    entry = re.compile(r'"(\w+)": \{\s*"value": "((?:[^"\\]|\\.)*)"\s*\}')
    values = dict(entry.findall(text))
    assert set(values) == set(json.loads(text)["parameters"]), "every value is one JSON string on its own"
    return values


def as_azd_value(default: Any) -> str:
    """A Bicep default written as the string azd passes for it (numbers and booleans included)."""
    return str(default).lower() if isinstance(default, bool) else str(bicep_string(default))


def test_main_parameters_json_maps_every_parameter_to_an_azd_variable_with_its_default() -> None:
    mapped = {name: {"value": value} for name, value in raw_parameter_values().items()}
    parameters = parse(MAIN)["parameters"]
    assert set(mapped) == set(parameters), (
        f"unmapped: {set(parameters) - set(mapped)}; unknown: {set(mapped) - set(parameters)}"
    )
    unset = azd_parameters({})
    for name, parameter in parameters.items():
        reference = AZD_REFERENCE.fullmatch(mapped[name]["value"])
        assert reference, f"{name}: {mapped[name]['value']!r} is not one ${{VAR}} or ${{VAR=default}}"
        if parameter["default"] is None:
            assert reference["default"] is None, f"{name} has no Bicep default: azd must ask for it"
            continue
        assert reference["default"] is not None, f"{name}: write ${{{reference['name']}=<its default>}}"
        assert unset[name] == as_azd_value(parameter["default"]), f"{name}: azd would pass {unset[name]!r}"
        assert azd_parameters({reference["name"]: "x"})[name] == "x"
    for setting in set(deployed_settings()) - set(WIRED):
        if parameter_for(setting) in mapped:
            assert AZD_REFERENCE.fullmatch(mapped[parameter_for(setting)]["value"])["name"] == azd_variable(setting)


def test_no_azd_variable_is_named_like_a_service_setting() -> None:
    """azd fills a parameter from the process environment when its own environment lacks the variable, and a shell
    set up to run the service locally exports the settings themselves (`Forge__Documentation__Origin` on 127.0.0.1,
    tokens): no variable azd reads may be a setting's name, in any case (Windows' environment ignores case), or look
    like one (`__`). Each setting has its own `DOCS_FORGE_DOCUMENTATION_...` variable instead."""
    names = [AZD_REFERENCE.fullmatch(value)["name"] for value in raw_parameter_values().values()]
    model = {key.lower() for key in model_settings()}
    for name in names:
        assert re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", name), f"{name}: upper snake case, no `__`"
        assert name.lower() not in model and not name.lower().startswith("forge"), name
    expected = {azd_variable(key) for key in model_settings() if parameter_for(key) in raw_parameter_values()}
    assert expected <= set(names)
    assert len(set(names)) == len(names), "two parameters read the same variable"


def test_azure_yaml_requires_an_azd_that_leaves_unset_parameters_to_their_defaults() -> None:
    """1.15 reads an unset variable as the parameter's default; 1.17.0 bundles Bicep 0.36.1, the Microsoft Graph Bicep
    extension's minimum (azd's CHANGELOG, 1.17.0: "Update Bicep CLI to v0.36.1"), which also has `fail()`."""
    project = yaml.safe_load((ROOT / "azure.yaml").read_text())
    assert project["requiredVersions"] == {"azd": ">= 1.17.0"}


def test_azure_yaml_deploys_this_directory_to_the_tagged_function_app() -> None:
    project = yaml.safe_load((ROOT / "azure.yaml").read_text())
    assert project["services"] == {"api": {"project": ".", "language": "python", "host": "function"}}
    assert body(parse(MAIN)["modules"]["api"])["params"]["serviceName"] == "api"


def test_private_networking_integrates_the_app_and_uses_private_dns() -> None:
    vnet = body(resources(INFRA / "app" / "network.bicep")["vnet"])
    delegations = [
        d["properties"]["serviceName"]
        for s in vnet["properties"]["subnets"]
        for d in s["properties"].get("delegations", [])
    ]
    assert delegations == ["Microsoft.App/environments"]
    main = parse(MAIN)["modules"]
    assert body(main["searchEndpoint"])["params"]["dnsZoneName"] == "privatelink.${aiSearchDnsSuffix}"
    assert body(main["storageEndpoints"])["params"]["dnsZoneName"].startswith("privatelink.${service}.")
    assert body(main["storageEndpoints"])["params"]["groupId"] == "service"
    # Key Vault: sub-resource `vault`, zone privatelink.vaultcore.<cloud> (Azure Private Endpoint DNS zone values).
    vault = main["vaultEndpoint"]
    assert vault["config"]["condition"] == {
        "operator": {"type": "and", "operands": {"operand_1": "privateNetworking", "operand_2": "anySecretGiven"}}
    }
    assert body(vault)["params"]["groupId"] == "vault"
    assert body(vault)["params"]["targetId"] == accessor("keyVault", "outputs", "id")
    assert body(vault)["params"]["dnsZoneName"] == "keyVaultDnsZoneName"
    zone = parse(MAIN)["variables"]["keyVaultDnsZoneName"]["value"]
    assert zone == "privatelink${replace(environment().suffixes.keyvaultDns, '.vault.', '.vaultcore.')}"
    assert "vaultEndpoint" in body(main["api"])["dependsOn"]


def test_search_windows_net_is_written_once() -> None:
    """The AI Search endpoint and its private DNS zone both come from `aiSearchDnsSuffix`."""
    uses = [
        (p.name, n)
        for p in BICEP_FILES
        for n, line in enumerate(p.read_text().splitlines())
        if "search.windows.net" in line
    ]
    assert [name for name, _ in uses] == ["main.bicep"], uses
    assert parse(MAIN)["parameters"]["aiSearchDnsSuffix"]["default"] == "search.windows.net"
    assert parse(MAIN)["variables"]["aiSearchEndpointUrl"]["value"]["operator"]["operands"]["true_value"] == (
        "https://${aiSearchServiceName}.${aiSearchDnsSuffix}"
    )


def test_key_vault_purge_protection_is_a_parameter_that_is_never_sent_as_false() -> None:
    parameters = parse(MAIN)["parameters"]
    assert parameters["keyVaultPurgeProtection"]["default"] is False
    description = parameters["keyVaultPurgeProtection"]["decorators"]
    assert any("production" in json.dumps(d) for d in description), "say that production turns it on"
    params = body(parse(MAIN)["modules"]["keyVault"])["params"]
    assert params["purgeProtection"] == "keyVaultPurgeProtection"
    assert params["privateNetworking"] == "privateNetworking"
    vault = body(resources(INFRA / "app" / "keyvault.bicep")["vault"])["properties"]
    # Key Vault refuses enablePurgeProtection=false: off is no value at all.
    assert vault["enablePurgeProtection"] == {
        "operator": {
            "type": "conditional",
            "operands": {"condition": "purgeProtection", "true_value": True, "false_value": None},
        }
    }
    assert vault["enableSoftDelete"] is True


def test_only_the_secrets_given_are_written_to_the_vault() -> None:
    """Key Vault refuses an empty value: main.bicep names the secrets given (names are no secret), the module writes
    those and no others, each a plain-text value with no expiry (a reference to an expired secret stops resolving)."""
    assert body(parse(MAIN)["modules"]["keyVault"])["params"]["secretNames"] == "givenSecretNames"
    assert "item => !empty(item.value)" in MAIN.read_text().split("var givenSecretNames = ")[1].splitlines()[0]
    secret = resources(INFRA / "app" / "keyvault.bicep")["secret"]
    assert secret["config"]["loop_type"]["detail"] == {"item_name": "name", "array_name": "secretNames"}
    properties = secret["config"]["config"]["properties"]
    assert properties["contentType"] == "text/plain" and "attributes" not in properties


def test_key_vault_network_rules_follow_private_networking() -> None:
    vault = body(resources(INFRA / "app" / "keyvault.bicep")["vault"])["properties"]

    def when_private(on: str, off: str) -> dict[str, Any]:
        return {
            "operator": {
                "type": "conditional",
                "operands": {"condition": "privateNetworking", "true_value": on, "false_value": off},
            }
        }

    assert vault["publicNetworkAccess"] == when_private("Disabled", "Enabled")
    assert vault["networkAcls"]["defaultAction"] == when_private("Deny", "Allow")
    assert vault["networkAcls"]["bypass"] == "AzureServices"
    storage = body(resources(INFRA / "app" / "storage.bicep")["storage"])["properties"]
    assert storage["networkAcls"] == {"bypass": "AzureServices", "defaultAction": when_private("Deny", "Allow")}


def test_the_key_vault_output_follows_the_vaults_condition() -> None:
    condition = parse(MAIN)["modules"]["keyVault"]["config"]["condition"]
    output = parse(MAIN)["outputs"]["AZURE_KEY_VAULT_NAME"]["value"]["operator"]
    assert output == {
        "type": "conditional",
        "operands": {"condition": condition, "true_value": "keyVaultName", "false_value": ""},
    }
    assert body(parse(MAIN)["modules"]["keyVault"])["params"]["name"] == "keyVaultName"


def refusal_for(condition: Any) -> str:
    """The message main.bicep refuses a deployment with when `condition` does not hold (or, given an expression that
    is itself the refusing condition, when it does)."""
    for item in parse(MAIN)["variables"]["refusals"]["value"]:
        operands = item["operator"]["operands"]
        if operands["condition"] == condition and operands["true_value"] == "":
            return str(bicep_string(operands["false_value"]))
        if operands["condition"] == condition and operands["false_value"] == "":
            return str(bicep_string(operands["true_value"]))
    raise AssertionError(f"no refusal for {condition}")


def test_every_refusal_stops_the_resource_group_before_anything_else_is_deployed() -> None:
    """Bicep's fail() (Microsoft Learn, "Bicep functions - flow control") on the resource group every module waits for,
    with the refusals that apply joined into one message."""
    variables = parse(MAIN)["variables"]
    joined = variables["refusal"]["value"]["function"]
    assert joined["type"] == "join" and joined["parameters"]["delimiter"] == " "
    assert body(parse(MAIN)["resources"]["rg"])["tags"] == {
        "operator": {
            "type": "conditional",
            "operands": {
                "condition": {"function": {"type": "empty", "parameters": {"item_to_test": "refusal"}}},
                "true_value": "tags",
                "false_value": {"function": {"type": "fail", "parameters": {"arg_1": "refusal"}}},
            },
        }
    }
    for name, module in parse(MAIN)["modules"].items():
        scope = body(module)["scope"]
        assert scope == "rg" or accessor("rg", "name") in list(values_below(scope)), f"{name} does not depend on rg"


def test_refresh_on_publish_without_the_docs_accounts_resource_group_is_refused() -> None:
    """Left empty, the docs account would be looked for in the resource group this very deployment creates."""
    condition = {
        "operator": {
            "type": "and",
            "operands": {
                "operand_1": "refreshOnPublish",
                "operand_2": {
                    "function": {"type": "empty", "parameters": {"item_to_test": "docsStorageResourceGroupName"}}
                },
            },
        }
    }
    message = refusal_for(condition)
    assert "docsStorageResourceGroupName" in message and "DOCS_STORAGE_RESOURCE_GROUP" in message
    assert azd_parameters({})["docsStorageResourceGroupName"] == ""


def comma_separated(parameter: str, item: str = "id") -> dict[str, Any]:
    """How main.bicep reads a comma-separated parameter: split, each entry trimmed, empty entries dropped."""
    trimmed = {"function": {"type": "trim", "parameters": {"string_to_trim": item}}}
    kept = {
        "operator": {
            "type": "not",
            "operands": {"bool_value": {"function": {"type": "empty", "parameters": {"item_to_test": item}}}},
        }
    }
    return {
        "function": {
            "type": "filter",
            "parameters": {
                "input_array": {
                    "function": {
                        "type": "map",
                        "parameters": {
                            "arg_1": {
                                "function": {
                                    "type": "split",
                                    "parameters": {"input_string": parameter, "delimiter": ","},
                                }
                            },
                            "arg_2": {"type": "lambda_expression", "detail": {"var_1": item, "expression": trimmed}},
                        },
                    }
                },
                "expression": {"type": "lambda_expression", "detail": {"var_1": item, "expression": kept}},
            },
        }
    }


def test_comma_separated_parameters_drop_blanks_and_empty_entries() -> None:
    """`a, b,` is two entries, not three: an empty client id or owner id is one Graph refuses."""
    variables = parse(MAIN)["variables"]
    for variable, parameter, item in (
        ("entraPreAuthorizedClientIdList", "entraPreAuthorizedClientIds", "id"),
        ("entraAppOwnerIdList", "entraAppOwnerIds", "id"),
        ("vnetDnsServerList", "vnetDnsServers", "server"),
        ("availabilityTestLocationList", "availabilityTestLocations", "id"),
    ):
        assert variables[variable]["value"] == comma_separated(parameter, item), variable
        assert "split(" + parameter not in re.sub(r"\s", "", MAIN.read_text()).replace(
            f"split({parameter},','),{item}=>trim({item})", ""
        ), f"{parameter} is split somewhere without dropping empty entries"


def test_every_module_deployment_is_named_per_environment() -> None:
    """Deployment names are per resource group: the docs account's, the AI Search service's and a shared one
    (resourceGroupName) can hold several environments' deployments, which must not overwrite each other."""
    for name, module in parse(MAIN)["modules"].items():
        assert "${resourceToken}" in str(body(module)["name"]), f"{name}: {body(module)['name']}"


def test_a_512_mb_instance_with_semantic_matching_is_refused_before_anything_is_deployed() -> None:
    """Bicep's fail() (Microsoft Learn, "Bicep functions - flow control") on the resource group every module goes in."""
    fits = parse(MAIN)["variables"]["semanticFitsInstance"]["value"]
    assert fits == {
        "operator": {
            "type": "not",
            "operands": {
                "bool_value": {
                    "operator": {
                        "type": "and",
                        "operands": {
                            "operand_1": {
                                "operator": {
                                    "type": "less_than",
                                    "operands": {"operand_1": "instanceMemoryMB", "operand_2": 2048},
                                }
                            },
                            "operand_2": {
                                "operator": {
                                    "type": "equals",
                                    "operands": {"operand_1": "searchSemantic", "operand_2": "true"},
                                }
                            },
                        },
                    }
                }
            },
        }
    }
    message = refusal_for("semanticFitsInstance")
    assert "searchSemantic" in message and "DOCS_FORGE_DOCUMENTATION_SEARCH_SEMANTIC" in message
    allowed = next(
        d["argument"] for d in parse(MAIN)["parameters"]["instanceMemoryMB"]["decorators"] if d["type"] == "allowed"
    )
    assert [size for size in allowed if size < 2048] == [512], "the guard's threshold no longer splits the sizes"
    # Every module waits for the resource group: it is deployed into it, or (AI Search access) names it.
    for name, module in parse(MAIN)["modules"].items():
        scope = body(module)["scope"]
        assert scope == "rg" or accessor("rg", "name") in list(values_below(scope)), f"{name} does not depend on rg"


def test_the_docs_state_host_jsons_function_timeout() -> None:
    timeout = json.loads((ROOT / "host.json").read_text())["functionTimeout"]
    hours, minutes, seconds = (int(part) for part in timeout.split(":"))
    assert seconds == 0, f"say {timeout} in docs/deployment.md in its own terms"
    assert f"`functionTimeout` ({hours * 60 + minutes} minutes)" in (ROOT / "docs" / "deployment.md").read_text()


# --- the deployment package: what .funcignore leaves -----------------------------------------------------------


def funcignore() -> list[str]:
    lines = (ROOT / ".funcignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(path: str, *, is_dir: bool, patterns: list[str]) -> bool:
    """gitignore-style matching, as `func` and azd apply .funcignore (the subset this project uses)."""
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.removeprefix("!")
        if pattern.endswith("/") and not is_dir:
            continue
        pattern = pattern.rstrip("/")
        anchored = "/" in pattern
        target = path if anchored else path.rsplit("/", 1)[-1]
        if fnmatch.fnmatchcase(target, pattern.lstrip("/")):
            result = not negate
    return result


def packaged_files() -> list[str]:
    patterns, files = funcignore(), []
    for directory, subdirectories, names in os.walk(ROOT):
        relative = Path(directory).relative_to(ROOT).as_posix().removeprefix(".")
        prefix = f"{relative.lstrip('/')}/" if relative else ""
        subdirectories[:] = [d for d in subdirectories if not ignored(prefix + d, is_dir=True, patterns=patterns)]
        files += [prefix + n for n in names if not ignored(prefix + n, is_dir=False, patterns=patterns)]
    return files


@pytest.mark.parametrize(
    "path",
    [
        "tests/infra/test_bicep.py",
        "site/index.html",
        "build/origin/docs/index.html",
        "node_modules/azurite/x.js",
        "docs/index.md",
        "infra/main.bicep",
        "tools/bench.py",
        ".venv/bin/python",
        "shared/__pycache__/x.pyc",
    ],
)
def test_funcignore_keeps_tooling_out_of_the_package(path: str) -> None:
    parts = path.split("/")
    patterns = funcignore()
    assert any(ignored("/".join(parts[: i + 1]), is_dir=True, patterns=patterns) for i in range(len(parts) - 1))


def test_the_package_holds_the_app_and_nothing_for_development() -> None:
    files = packaged_files()
    assert {"function_app.py", "host.json", "requirements.txt", "shared/__init__.py"} <= set(files)
    for excluded in ("tests/", "docs/", "site/", "build/", "node_modules/", "infra/", "tools/", ".venv/"):
        assert not [f for f in files if f.startswith(excluded)], excluded
    assert "requirements-dev.txt" not in files and "local.settings.json" not in files
