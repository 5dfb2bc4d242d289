"""The settings' artefacts, generated from the settings model: the sample app settings, the service's settings in
the Bicep (a parameter per setting and the settings objects built from them) and azd's mapping of those parameters.

A setting is one field of `shared.settings.DocumentationSettings` (its docstring's first paragraph documents it);
after adding or changing one,

    python -m tools.settings_artifacts            # rewrite the artefacts
    python -m tools.settings_artifacts --check    # only say which differ (exit 1)

rewrites local.settings.sample.json, the marked part of infra/main.bicep and the settings' entries of
infra/main.parameters.json; tests/infra/test_settings_artifacts.py fails while a committed one differs. The tables
below say what the deployment does beyond a parameter named after each setting, with the setting's default: a value
it wires itself, a default the spec ships instead, a setting it never sets.

azd reads each setting's parameter from a variable of its own, `DOCS_` and the setting's path in upper snake case
(`Forge__Documentation__Origin` -> `DOCS_FORGE_DOCUMENTATION_ORIGIN`), never from the setting's own name: azd falls
back on the process environment for a variable its environment lacks, and a shell set up to run the service locally
exports the settings themselves (an origin on 127.0.0.1, tokens), which must not reach a deployment.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.settings import HOST_OWNED, PREFIX, DocumentationSettings, Secret

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "local.settings.sample.json"
MAIN = ROOT / "infra" / "main.bicep"
PARAMETERS = ROOT / "infra" / "main.parameters.json"

BEGIN = "// BEGIN settings generated from shared/settings/ by tools/settings_artifacts.py: change the model, rerun it"
END = "// END generated settings"


@dataclass(frozen=True)
class Wired:
    """A setting the deployment sets to a value of its own rather than to the parameter named after it."""

    value: str
    """The Bicep expression the app setting gets."""
    why: str
    comment: str = ""
    """Said above the setting in the settings object."""
    parameter: bool = True
    """The deployment still takes the parameter named after the setting (the expression falls back to it)."""


WIRED = {
    f"{PREFIX}Identity__ClientId": Wired(
        "identity.outputs.clientId", "the user-assigned identity's client id", parameter=False
    ),
    f"{PREFIX}AiSearch__Endpoint": Wired("aiSearchEndpointUrl", "the given endpoint, else the AI Search service's"),
    f"{PREFIX}Refresh__QueueName": Wired(
        "refreshOnPublish ? refreshOnPublishQueue : ''",
        "the queue refreshOnPublish creates, else empty (no queue trigger)",
        "Empty (no queue trigger) unless refreshOnPublish creates the queue and the events that fill it.",
        parameter=False,
    ),
    f"{PREFIX}Auth__TenantId": Wired(
        "entraAuth ? tenant().tenantId : authTenantId",
        "with entraAuth this tenant, else the parameter authTenantId",
        "With entraAuth, sign-in points at the app registration; without it, the parameters pass through (empty: off).",
    ),
    f"{PREFIX}Auth__Audience": Wired(
        "entraAuth ? entraAudience : authAudience",
        "with entraAuth the registration's Application ID URI, else the parameter authAudience",
    ),
    f"{PREFIX}Auth__Scopes": Wired(
        "entraAuth ? docsReadScope : authScopes",
        "with entraAuth the registration's scope, else the parameter authScopes",
    ),
    f"{PREFIX}Auth__AppRoles": Wired(
        "entraAuth ? docsReadRole : authAppRoles",
        "with entraAuth the registration's read role, else the parameter authAppRoles",
    ),
    f"{PREFIX}Refresh__AppRoles": Wired(
        "entraAuth ? docsRefreshRole : refreshAppRoles",
        "with entraAuth the registration's refresh role, else the parameter refreshAppRoles",
    ),
    f"{PREFIX}Insights__AppRoles": Wired(
        "entraAuth ? docsInsightsRole : insightsAppRoles",
        "with entraAuth the registration's insights role, else the parameter insightsAppRoles",
    ),
}
"""Settings whose value comes from the deployment itself rather than from a parameter of the same name."""

SHIPPED = {
    f"{PREFIX}AiSearch__SearchFilter": (
        "format eq '.html'",
        "the spec's AI Search host ships it while the code default is none (documentation-retrieval.md, Search "
        "filter: code default vs. shipped value): it drops each page's Markdown twin before ranking, so `top` = the "
        "limit counts pages, not twins",
    ),
}
"""Settings whose Bicep default is the spec's shipped host value rather than the service's own default."""

NOT_DEPLOYED = {
    f"{PREFIX}AiSearch__ApiKey": "local development only: in Azure the identity authenticates to AI Search",
    f"{PREFIX}Cache__ConnectionString": "carries an account key; the deployment is keyless (Cache__BlobServiceUri)",
    f"{PREFIX}Inbound__AudienceTokens": "one setting per audience (Inbound__AudienceTokens__<audience>), each a Key "
    "Vault reference the operator adds (docs/audiences.md); with entraAuth, Docs.Audience.<audience> roles instead",
}
"""Settings the service reads that the deployment deliberately never sets."""

LENGTHS = {f"{PREFIX}Cache__Container": (3, 63)}
"""Parameters Azure refuses outside these lengths, checked before anything deploys (the deployment creates them)."""

PARAMETER_ABOUT = {
    "Origin": "origin hosting every documentation site.",
    "DefaultSite": "site tried first for a location without a site.",
    "Sites": "comma-separated sites under the origin.",
    "SearchIndexPath": "search index path relative to a site.",
    "CacheFileNameTemplate": "per-site cache blob name.",
    "CacheDurationHours": "how long a cached index is fresh on first load.",
    "RawMarkdownUrlPattern": "raw Markdown URL pattern; empty converts HTML instead.",
    "SearchIndexOverrides": "JSON object, site to index path.",
    "Cache__Container": "blob container of the shared index cache (created here).",
    "Cache__BlobServiceUri": "another blob service for the cache; empty: the host storage.",
    "Cache__CheckIntervalSeconds": "how often a warm instance looks for a newer index; a refresh written by any "
    "instance is served by every instance within it.",
    "Warmup__Schedule": "NCRONTAB schedule of the warm-up timer.",
    "Warmup__PageCheckConcurrency": "page requests the warm-up keeps in flight while checking which indexed pages the "
    "origin no longer serves (1-64).",
    "Warmup__PageCheckSeconds": "how long that check may take per site and run.",
    "Search__MinScore": "relevance floor of the MkDocs provider.",
    "Search__PathWeights": "page-kind rules (JSON list, see docs/configuration.md); [] restores the spec ranking.",
    "Search__SiteWaitSeconds": "how long a search waits for a site still loading.",
    "Search__Semantic": "also rank by meaning (needs 2048 MB instances).",
    "SiteRetrySeconds": "first retry delay of a site that failed to load.",
    "UnpublishedRetrySeconds": "retry delay of a site whose index is not published.",
    "RequestTimeoutSeconds": "one deadline for all outbound calls of a request.",
    "Mcp__AllowedHosts": "comma-separated extra Host names /api/mcp answers (custom domains).",
    "Mcp__AnswerBudgetChars": "most characters a get_doc answer takes without maxChars.",
    "AiSearch__Endpoint": "AI Search endpoint; empty: https://<aiSearchServiceName>.<aiSearchDnsSuffix>.",
    "AiSearch__IndexName": "",
    "AiSearch__SemanticConfigurationName": "",
    "AiSearch__PlatformDocsBaseUrl": "base URL blob-storage paths are rewritten to.",
    "AiSearch__MkDocsSitePrefix": "leading segment stripped from locations; empty: none.",
    "AiSearch__SearchFilter": "OData filter sent with every search; blank: none. The spec's AI Search host ships "
    "format eq '.html' (the service's own default is none): it drops each page's Markdown twin before ranking, so the "
    "limit counts pages. Blank it for an index whose documents carry no format.",
    "AiSearch__UrlField": "index field holding each document's blob URL.",
    "AiSearch__ContentField": "index field previews are cut from.",
    "AiSearch__TitleField": "index field holding the page title.",
    "AiSearch__DescriptionField": "index field shown when the content yields no preview.",
    "AiSearch__SiteField": "filterable index field holding the site name; empty: searches for one site fall through "
    "to MkDocs.",
    "AiSearch__TimeoutSeconds": "upper bound of one search call.",
    "Remote__Endpoint": "another deployment's /api/mcp; empty: no remote provider.",
    "Remote__Token": "bearer token for the remote endpoint, stored in Key Vault.",
    "Remote__Scope": "Entra ID scope of the remote deployment; without a token, the app's identity gets one for it.",
    "Remote__FunctionsKey": "the remote deployment's Functions key (x-functions-key), stored in Key Vault.",
    "Remote__Order": "the remote provider's place in the chain (AI Search 0, MkDocs 100).",
    "Remote__TimeoutSeconds": "upper bound of one remote call.",
    "Remote__CooldownSeconds": "after a failed connection, calls fall through this long.",
    "Inbound__Tokens": "bearer tokens this app requires on /api/* (comma-separated), stored in Key Vault; empty: none "
    "(the Functions key is the gate).",
    "Inbound__MaxConcurrentPerClient": "requests one client may have in flight per instance.",
    "Refresh__Tokens": "bearer tokens the publish hook (POST /api/admin/refresh) accepts (comma-separated), stored in "
    "Key Vault; empty: the hook refuses every caller.",
    "Refresh__WaitSeconds": "how long the publish hook waits for its refresh before answering 202 (at most 220, below "
    "the front end's 230 s).",
    "Refresh__AppRoles": "app roles whose app-only Entra tokens may call the publish hook (comma-separated); entraAuth "
    "sets Docs.Refresh.",
    "Insights__AppRoles": "app roles whose Entra tokens may read the usage insights report (comma-separated); "
    "entraAuth sets Docs.Insights.Read, to assign to the documentation team.",
    "Auth__TenantId": "the tenant whose access tokens are accepted; with authAudience it turns sign-in on. entraAuth "
    "sets this deployment's tenant.",
    "Auth__Audience": "the app registration's Application ID URI (api://<client id>) or client id; entraAuth sets the "
    "registration's.",
    "Auth__Scopes": "delegated scopes a user's token must carry one of (comma-separated); entraAuth sets docs.read.",
    "Auth__AppRoles": "app roles accepted from app-only callers that read (comma-separated); entraAuth sets "
    "Docs.Read.All.",
    "Auth__Authority": "the identity platform's host (another for a sovereign cloud).",
    "Auth__Resource": "the MCP endpoint's public URL in the protected resource metadata (a custom domain); empty: "
    "https://<default host name>/api/mcp.",
}
"""What a setting's Bicep parameter says after the setting's name, by name without the prefix: shorter than the
setting's documentation, or with what the deployment adds. A setting not listed says its documentation."""

