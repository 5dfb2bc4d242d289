"""azd's postdeploy step: the health alert goes on once the app has code to answer /api/health.

The deployment creates the availability test of /api/health at `azd provision`, before `azd deploy` gives the app
anything to answer it with, so its severity-1 alert is created off until `HEALTH_ALERT_ENABLED` is true
(infra/main.bicep, healthAlertEnabled). azure.yaml runs this after every `azd deploy` and `azd up`, with azd's
environment in the process environment; it:

- does nothing when `HEALTH_ALERT_ENABLED` is already true: the last provision kept the alert on;
- otherwise turns the alert named by `HEALTH_ALERT_ID` on through Azure Resource Manager (the deployment's output
  `AZURE_RESOURCE_MANAGER_ENDPOINT`; a PATCH of the metric alert's `properties.enabled`, api-version 2018-03-01) with
  a token azd gives it for the account it deploys with (`azd auth token`), then records `HEALTH_ALERT_ENABLED=true`
  in the azd environment, so that every later provision keeps the alert on;
- without `HEALTH_ALERT_ID` (an environment last provisioned before the alert started off, which created it on), only
  records `HEALTH_ALERT_ENABLED=true`.

When Azure or azd refuses, it says so with the commands that do the same by hand and exits 1: the code is deployed,
and the alert is still off. Standard library only: it runs on the deploying machine, outside the project's virtual
environment. It never prints the token.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlsplit

ENABLED = "HEALTH_ALERT_ENABLED"
ALERT_ID = "HEALTH_ALERT_ID"
ENDPOINT = "AZURE_RESOURCE_MANAGER_ENDPOINT"
PUBLIC_CLOUD = "https://management.azure.com/"
API_VERSION = "2018-03-01"
"""Microsoft.Insights/metricAlerts, the version infra/app/alerts.bicep declares the alert with."""


class Refused(Exception):
    """azd or Azure Resource Manager did not do what was asked."""


def azd(arguments: list[str]) -> str:
    executable = shutil.which("azd")
    if executable is None:
        raise Refused("azd is not on PATH")
    try:
        # azd itself, found on PATH as azd found this hook, with arguments this module writes.
        done = subprocess.run([executable, *arguments], capture_output=True, text=True, timeout=120)  # noqa: S603
    except subprocess.TimeoutExpired as exc:
        raise Refused(f"azd {' '.join(arguments[:2])} did not answer within 120 s") from exc
    if done.returncode != 0:
        raise Refused(f"azd {' '.join(arguments[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def access_token(endpoint: str) -> str:
    answer = azd(["auth", "token", "--output", "json", "--scope", f"{endpoint.rstrip('/')}/.default"])
    try:
        return str(json.loads(answer)["token"])
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused("azd auth token gave no token") from exc


def enable_alert(alert_id: str, endpoint: str, token: str) -> None:
    url = urlsplit(endpoint)
    loopback = url.scheme == "http" and url.hostname in ("127.0.0.1", "::1", "localhost")
    if url.scheme != "https" and not loopback:
        raise Refused(f"{ENDPOINT} is not an https URL: {endpoint}")
    request = urllib.request.Request(  # noqa: S310  https (plain http on this machine only), checked above
        f"{endpoint.rstrip('/')}{alert_id}?api-version={API_VERSION}",
        data=json.dumps({"properties": {"enabled": True}}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="PATCH",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310  checked above
            response.read()
    except urllib.error.HTTPError as exc:
        raise Refused(f"Azure Resource Manager answered {exc.code} to enabling {alert_id}") from exc
    except (urllib.error.URLError, TimeoutError) as exc:
        raise Refused(f"Azure Resource Manager could not be reached at {endpoint}: {exc}") from exc


def by_hand(alert_id: str, environment: str) -> str:
    lines = ["The code is deployed, and the health alert is still off. To turn it on by hand:", ""]
    if alert_id:
        lines.append(f"  az monitor metrics alert update --ids {alert_id} --enabled true")
    lines.append(f"  azd env set {ENABLED} true" + (f" --environment {environment}" if environment else ""))
    return "\n".join(lines)


def main(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    if environ.get(ENABLED, "").strip().lower() == "true":
        return 0
    alert_id = environ.get(ALERT_ID, "").strip()
    environment = environ.get("AZURE_ENV_NAME", "").strip()
    try:
        if alert_id:
            endpoint = environ.get(ENDPOINT, "").strip() or PUBLIC_CLOUD
            enable_alert(alert_id, endpoint, access_token(endpoint))
        azd(["env", "set", ENABLED, "true", *(["--environment", environment] if environment else [])])
    except Refused as refused:
        print(f"postdeploy: {refused}\n{by_hand(alert_id, environment)}", file=sys.stderr)
        return 1
    print("postdeploy: the health alert is on, and later provisions keep it on (HEALTH_ALERT_ENABLED=true).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
