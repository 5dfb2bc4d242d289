"""azd's preprovision check: no deployment of settings meant for this machine, and no environment left on the old names.

azure.yaml runs it before every `azd provision` and `azd up` (`python3 infra/hooks/preprovision.py` on Linux and macOS,
`python` on Windows), with azd's environment already in the process environment, from the project directory. It
refuses (exit 1, saying what to do):

- an http(s) URL in any `DOCS_FORGE_DOCUMENTATION_*` variable (the origin, the remote endpoint, the AI Search
  endpoint, the cache's blob service, ...) whose host is this machine or a private network (`localhost`,
  `*.localhost`, `*.local`, `*.internal`, a name without a dot, or an IP address that is not globally routable): a
  deployed app would look for its documentation there. `DOCS_ALLOW_PRIVATE_ORIGIN=true` allows it, for an origin the
  app reaches through its virtual network. Host names are not resolved. Any other value passes untouched, above all
  the `akvs://<subscription>/<vault>/<secret>` reference `azd env set-secret` stores, which azd hands a hook as it is.
- an azd environment (`.azure/<name>/.env`) that still holds a setting under its own name (`Forge__Documentation__*`,
  what the deployment read before the `DOCS_` variables): the deployment no longer reads it, so the app would quietly
  get the default instead. It prints the commands that move each one.

It warns, and goes on, when `ALERT_EMAIL` is empty, and when an environment already provisioned holds no
`HEALTH_ALERT_ENABLED=true` (the provision then leaves the health alert off until a deploy turns it on).

Standard library only: it runs on the deploying machine, outside the project's virtual environment.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

SETTING_VARIABLES = "DOCS_FORGE_DOCUMENTATION_"
"""What every setting's azd variable starts with (tools/settings_artifacts.py names them)."""
LEGACY_PREFIX = "forge__"
"""A setting's own name, which azd variables carried before the rename (compared in lower case)."""
ALLOW = "DOCS_ALLOW_PRIVATE_ORIGIN"
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")
WEB_SCHEMES = ("http", "https")
"""The URLs the app fetches; any other value (an `akvs://` secret reference above all) is not an address it uses."""

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def azd_variable(setting: str) -> str:
    """A setting's azd variable, as tools/settings_artifacts.py names it (a test keeps the two the same)."""
    return "DOCS_" + "_".join(_WORD.sub("_", segment).upper() for segment in setting.split("__"))


def private_host(host: str) -> str | None:
    """Why a URL's host is this machine or a private network, or None when it is neither."""
    name = host.strip("[]").rstrip(".").lower()
    if not name:
        return "no host"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if name == "localhost" or name.endswith(LOCAL_SUFFIXES):
            return "a local host name"
        return None if "." in name else "a name without a domain (resolved on the local network only)"
    if address.is_loopback:
        return "a loopback address"
    return None if address.is_global else "an address that is not globally routable"


def private_urls(environ: Mapping[str, str]) -> list[str]:
    """`VARIABLE=url (why)` for each URL a setting's variable holds whose host is local or private."""
    found = []
    for name, value in sorted(environ.items()):
        if not name.upper().startswith(SETTING_VARIABLES):
            continue
        for item in (part.strip() for part in value.split(",")):
            scheme, separator, _ = item.partition("://")
            # Only what the app would fetch: an akvs:// secret reference names a subscription id where a host would be.
            if not separator or scheme.lower() not in WEB_SCHEMES:
                continue
            try:
                host = urlsplit(item).hostname or ""
            except ValueError:
                host = ""
            reason = private_host(host)
            if reason:
                found.append(f"{name}={item} ({reason})")
    return found


def read_dotenv(path: Path) -> dict[str, str]:
    """The names and values of an azd environment's .env file (`NAME="value"` lines); {} when there is none."""
    if not path.is_file():
        return {}
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, equals, value = line.strip().partition("=")
        if not equals or name.startswith("#"):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        values[name.strip()] = value
    return values


def legacy_names(azd_environment: Mapping[str, str]) -> list[str]:
    """The settings an azd environment still holds under their own names."""
    return sorted(name for name in azd_environment if name.lower().startswith(LEGACY_PREFIX))


def migration(names: list[str], environment_file: Path) -> str:
    lines = [
        f"The azd environment ({environment_file}) holds service settings under their own names, which the",
        "deployment no longer reads (the app would get their defaults instead). Move each to its DOCS_ variable:",
        "",
    ]
    lines += [f'  azd env set {azd_variable(name)} "$(azd env get-value {name})"' for name in names]
    lines += [
        "",
        f"then delete the old lines from {environment_file}. A value set with `azd env set-secret` moves the same",
        "way (it is a Key Vault reference). docs/deployment.md, 'Migrating an environment', says why.",
    ]
    return "\n".join(lines)


def check(environ: Mapping[str, str], root: Path) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for a provision with this environment from this project directory."""
    refusals = []
    environment_file = root / ".azure" / environ.get("AZURE_ENV_NAME", "") / ".env"
    old = legacy_names(read_dotenv(environment_file)) if environ.get("AZURE_ENV_NAME") else []
    if old:
        refusals.append(migration(old, environment_file))
    private = private_urls(environ)
    if private and environ.get(ALLOW, "").strip().lower() != "true":
        refusals.append(
            "These settings point the deployed app at this machine or a private network:\n"
            + "".join(f"  {item}\n" for item in private)
            + "azd takes a variable from this shell when its environment (.azure/<name>/.env) does not set it, so\n"
            + "a shell set up to run the service locally may be the source: set the DOCS_ variable to the address the\n"
            + "app should use (`azd env set ...`), or, when the app really reaches it through its virtual network\n"
            + f"(privateNetworking), `azd env set {ALLOW} true`."
        )
    warnings = []
    if not environ.get("ALERT_EMAIL", "").strip():
        warnings.append("ALERT_EMAIL is not set: alerts fire with nobody notified (docs/deployment.md, Operations).")
    if environ.get("SERVICE_API_NAME") and environ.get("HEALTH_ALERT_ENABLED", "").strip().lower() != "true":
        warnings.append(
            "HEALTH_ALERT_ENABLED is not true: this provision leaves the health alert off until the next `azd deploy`"
            " turns it on (infra/hooks/postdeploy.py). If the app already has its code, `azd env set"
            " HEALTH_ALERT_ENABLED true` keeps it on now."
        )
    return refusals, warnings


def main(environ: Mapping[str, str] | None = None, root: Path | None = None) -> int:
    refusals, warnings = check(os.environ if environ is None else environ, Path.cwd() if root is None else root)
    for warning in warnings:
        print(f"preprovision: warning: {warning}", file=sys.stderr)
    for refusal in refusals:
        print(f"preprovision: {refusal}\n", file=sys.stderr)
    return 1 if refusals else 0


if __name__ == "__main__":
    sys.exit(main())
