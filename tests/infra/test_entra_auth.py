"""The `entraAuth` option of infra/main.bicep: off by default; when on, an app registration made with the Microsoft
Graph Bicep extension (app/entra-app.bicep) and the `Auth__*` / `Refresh__AppRoles` settings that point the app's own
token check at it.

Parsed with pycep-parser like tests/infra/test_bicep.py. The registration's shape follows Microsoft's samples that
create one for an MCP server with the extension (microsoft/mcp's azd templates, `entra-app.bicep`; the Functions
team's FunctionsMcpAuthorization sample, `infra/app/entra.bicep`): `uniqueName`, `api.oauth2PermissionScopes`,
`api.preAuthorizedApplications`, `appRoles`, `requestedAccessTokenVersion: 2`, then the service principal.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shared.settings import PREFIX, load_settings
from tests.infra.test_bicep import (
    AZD_REFERENCE,
    INFRA,
    MAIN,
    ROOT,
    accessor,
    azd_parameters,
    body,
    comma_separated,
    deployed_settings,
    pairs,
    parse,
    raw_parameter_values,
    resources,
)
from tools.settings_artifacts import azd_variable

ENTRA_APP = INFRA / "app" / "entra-app.bicep"
VS_CODE = "aebc6443-996d-45c2-90f0-388ff96faa56"
"""VS Code's Microsoft authentication provider's client id (microsoft/vscode, extensions/microsoft-authentication/src/
common/scopeData.ts, `DEFAULT_CLIENT_ID`): the client VS Code signs a user in to an MCP server as."""
AZURE_CLI = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"
"""The Azure CLI's client id (Azure/azure-cli, azure-cli-core's auth, `AZURE_CLI_CLIENT_ID`)."""
NAMES = {
    "docsReadScope": "docs.read",
    "docsReadRole": "Docs.Read.All",
    "docsRefreshRole": "Docs.Refresh",
    "docsInsightsRole": "Docs.Insights.Read",
}
"""What the registration exposes, named once in main.bicep for the registration and the settings alike."""

DERIVED = {
    f"{PREFIX}Auth__TenantId": (accessor({"function": {"type": "tenant"}}, "tenantId"), "authTenantId"),
    f"{PREFIX}Auth__Audience": ("entraAudience", "authAudience"),
    f"{PREFIX}Auth__Scopes": ("docsReadScope", "authScopes"),
    f"{PREFIX}Auth__AppRoles": ("docsReadRole", "authAppRoles"),
    f"{PREFIX}Refresh__AppRoles": ("docsRefreshRole", "refreshAppRoles"),
    f"{PREFIX}Insights__AppRoles": ("docsInsightsRole", "insightsAppRoles"),
}
"""Each sign-in setting: (its value with entraAuth, the parameter it passes through without)."""


def conditional(condition: Any, true_value: Any, false_value: Any) -> dict[str, Any]:
    return {
        "operator": {
            "type": "conditional",
            "operands": {"condition": condition, "true_value": true_value, "false_value": false_value},
        }
    }


def empty(name: str) -> dict[str, Any]:
    return {"function": {"type": "empty", "parameters": {"item_to_test": name}}}


def variables(path: Any = MAIN) -> dict[str, Any]:
    return {name: variable["value"] for name, variable in (parse(path).get("variables") or {}).items()}


def parameter_defaults(path: Any = MAIN) -> dict[str, Any]:
    return {name: parameter["default"] for name, parameter in (parse(path).get("parameters") or {}).items()}


def module() -> dict[str, Any]:
    return parse(MAIN)["modules"]["entraApp"]


def registration() -> dict[str, Any]:
    return body(resources(ENTRA_APP)["application"])


# --- off by default -------------------------------------------------------------------------------------------


def test_the_option_is_off_by_default_and_then_creates_nothing_in_entra() -> None:
    defaults = parameter_defaults()
    assert defaults["entraAuth"] is False
    assert defaults["existingEntraAppClientId"] == defaults["entraPreAuthorizedClientIds"] == ""
    assert azd_parameters({})["entraAuth"] == "false"
    assert azd_parameters({"ENTRA_AUTH": "true"})["entraAuth"] == "true"
    assert variables()["entraAppCreated"] == {
        "operator": {
            "type": "and",
            "operands": {"operand_1": "entraAuth", "operand_2": empty("existingEntraAppClientId")},
        }
    }
    assert module()["config"]["condition"] == "entraAppCreated"
    assert body(module())["scope"] == "rg"


def test_off_the_deployment_leaves_sign_in_off() -> None:
    defaults = parameter_defaults()
    environ = {name: str(defaults[values[1]]) for name, values in DERIVED.items()}
    environ |= {
        f"{PREFIX}Auth__Authority": defaults["authAuthority"],
        f"{PREFIX}Auth__Resource": defaults["authResource"],
    }
    settings = load_settings(environ)
    assert not settings.auth.enabled
    assert settings.refresh.app_roles == ()
    assert settings == load_settings({})


# --- the settings ---------------------------------------------------------------------------------------------


def test_each_sign_in_setting_is_the_registrations_with_the_option_and_its_parameter_without() -> None:
    settings = deployed_settings()
    for name, (on, off) in DERIVED.items():
        assert settings[name] == conditional("entraAuth", on, off), name
        # The parameter reads the setting's own azd variable, as every other setting's does.
        assert AZD_REFERENCE.fullmatch(raw_parameter_values()[off])["name"] == azd_variable(name)
    # Authority and Resource are the parameters themselves (tests/infra/test_bicep.py checks their defaults).
    assert settings[f"{PREFIX}Auth__Authority"] == "authAuthority"
    assert settings[f"{PREFIX}Auth__Resource"] == "authResource"
    assert {name: variables()[name] for name in NAMES} == NAMES
    assert variables()["entraAudience"] == conditional(
        "entraAppCreated", accessor("entraApp", "outputs", "identifierUri"), "api://${existingEntraAppClientId}"
    )


def test_what_the_option_writes_turns_the_services_sign_in_on() -> None:
    client_id = "00001111-aaaa-2222-bbbb-3333cccc4444"
    settings = load_settings(
        {
            f"{PREFIX}Auth__TenantId": "aaaabbbb-0000-cccc-1111-dddd2222eeee",
            f"{PREFIX}Auth__Audience": f"api://{client_id}",
            f"{PREFIX}Auth__Scopes": NAMES["docsReadScope"],
            f"{PREFIX}Auth__AppRoles": NAMES["docsReadRole"],
            f"{PREFIX}Refresh__AppRoles": NAMES["docsRefreshRole"],
        }
    )
    assert settings.auth.enabled
    # What clients are told to request: the scope under the Application ID URI the registration gets.
    assert settings.auth.scopes_supported() == [f"api://{client_id}/docs.read"]
    assert settings.auth.app_roles == ("Docs.Read.All",)
    assert settings.refresh.app_roles == ("Docs.Refresh",)


# --- the registration -----------------------------------------------------------------------------------------


def test_the_registration_uses_the_graph_extension_named_in_bicepconfig() -> None:
    assert parse(ENTRA_APP)["extensions"] == {"microsoftGraphV1": {}}
    config = json.loads((INFRA / "bicepconfig.json").read_text())
    reference = config["extensions"]["microsoftGraphV1"]
    # Generally available from 1.0.0 (Microsoft Learn, "What's new in Microsoft Graph Bicep", July 2025).
    assert re.fullmatch(r"br:mcr\.microsoft\.com/bicep/extensions/microsoftgraph/v1\.0:\d+\.\d+\.\d+", reference)
    # Only this module declares Graph resources; the rest of the template stays plain ARM.
    graph = {
        path.relative_to(INFRA).as_posix()
        for path in INFRA.rglob("*.bicep")
        if any(r["type"].startswith("Microsoft.Graph/") for r in resources(path).values())
    }
    assert graph == {"app/entra-app.bicep"}


def test_the_registration_is_a_single_tenant_api_issuing_v2_tokens() -> None:
    app = registration()
    assert app["uniqueName"] == "uniqueName"
    assert app["signInAudience"] == "AzureADMyOrg"
    assert (app["appRoles"], app["api"]) == ("appRoles", "api")
    assert variables(ENTRA_APP)["api"]["requestedAccessTokenVersion"] == 2
    assert body(module())["params"]["uniqueName"] == "apiName"
    assert variables()["apiName"] == "${abbrs.webSitesFunctions}api-${resourceToken}"
    assert body(parse(MAIN)["modules"]["api"])["params"]["name"] == "apiName", "the registration is named after the app"


def test_it_exposes_one_delegated_scope_users_and_admins_can_consent_to() -> None:
    (scope,) = variables(ENTRA_APP)["api"]["oauth2PermissionScopes"]
    assert (scope["id"], scope["value"], scope["type"], scope["isEnabled"]) == ("scopeId", "scopeValue", "User", True)
    for text in (
        "adminConsentDisplayName",
        "adminConsentDescription",
        "userConsentDisplayName",
        "userConsentDescription",
    ):
        assert isinstance(scope[text], str) and scope[text].strip(), text
    assert body(module())["params"]["scopeValue"] == "docsReadScope"


def test_it_defines_the_read_and_refresh_roles_for_applications_and_the_insights_role_for_people_too() -> None:
    roles = {role["value"]: role for role in variables(ENTRA_APP)["ownRoles"]}
    assert set(roles) == {"readRoleValue", "refreshRoleValue", "insightsRoleValue"}
    for role in roles.values():
        assert role["isEnabled"] is True
        assert role["displayName"].strip() and role["description"].strip()
    assert (
        roles["readRoleValue"]["allowedMemberTypes"]
        == roles["refreshRoleValue"]["allowedMemberTypes"]
        == ["Application"]
    )
    assert roles["insightsRoleValue"]["allowedMemberTypes"] == ["User", "Application"]  # the docs team's group
    ids = [roles[value]["id"] for value in ("readRoleValue", "refreshRoleValue", "insightsRoleValue")]
    assert ids == ["readRoleId", "refreshRoleId", "insightsRoleId"]
    params = body(module())["params"]
    assert (params["readRoleValue"], params["refreshRoleValue"], params["insightsRoleValue"]) == (
        "docsReadRole",
        "docsRefreshRole",
        "docsInsightsRole",
    )


def test_permission_ids_are_stable_across_deployments() -> None:
    """A scope or role whose id changed would be a new permission: consents and role assignments would be lost."""
    names = variables(ENTRA_APP)
    for variable, value in (
        ("scopeId", "scopeValue"),
        ("readRoleId", "readRoleValue"),
        ("refreshRoleId", "refreshRoleValue"),
        ("insightsRoleId", "insightsRoleValue"),
    ):
        guid = names[variable]["function"]
        assert guid["type"] == "guid", variable
        assert guid["parameters"]["base_string"] == "uniqueName"
        assert value in guid["parameters"].values(), variable
    assert "newGuid" not in ENTRA_APP.read_text()


def test_vs_code_and_the_azure_cli_are_pre_authorized_for_the_scope() -> None:
    names = variables(ENTRA_APP)
    assert (names["vsCodeClientId"], names["azureCliClientId"]) == (VS_CODE, AZURE_CLI)
    assert names["preAuthorizedClientIds"] == {
        "function": {
            "type": "union",
            "parameters": {"arg_1": ["vsCodeClientId", "azureCliClientId"], "arg_2": "extraPreAuthorizedClientIds"},
        }
    }
    loop = names["preAuthorizedApplications"]
    assert loop["loop_type"]["detail"] == {"item_name": "clientId", "array_name": "preAuthorizedClientIds"}
    assert loop["config"] == {"appId": "clientId", "delegatedPermissionIds": ["scopeId"]}
    assert names["api"]["preAuthorizedApplications"] == "preAuthorizedApplications"
    # An organisation's own clients (ENTRA_PRE_AUTHORIZED_CLIENT_IDS, comma-separated) join them, blanks and empty
    # entries dropped (a trailing comma made an empty client id Graph refused).
    assert body(module())["params"]["extraPreAuthorizedClientIds"] == "entraPreAuthorizedClientIdList"
    assert variables()["entraPreAuthorizedClientIdList"] == comma_separated("entraPreAuthorizedClientIds")


def test_the_registration_has_owners_so_a_team_and_its_ci_can_maintain_it() -> None:
    """Without owners only directory administrators and its first deployer could update it. The deploying principal
    (by default) and ENTRA_APP_OWNER_IDS own it; Entra takes users and service principals as owners, not groups."""
    defaults = parameter_defaults()
    assert (defaults["entraAppOwnerIds"], defaults["entraAppOwnerIsDeployer"]) == ("", True)
    assert azd_parameters({})["entraAppOwnerIsDeployer"] == "true"
    assert body(module())["params"]["ownerIds"] == "entraAppOwners"
    assert variables()["entraAppOwners"] == {
        "function": {
            "type": "union",
            "parameters": {
                "arg_1": conditional(
                    "entraAppOwnerIsDeployer",
                    [accessor({"function": {"type": "deployer", "parameters": {}}}, "objectId")],
                    [],
                ),
                "arg_2": "entraAppOwnerIdList",
            },
        }
    }
    assert variables()["entraAppOwnerIdList"] == comma_separated("entraAppOwnerIds")
    # Both declarations of the registration carry them (the second restates the first), appended to, never replaced.
    assert variables(ENTRA_APP)["owners"] == {"relationships": "ownerIds"}
    assert registration()["owners"] == body(resources(ENTRA_APP)["applicationIdUri"])["owners"] == "owners"
    assert "relationshipSemantics" not in ENTRA_APP.read_text()


def test_the_deployment_docs_say_what_a_ci_principal_needs_to_maintain_the_registration() -> None:
    section = (ROOT / "docs" / "deployment.md").read_text()
    section = section[section.index("## Sign in with Entra ID") :]
    for needed in ("Application.ReadWrite.OwnedBy", "admin consent", "ENTRA_APP_OWNER_IDS", "group"):
        assert needed in section, needed


def test_the_application_id_uri_is_the_client_id_set_by_a_second_declaration() -> None:
    """`api://<client id>` is the audience the app accepts tokens for (their `aud` is the bare client id) and the one
    form no identifier-URI policy blocks; it cannot be written before the registration exists."""
    second = body(resources(ENTRA_APP)["applicationIdUri"])
    first = registration()
    assert second["identifierUris"] == ["api://${application.appId}"]
    assert {key: second[key] for key in first} == first, "the second declaration must restate the first"
    outputs = parse(ENTRA_APP)["outputs"]
    assert outputs["identifierUri"]["value"] == accessor(
        "applicationIdUri",
        {"operator": {"type": "index_accessor", "operands": {"operand_1": "identifierUris", "operand_2": 0}}},
    )
    principal = resources(ENTRA_APP)["servicePrincipal"]
    assert principal["type"] == "Microsoft.Graph/servicePrincipals"
    assert body(principal) == {"appId": accessor("application", "appId")}


def test_the_registration_holds_no_credential() -> None:
    """The app only validates tokens: it never signs in as the registration, so nothing here is a secret."""
    keys = {key for key, _ in pairs(parse(ENTRA_APP))}
    assert not keys & {"passwordCredentials", "keyCredentials", "federatedIdentityCredentials"}
    assert not {r["type"] for r in resources(ENTRA_APP).values()} - {
        "Microsoft.Graph/applications",
        "Microsoft.Graph/servicePrincipals",
    }


# --- outputs and docs -----------------------------------------------------------------------------------------


def test_outputs_name_the_registration_without_feeding_back_into_a_parameter() -> None:
    """azd stores outputs as environment variables: an output named like the variable `existingEntraAppClientId` reads
    would make the next `azd provision` take the created registration for an existing one and stop maintaining it."""
    outputs = parse(MAIN)["outputs"]
    assert {"ENTRA_APP_CLIENT_ID", "ENTRA_APP_ID_URI", "ENTRA_APP_SERVICE_PRINCIPAL_ID"} <= set(outputs)
    assert outputs["ENTRA_APP_ID_URI"]["value"] == conditional("entraAuth", "entraAudience", "")
    read_names = {match["name"] for match in AZD_REFERENCE.finditer((INFRA / "main.parameters.json").read_text())}
    # azd's own location and resource group round-trip by design.
    assert set(outputs) & read_names <= {"AZURE_LOCATION", "AZURE_RESOURCE_GROUP"}


def test_the_deployment_docs_say_how_to_turn_it_on_and_whom_it_trusts() -> None:
    docs = (ROOT / "docs" / "deployment.md").read_text()
    section = docs[docs.index("## Sign in with Entra ID") :]
    for needed in ("azd env set ENTRA_AUTH true", VS_CODE, AZURE_CLI, "Docs.Read.All", "Docs.Refresh", "docs.read"):
        assert needed in section, needed
    for variable in ("ENTRA_EXISTING_APP_CLIENT_ID", "ENTRA_PRE_AUTHORIZED_CLIENT_IDS"):
        assert variable in section, variable


def test_each_audience_given_is_an_app_role_for_people_and_applications() -> None:
    """`SiteAudiences`' audiences come in as `audiences`: one `Docs.Audience.<audience>` role each (what the app's
    gate reads from a token's roles), with a fixed id, beside the registration's own roles."""
    text = ENTRA_APP.read_text()
    assert "param audiences array = []" in text
    assert "var appRoles = concat(ownRoles, audienceRoles)" in text
    loop = text[text.index("var audienceRoles = [for audience in audiences: {") :].split("}]", 1)[0]
    assert "guid(uniqueName, 'role', 'Docs.Audience.${toLower(audience)}')" in loop
    assert "value: 'Docs.Audience.${toLower(audience)}'" in loop
    assert "'User'" in loop and "'Application'" in loop and "isEnabled: true" in loop
    main = MAIN.read_text()
    assert "audiences: siteAudienceNames" in main
    derived = main[main.index("var siteAudienceNames = ") :].split("\n", 1)[0]
    assert "json(empty(siteAudiences) ? '{}' : siteAudiences)" in derived and "entry => entry.value" in derived
