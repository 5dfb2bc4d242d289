"""azd's preprovision check (infra/hooks/preprovision.py, wired in azure.yaml): a deployment never takes an origin on
this machine or a private network unless told to, and an environment still on the old azd names is stopped with the
commands that move it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tools.settings_artifacts import azd_variable, has_parameter, settings

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "infra" / "hooks" / "preprovision.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("preprovision", HOOK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load()
ORIGIN = "DOCS_FORGE_DOCUMENTATION_ORIGIN"
SUBSCRIPTION = "0b4f3c2e-8d1a-4c5e-9f6b-2a7d9e1c3b5f"
SECRET_VARIABLES = sorted(s.azd_variable for s in settings() if s.secret and has_parameter(s))
"""The variables `azd env set-secret` is for: each secret setting the deployment reads (docs/deployment.md)."""


def set_secret(variable: str) -> str:
    """What `azd env set-secret <variable>` writes to the environment: `akvs://<subscription id>/<vault>/<secret>`
    (azure-dev cli/azd/pkg/keyvault/keyvault.go, NewAzureKeyVaultSecret), the secret named as azd suggests."""
    return f"akvs://{SUBSCRIPTION}/kv-docs-secrets/{variable.replace('_', '-')}-kv-secret"


def refusals(environ: dict[str, str], root: Path) -> list[str]:
    found: list[str] = hook.check(environ, root)[0]
    return found


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://docs.localhost",
        "http://[::1]:8000",
        "http://0.0.0.0:8000",
        "https://10.1.2.3",
        "https://172.16.0.9/docs",
        "https://192.168.1.20",
        "http://169.254.169.254",
        "http://docs",
        "https://docs.corp.internal",
        "https://[fd00::1]",
    ],
)
def test_an_origin_on_this_machine_or_a_private_network_is_refused(origin: str, tmp_path: Path) -> None:
    (found,) = refusals({ORIGIN: origin}, tmp_path)
    assert f"{ORIGIN}={origin}" in found
    assert "DOCS_ALLOW_PRIVATE_ORIGIN" in found


@pytest.mark.parametrize("origin", ["https://docs.saif.com", "https://8.8.8.8", "https://docs.example.com:8443/x"])
def test_a_public_origin_passes(origin: str, tmp_path: Path) -> None:
    assert refusals({ORIGIN: origin}, tmp_path) == []


def test_every_url_setting_is_checked_not_only_the_origin(tmp_path: Path) -> None:
    """The local recipe's Azurite is a blob service URI on 127.0.0.1; the remote endpoint may be a local peer."""
    environ = {
        "DOCS_FORGE_DOCUMENTATION_CACHE_BLOB_SERVICE_URI": "http://127.0.0.1:10000/devstoreaccount1",
        "DOCS_FORGE_DOCUMENTATION_REMOTE_ENDPOINT": "http://localhost:7071/api/mcp",
        "DOCS_FORGE_DOCUMENTATION_SITES": "forge,cloud-foundations",
    }
    (found,) = refusals(environ, tmp_path)
    assert "CACHE_BLOB_SERVICE_URI" in found and "REMOTE_ENDPOINT" in found and "SITES" not in found


@pytest.mark.parametrize("variable", SECRET_VARIABLES)
def test_a_key_vault_reference_from_azd_env_set_secret_is_no_address(variable: str, tmp_path: Path) -> None:
    """azd hands a hook the environment's values as stored; the reference's "host" is a subscription id, which the
    check used to refuse as a name without a domain, stopping every provision of the documented recipe."""
    assert refusals({variable: set_secret(variable), ORIGIN: "https://docs.example.com"}, tmp_path) == []


def test_only_http_urls_are_addresses_the_app_would_fetch(tmp_path: Path) -> None:
    environ = {
        "DOCS_FORGE_DOCUMENTATION_REMOTE_TOKEN": "akvs://docs/vault/token",
        "DOCS_FORGE_DOCUMENTATION_REMOTE_ENDPOINT": "HTTP://localhost:7071/api/mcp",
        "DOCS_FORGE_DOCUMENTATION_CACHE_BLOB_SERVICE_URI": "https://[::1",
    }
    (found,) = refusals(environ, tmp_path)
    assert "REMOTE_ENDPOINT" in found and "CACHE_BLOB_SERVICE_URI" in found and "akvs://" not in found


def test_the_allow_flag_lets_a_private_origin_through(tmp_path: Path) -> None:
    environ = {ORIGIN: "https://10.1.2.3", "DOCS_ALLOW_PRIVATE_ORIGIN": "true"}
    assert refusals(environ, tmp_path) == []
    assert refusals({**environ, "DOCS_ALLOW_PRIVATE_ORIGIN": "yes"}, tmp_path) != []


def test_the_services_own_settings_in_the_shell_are_not_what_it_checks(tmp_path: Path) -> None:
    """The local recipe's exports are harmless now that no azd variable is named like a setting."""
    environ = {"Forge__Documentation__Origin": "http://127.0.0.1:8000", "AZURE_ENV_NAME": "docs"}
    assert refusals(environ, tmp_path) == []