HOST_SAMPLE = {
    "FUNCTIONS_WORKER_RUNTIME": ("python", ""),
    "AzureWebJobsFeatureFlags": ("EnableWorkerIndexing", ""),
    "AzureWebJobsStorage": (
        "UseDevelopmentStorage=true",
        "Host storage; also the index cache account when no Cache__ setting is given. Identity-based form: "
        "AzureWebJobsStorage__blobServiceUri.",
    ),
}
"""The Functions host's own settings in the sample, with their comment when they have one."""


@dataclass(frozen=True)
class Setting:
    """One app setting the service reads, as the artefacts show it."""

    key: str
    field: FieldInfo
    section: str | None
    """The optional section (`AiSearch`, `Remote`) the setting belongs to: the deployment sets it only when enabled."""

    @property
    def name(self) -> str:
        return self.key.removeprefix(PREFIX)

    @property
    def parameter(self) -> str:
        """The Bicep parameter named after it: `Forge__Documentation__Cache__Container` -> `cacheContainer`."""
        return _camel("".join(self.name.split("__")))

    @property
    def azd_variable(self) -> str:
        """The azd variable its parameter reads: `Forge__Documentation__Cache__Container` ->
        `DOCS_FORGE_DOCUMENTATION_CACHE_CONTAINER`."""
        return azd_variable(self.key)

    @property
    def secret(self) -> bool:
        """A Key Vault reference in Azure: marked a secret (`shared.settings.Secret`) or holding a `SecretStr` (a
        secret added without its marker is never deployed in plain text; `test_settings_artifacts` asks for it)."""
        holds = SecretStr in (self.field.annotation, *get_args(self.field.annotation))
        return holds or any(isinstance(marker, Secret) for marker in self.field.metadata)

    @property
    def about(self) -> str:
        """What an operator reads: the first paragraph of the field's docstring, on one line."""
        return " ".join((self.field.description or "").split("\n\n")[0].split())

    @property
    def default(self) -> str:
        """The service's default, written the way an app setting carries it."""
        return as_setting(self.field.get_default(call_default_factory=True))

    @property
    def sample(self) -> str:
        return str(self.field.examples[0]) if self.field.examples else self.default

    @property
    def deployed_default(self) -> str:
        shipped = SHIPPED.get(self.key)
        return shipped[0] if shipped else self.default


