"""azd's postdeploy step (infra/hooks/postdeploy.py, wired in azure.yaml): the health alert that a provision creates
off goes on after a deploy, and the azd environment remembers it, so that no later provision turns it off again.

Run as azd runs it, as a script with the azd environment in its process environment, against a fake `azd` on PATH
(which records its arguments and hands out a token) and a local server in the place of Azure Resource Manager.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.infra.test_bicep import INFRA, MAIN, ROOT, accessor, azd_parameters, body, parse, resources

HOOK = ROOT / "infra" / "hooks" / "postdeploy.py"
ALERT = "/subscriptions/0b4f3c2e/resourceGroups/rg-docs/providers/Microsoft.Insights/metricAlerts/alert-abc-health"
TOKEN = "not-a-real-token"

FAKE_AZD = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_AZD_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["auth", "token"]:
    print(json.dumps({{"token": "{TOKEN}", "expiresOn": "2030-01-01T00:00:00Z"}}))
"""


class Arm:
    """A stand-in for Azure Resource Manager that records each request and answers with `status`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        arm = self

        class Handler(BaseHTTPRequestHandler):
            def do_PATCH(self) -> None:
                length = int(self.headers["Content-Length"])
                arm.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers["Authorization"],
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                self.send_response(arm.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/"


@pytest.fixture
def arm() -> Iterator[Arm]:
    stand_in = Arm()
    thread = threading.Thread(target=stand_in.server.serve_forever, daemon=True)
    thread.start()
    yield stand_in
    stand_in.server.shutdown()
    stand_in.server.server_close()


def run(tmp_path: Path, environ: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """The hook as azd runs it, with a fake azd first on PATH; what it did, and what it asked azd."""
    fake = tmp_path / "bin" / "azd"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE_AZD, encoding="utf-8")
    fake.chmod(0o755)
    log = tmp_path / "azd.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HEALTH_", "AZURE_"))}
    env = {**clean, "PATH": f"{fake.parent}{os.pathsep}{clean['PATH']}", "FAKE_AZD_LOG": str(log), **environ}
    done = subprocess.run([sys.executable, str(HOOK)], env=env, cwd=tmp_path, capture_output=True, text=True)
    asked = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, asked


@pytest.mark.skipif(sys.platform == "win32", reason="the fake azd is a script with a shebang")
def test_after_the_first_deploy_the_alert_goes_on_and_the_environment_remembers_it(tmp_path: Path, arm: Arm) -> None:
    environ = {"AZURE_ENV_NAME": "docs", "HEALTH_ALERT_ID": ALERT, "AZURE_RESOURCE_MANAGER_ENDPOINT": arm.endpoint}
    done, asked = run(tmp_path, environ)
    assert done.returncode == 0, done.stderr
    assert arm.requests == [
        {
            "path": f"{ALERT}?api-version=2018-03-01",
            "authorization": f"Bearer {TOKEN}",
            "body": {"properties": {"enabled": True}},
        }
    ]
    assert asked == [
        ["auth", "token", "--output", "json", "--scope", f"{arm.endpoint.rstrip('/')}/.default"],
        ["env", "set", "HEALTH_ALERT_ENABLED", "true", "--environment", "docs"],
    ]
    assert TOKEN not in done.stdout + done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="the fake azd is a script with a shebang")
def test_once_on_a_deploy_changes_nothing(tmp_path: Path, arm: Arm) -> None:
    environ = {
        "HEALTH_ALERT_ENABLED": "true",
        "HEALTH_ALERT_ID": ALERT,
        "AZURE_RESOURCE_MANAGER_ENDPOINT": arm.endpoint,
    }
    done, asked = run(tmp_path, environ)
    assert done.returncode == 0 and arm.requests == [] and asked == []


@pytest.mark.skipif(sys.platform == "win32", reason="the fake azd is a script with a shebang")
def test_an_environment_provisioned_before_the_alert_started_off_is_only_remembered(tmp_path: Path) -> None:
    """Its alert was created on; without HEALTH_ALERT_ENABLED its next provision would turn it off."""
    done, asked = run(tmp_path, {"AZURE_ENV_NAME": "docs"})
    assert done.returncode == 0, done.stderr
    assert asked == [["env", "set", "HEALTH_ALERT_ENABLED", "true", "--environment", "docs"]]


@pytest.mark.skipif(sys.platform == "win32", reason="the fake azd is a script with a shebang")
def test_a_refusal_fails_the_step_with_the_commands_to_run_and_leaves_the_environment_alone(
    tmp_path: Path, arm: Arm
) -> None:
    arm.status = 403
    environ = {"AZURE_ENV_NAME": "docs", "HEALTH_ALERT_ID": ALERT, "AZURE_RESOURCE_MANAGER_ENDPOINT": arm.endpoint}
    done, asked = run(tmp_path, environ)
    assert done.returncode == 1
    assert "403" in done.stderr
    assert f"az monitor metrics alert update --ids {ALERT} --enabled true" in done.stderr
    assert "azd env set HEALTH_ALERT_ENABLED true --environment docs" in done.stderr
    assert [arguments[:2] for arguments in asked] == [["auth", "token"]], "nothing recorded while the alert is off"
    assert TOKEN not in done.stdout + done.stderr


def test_only_an_https_endpoint_gets_the_token(tmp_path: Path) -> None:
    """Plain http is for this machine (the test's stand-in) only."""
    environ = {"HEALTH_ALERT_ID": ALERT, "AZURE_RESOURCE_MANAGER_ENDPOINT": "http://management.example.com/"}
    done, _ = run(tmp_path, environ)
    assert done.returncode == 1 and "not an https URL" in done.stderr


# --- what the deployment gives it ---------------------------------------------------------------------------------


def test_the_health_alert_starts_off_until_a_deploy_and_stays_on_once_remembered() -> None:
    """The availability test runs from the first provision, before `azd deploy` gives /api/health anything to answer:
    an enabled severity-1 alert would fire at every first deployment."""
    parameters = parse(MAIN)["parameters"]
    assert parameters["healthAlertEnabled"]["default"] is False
    assert azd_parameters({})["healthAlertEnabled"] == "false"
    assert azd_parameters({"HEALTH_ALERT_ENABLED": "true"})["healthAlertEnabled"] == "true"
    assert body(parse(MAIN)["modules"]["alerts"])["params"]["healthAlertEnabled"] == "healthAlertEnabled"
    alerts = INFRA / "app" / "alerts.bicep"
    assert body(resources(alerts)["availability"])["properties"]["enabled"] == "healthAlertEnabled"
    assert body(resources(alerts)["healthTest"])["properties"]["Enabled"] is True, "the test runs; it alerts later"
    assert parse(alerts)["outputs"]["healthAlertId"]["value"] == accessor("availability", "id")
    outputs = parse(MAIN)["outputs"]
    assert outputs["HEALTH_ALERT_ID"]["value"] == accessor("alerts", "outputs", "healthAlertId")
    # This cloud's Azure Resource Manager, whose /.default scope the token is asked for.
    assert outputs["AZURE_RESOURCE_MANAGER_ENDPOINT"]["value"] == {
        "operator": {
            "type": "property_accessor",
            "operands": {"operand_1": {"function": {"type": "environment"}}, "operand_2": "resourceManager"},
        }
    }


def test_azure_yaml_runs_the_step_after_every_deploy_on_both_shells() -> None:
    hooks = yaml.safe_load((ROOT / "azure.yaml").read_text())["hooks"]["postdeploy"]
    assert hooks["posix"] == {"shell": "sh", "run": "python3 infra/hooks/postdeploy.py"}
    assert hooks["windows"]["shell"] == "pwsh"
    assert hooks["windows"]["run"] == "python infra/hooks/postdeploy.py; exit $LASTEXITCODE"
    assert "secrets" not in hooks, "the step needs no secret"