def test_an_environment_still_on_the_old_names_is_stopped_with_the_commands_that_move_it(tmp_path: Path) -> None:
    env_file = tmp_path / ".azure" / "docs" / ".env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(
        'AZURE_ENV_NAME="docs"\n'
        'Forge__Documentation__Origin="https://docs.example.com"\n'
        'Forge__Documentation__Remote__Token="akvs://sub/vault/secret"\n'
        'REFRESH_ON_PUBLISH="true"\n',
        encoding="utf-8",
    )
    (found,) = refusals({"AZURE_ENV_NAME": "docs"}, tmp_path)
    assert 'azd env set DOCS_FORGE_DOCUMENTATION_ORIGIN "$(azd env get-value Forge__Documentation__Origin)"' in found
    assert "DOCS_FORGE_DOCUMENTATION_REMOTE_TOKEN" in found
    assert "akvs://" not in found, "values, secrets above all, are never printed"
    assert "REFRESH_ON_PUBLISH" not in found


def test_an_empty_alert_address_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    found, (warning,) = hook.check({}, tmp_path)
    assert found == [] and "ALERT_EMAIL" in warning
    assert hook.check({"ALERT_EMAIL": "ops@example.com"}, tmp_path) == ([], [])


def test_a_provisioned_environment_without_the_alert_remembered_is_warned_the_alert_goes_off(tmp_path: Path) -> None:
    """The health alert is created off until HEALTH_ALERT_ENABLED is true (infra/hooks/postdeploy.py records it after
    a deploy): an environment provisioned before that, provisioned again alone, would turn a running app's alert off."""
    provisioned = {"ALERT_EMAIL": "ops@example.com", "SERVICE_API_NAME": "func-api-abc"}
    found, (warning,) = hook.check(provisioned, tmp_path)
    assert found == [] and "HEALTH_ALERT_ENABLED" in warning and "azd deploy" in warning
    assert hook.check({**provisioned, "HEALTH_ALERT_ENABLED": "true"}, tmp_path) == ([], [])
    assert hook.check({"ALERT_EMAIL": "ops@example.com"}, tmp_path) == ([], []), "a first provision: nothing to say"


def test_the_hook_names_each_settings_variable_as_the_generator_does() -> None:
    for setting in settings():
        assert hook.azd_variable(setting.key) == azd_variable(setting.key) == setting.azd_variable


def test_the_script_exits_1_on_a_refusal_and_0_otherwise(tmp_path: Path) -> None:
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("DOCS_", "AZURE_ENV"))}
    run = [sys.executable, str(HOOK)]
    refused = subprocess.run(run, env={**clean, ORIGIN: "http://127.0.0.1:8000"}, cwd=tmp_path, capture_output=True)
    assert refused.returncode == 1 and b"127.0.0.1" in refused.stderr
    passed = subprocess.run(run, env={**clean, ORIGIN: "https://docs.example.com"}, cwd=tmp_path, capture_output=True)
    assert passed.returncode == 0, passed.stderr


def test_the_hook_run_as_azd_runs_it_passes_set_secret_references_and_still_refuses_loopback(tmp_path: Path) -> None:
    """azd runs the hook from the project directory with the environment file's raw values in its environment (the
    hook lists no `secrets:`, so no reference is resolved): every secret set with `azd env set-secret`, and the
    origin. A loopback origin beside them is still refused, and no reference is printed."""
    env_file = tmp_path / ".azure" / "docs" / ".env"
    env_file.parent.mkdir(parents=True)
    stored = {variable: set_secret(variable) for variable in SECRET_VARIABLES}
    stored |= {"AZURE_ENV_NAME": "docs", "AZURE_SUBSCRIPTION_ID": SUBSCRIPTION, "ALERT_EMAIL": "ops@example.com"}
    env_file.write_text("".join(f'{name}="{value}"\n' for name, value in stored.items()), encoding="utf-8")
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("DOCS_", "AZURE_"))}
    run = [sys.executable, str(HOOK)]
    as_azd = {**clean, **stored, ORIGIN: "https://docs.example.com"}
    passed = subprocess.run(run, env=as_azd, cwd=tmp_path, capture_output=True)
    assert passed.returncode == 0, passed.stderr
    assert passed.stderr == b""
    refused = subprocess.run(run, env={**as_azd, ORIGIN: "http://127.0.0.1:8000"}, cwd=tmp_path, capture_output=True)
    assert refused.returncode == 1 and b"127.0.0.1" in refused.stderr and b"akvs://" not in refused.stderr


def test_azure_yaml_runs_the_check_before_every_provision_on_both_shells() -> None:
    hooks = yaml.safe_load((ROOT / "azure.yaml").read_text())["hooks"]["preprovision"]
    assert hooks["posix"] == {"shell": "sh", "run": "python3 infra/hooks/preprovision.py"}
    assert hooks["windows"]["shell"] == "pwsh"
    # pwsh ends a script with its last statement's status, not a native command's exit code: pass it on.
    assert hooks["windows"]["run"] == "python infra/hooks/preprovision.py; exit $LASTEXITCODE"