def settings(
    model: type[BaseModel] = DocumentationSettings, prefix: str = PREFIX, optional: str | None = None
) -> list[Setting]:
    """Every app setting the model reads, in the model's order, walking nested (and optional) sections; the
    platform's own names apart."""
    found: list[Setting] = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        if alias in HOST_OWNED:
            continue
        section = _section(field)
        if section is None:
            found.append(Setting(prefix + alias, field, optional))
        else:
            held = alias if type(None) in get_args(field.annotation) else optional
            found += settings(section, f"{prefix}{alias}__", held)
    return found


def as_setting(value: Any) -> str:
    """A value written the way an app setting carries it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple | list):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, PathWeights):
        return value.source
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _section(field: FieldInfo) -> type[BaseModel] | None:
    candidates = (field.annotation, *get_args(field.annotation))
    return next((t for t in candidates if isinstance(t, type) and issubclass(t, BaseModel)), None)


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


AZD_PREFIX = "DOCS_"
"""What every setting's azd variable starts with, before the setting's path."""

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def azd_variable(key: str) -> str:
    """A setting's azd variable: `DOCS_` and each segment of its path in upper snake case."""
    return AZD_PREFIX + "_".join(_WORD.sub("_", segment).upper() for segment in key.split("__"))


SETTING_VARIABLES = azd_variable(PREFIX.rstrip("_")) + "_"
"""What the azd variable of every setting starts with (`DOCS_FORGE_DOCUMENTATION_`)."""


