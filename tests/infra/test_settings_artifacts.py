"""The settings' artefacts (`tools/settings_artifacts.py`): the committed ones are what the settings model generates,
and a setting added to the model reaches every one of them from its field alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from pycep import BicepParser
from pydantic import Field, SecretStr

from shared.settings import DocumentationSettings, RemoteSettings
from tools.settings_artifacts import (
    MAIN,
    PARAMETERS,
    SETTING_VARIABLES,
    azd_variable,
    generated,
    main_bicep,
    main_parameters,
    sample_settings,
    settings,
    stale,
)


def test_the_committed_artefacts_are_what_the_settings_model_generates() -> None:
    differ = [str(path.name) for path in stale()]
    assert not differ, f"{differ} differ from shared/settings/: run python -m tools.settings_artifacts"


def test_the_sample_is_a_functions_local_settings_file() -> None:
    sample = json.loads(sample_settings())
    assert sample["IsEncrypted"] is False
    assert sample["Values"]["FUNCTIONS_WORKER_RUNTIME"] == "python"
    assert set(sample["_comments"]) - {"AzureWebJobsStorage"} <= set(sample["Values"])
    assert all(comment.strip() for comment in sample["_comments"].values())


class _RemoteWithOneMore(RemoteSettings):
    client_secret: SecretStr | None = Field(None, alias="ClientSecret")
    """What the other deployment also asks for."""


class _WithTwoMore(DocumentationSettings):
    """The model as a developer grows it: one plain setting, one secret in an optional section."""

    remote: _RemoteWithOneMore | None = Field(None, alias="Remote")  # type: ignore[assignment]
    page_budget: int = Field(40, alias="PageBudget", ge=1)
    """How many pages one answer names.

    Not what an operator reads: only the first paragraph is."""


def test_a_new_setting_reaches_every_artefact_from_its_field_alone(tmp_path: Path) -> None:
    sample = json.loads(sample_settings(_WithTwoMore))
    assert sample["Values"]["Forge__Documentation__PageBudget"] == "40"
    assert sample["_comments"]["Forge__Documentation__PageBudget"] == "How many pages one answer names."
    assert sample["Values"]["Forge__Documentation__Remote__ClientSecret"] == ""

    bicep = main_bicep(MAIN.read_text(encoding="utf-8"), _WithTwoMore)
    assert (
        "@description('Forge__Documentation__PageBudget: How many pages one answer names.')\n"
        "param pageBudget string = '40'\n"
    ) in bicep
    assert "  Forge__Documentation__PageBudget: pageBudget\n" in bicep
    assert "@secure()\n@description('Forge__Documentation__Remote__ClientSecret: " in bicep
    assert "var remoteClientSecretGiven = remoteEnabled && !empty(remoteClientSecret)\n" in bicep
    assert "  '${remoteClientSecretSecretName}': remoteClientSecret\n" in bicep
    lines = bicep.splitlines()
    assert "remoteClientSecretGiven" in next(line for line in lines if line.startswith("var anySecretGiven = "))
    assert "remoteClientSecretSettings" in next(line for line in lines if line.startswith("var documentationSettings"))
    written = tmp_path / "main.bicep"
    written.write_text(bicep, encoding="utf-8")
    parsed = BicepParser().parse(file_path=written)
    assert parsed["parameters"]["pageBudget"]["default"] == "40"
    assert parsed["variables"]["coreSettings"]["value"]["Forge__Documentation__PageBudget"] == "pageBudget"

    parameters = json.loads(main_parameters(PARAMETERS.read_text(encoding="utf-8"), _WithTwoMore))["parameters"]
    assert parameters["pageBudget"] == {"value": "${DOCS_FORGE_DOCUMENTATION_PAGE_BUDGET=40}"}
    assert parameters["remoteClientSecret"] == {"value": "${DOCS_FORGE_DOCUMENTATION_REMOTE_CLIENT_SECRET=}"}


def test_the_generator_leaves_what_is_not_the_settings_as_it_is() -> None:
    bicep, parameters = generated()[MAIN], generated()[PARAMETERS]
    committed = MAIN.read_text(encoding="utf-8")
    assert bicep.split("// BEGIN settings")[0] == committed.split("// BEGIN settings")[0]
    assert bicep.split("// END generated settings")[1] == committed.split("// END generated settings")[1]
    own = json.loads(PARAMETERS.read_text(encoding="utf-8"))["parameters"]
    regenerated = json.loads(parameters)["parameters"]
    assert {name: own[name] for name in own if SETTING_VARIABLES not in own[name]["value"]} == {
        name: regenerated[name] for name in regenerated if SETTING_VARIABLES not in regenerated[name]["value"]
    }


def test_an_environment_written_before_the_rename_is_regenerated_under_the_new_names() -> None:
    """The generator recognises its own entries under the setting's own name too, so it replaces them rather than
    keeping them as the deployment's own (which would leave a `Forge__...` azd variable behind)."""
    text = PARAMETERS.read_text(encoding="utf-8").replace(
        "${DOCS_FORGE_DOCUMENTATION_ORIGIN=", "${Forge__Documentation__Origin="
    )
    regenerated = json.loads(main_parameters(text))["parameters"]
    assert regenerated["origin"] == {"value": "${DOCS_FORGE_DOCUMENTATION_ORIGIN=https://docs.saif.com}"}
    assert "Forge__" not in json.dumps(regenerated)


def test_a_settings_azd_variable_is_docs_and_its_path_in_upper_snake_case() -> None:
    assert azd_variable("Forge__Documentation__Origin") == "DOCS_FORGE_DOCUMENTATION_ORIGIN"
    assert azd_variable("Forge__Documentation__AiSearch__MkDocsSitePrefix") == (
        "DOCS_FORGE_DOCUMENTATION_AI_SEARCH_MK_DOCS_SITE_PREFIX"
    )
    assert azd_variable("Forge__Documentation__Auth__TenantId") == "DOCS_FORGE_DOCUMENTATION_AUTH_TENANT_ID"
    assert azd_variable("Forge__Documentation__Remote__FunctionsKey") == "DOCS_FORGE_DOCUMENTATION_REMOTE_FUNCTIONS_KEY"


def test_every_setting_holding_a_secret_is_marked_one() -> None:
    """What the Bicep keeps in Key Vault, what health lists as unresolved and what is redacted all read the
    `Secret` marker: a `SecretStr` setting without one would be deployed in plain text."""

    def holds(annotation: Any) -> bool:
        return annotation is SecretStr or any(holds(inner) for inner in get_args(annotation))

    holding = {setting.key for setting in settings() if holds(setting.field.annotation)}
    marked = {setting.key for setting in settings() if setting.secret}
    assert holding == marked and len(marked) == 8