# --- local.settings.sample.json ---------------------------------------------------------------------------------


def sample_settings(model: type[BaseModel] = DocumentationSettings) -> str:
    values = {name: value for name, (value, _) in HOST_SAMPLE.items()}
    comments = {name: comment for name, (_, comment) in HOST_SAMPLE.items() if comment}
    for setting in settings(model):
        values[setting.key] = setting.sample
        comments[setting.key] = setting.about
    return json.dumps({"IsEncrypted": False, "Values": values, "_comments": comments}, indent=2) + "\n"


# --- infra/main.bicep -------------------------------------------------------------------------------------------


def bicep_string(value: str) -> str:
    """A Bicep string literal."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("${", "\\${")
    return f"'{escaped}'"


def deployed(setting: Setting) -> bool:
    return setting.key not in NOT_DEPLOYED


def has_parameter(setting: Setting) -> bool:
    wired = WIRED.get(setting.key)
    return deployed(setting) and (wired is None or wired.parameter)


def parameter(setting: Setting) -> list[str]:
    about = PARAMETER_ABOUT.get(setting.name, setting.about)
    lines = ["@secure()"] if setting.secret else []
    lines.append(f"@description({bicep_string(f'{setting.key}: {about}' if about else setting.key)})")
    if setting.key in LENGTHS:
        shortest, longest = LENGTHS[setting.key]
        lines += [f"@minLength({shortest})", f"@maxLength({longest})"]
    if setting.field.annotation is bool:
        lines += ["@allowed([", "  'true'", "  'false'", "])"]
    lines.append(f"param {setting.parameter} string = {bicep_string(setting.deployed_default)}")
    return lines


def _object(name: str, entries: list[Setting], condition: str | None = None) -> list[str]:
    lines = [f"var {name} = {condition} ? {{" if condition else f"var {name} = {{"]
    for setting in entries:
        wired = WIRED.get(setting.key)
        if wired is not None and wired.comment:
            lines.append(f"  // {wired.comment}")
        lines.append(f"  {setting.key}: {wired.value if wired is not None else setting.parameter}")
    lines.append("} : {}" if condition else "}")
    return lines


def _secret(setting: Setting) -> list[str]:
    name, given = f"{setting.parameter}SecretName", f"{setting.parameter}Given"
    secret_name = re.sub(r"(?<!^)(?=[A-Z])", "-", setting.parameter).lower()
    enabled = f"{_camel(setting.section)}Enabled && " if setting.section else ""
    vault = "https://${keyVaultName}${environment().suffixes.keyvaultDns}"
    reference = f"@Microsoft.KeyVault(SecretUri={vault}/secrets/${{{name}}})"
    return [
        f"var {name} = {bicep_string(secret_name)}",
        f"var {given} = {enabled}!empty({setting.parameter})",
        f"var {setting.parameter}Settings = {given} ? {{",
        f"  {setting.key}: '{reference}'",
        "} : {}",
    ]


def bicep_settings(model: type[BaseModel] = DocumentationSettings) -> str:
    """The generated part of infra/main.bicep, its markers included."""
    every = [setting for setting in settings(model) if deployed(setting)]
    lines = [BEGIN]
    for setting in every:
        if has_parameter(setting):
            lines += ["", *parameter(setting)]
    plain = [setting for setting in every if not setting.secret]
    secrets = [setting for setting in every if setting.secret]
    sections = list(dict.fromkeys(setting.section for setting in plain if setting.section))
    lines += [
        "",
        "// The service's settings, passed to the app as one object. The AiSearch and Remote sections are left out",
        "// entirely unless configured, and a secret only ever appears as a Key Vault reference.",
        *_object("coreSettings", [setting for setting in plain if setting.section is None]),
    ]
    for section in sections:
        chosen = [setting for setting in plain if setting.section == section]
        lines += _object(f"{_camel(section)}Settings", chosen, f"{_camel(section)}Enabled")
    lines.append("// Each secret given is stored in the Key Vault, and its setting is a reference to it.")
    for setting in secrets:
        lines += _secret(setting)
    lines.append(f"var anySecretGiven = {' || '.join(f'{setting.parameter}Given' for setting in secrets)}")
    lines.append("var keyVaultSecrets = {")
    lines += [f"  '${{{setting.parameter}SecretName}}': {setting.parameter}" for setting in secrets]
    lines.append("}")
    parts = ["coreSettings", *(f"{_camel(section)}Settings" for section in sections)]
    parts += [f"{setting.parameter}Settings" for setting in secrets]
    lines += [f"var documentationSettings = union({', '.join(parts)})", END]
    return "\n".join(lines) + "\n"


def main_bicep(text: str, model: type[BaseModel] = DocumentationSettings) -> str:
    """infra/main.bicep with its generated part replaced."""
    start, end = text.index(BEGIN), text.index(END)
    return text[:start] + bicep_settings(model) + text[end + len(END) + 1 :]


# --- infra/main.parameters.json ---------------------------------------------------------------------------------

_ENTRY = re.compile(r'"(\w+)": \{\s*"value": "((?:[^"\\]|\\.)*)"\s*\}')


def azd_default(value: str) -> str:
    """A default inside azd's `${VAR=default}`, as JSON string content: azd's substitution ends the reference at the
    first `}` and starts another at a `$`, so both are written as JSON escapes."""
    return json.dumps(value)[1:-1].replace("}", "\\u007d").replace("$", "\\u0024")


def _is_setting_entry(value: str) -> bool:
    """An entry the generator writes: a setting's variable, or (before the rename) the setting's own name."""
    return value.startswith(("${" + SETTING_VARIABLES, "${" + PREFIX))


def main_parameters(text: str, model: type[BaseModel] = DocumentationSettings) -> str:
    """infra/main.parameters.json with the settings' entries regenerated after the deployment's own."""
    own = [(name, value) for name, value in _ENTRY.findall(text) if not _is_setting_entry(value)]
    entries = own + [
        (setting.parameter, f"${{{setting.azd_variable}={azd_default(setting.deployed_default)}}}")
        for setting in settings(model)
        if has_parameter(setting)
    ]
    schema = json.loads(text)["$schema"]
    body = ",\n".join(f'    "{name}": {{\n      "value": "{value}"\n    }}' for name, value in entries)
    return f'{{\n  "$schema": "{schema}",\n  "contentVersion": "1.0.0.0",\n  "parameters": {{\n{body}\n  }}\n}}\n'


# --- command line -----------------------------------------------------------------------------------------------


def generated(model: type[BaseModel] = DocumentationSettings) -> dict[Path, str]:
    """Each artefact as the settings model makes it."""
    return {
        SAMPLE: sample_settings(model),
        MAIN: main_bicep(MAIN.read_text(encoding="utf-8"), model),
        PARAMETERS: main_parameters(PARAMETERS.read_text(encoding="utf-8"), model),
    }


def stale() -> list[Path]:
    """The artefacts whose committed text is not what the model makes."""
    return [path for path, text in generated().items() if path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when an artefact differs")
    args = parser.parse_args(argv)
    if args.check:
        differ = stale()
        for path in differ:
            print(f"{path.relative_to(ROOT)} differs from the settings model: run python -m tools.settings_artifacts")
        return 1 if differ else 0
    for path, text in generated().items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
