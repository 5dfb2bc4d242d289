"""No Bicep file sets a site property or app setting that Flex Consumption rejects or ignores.

The list is Microsoft's, kept in `flex_consumption_unsupported.txt` with its sources; the check reads every Bicep file
under infra/ with pycep-parser, as tests/infra/test_bicep.py does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pycep import BicepParser

from tests.infra.test_bicep import (
    BICEP_FILES,
    INFRA,
    MAIN,
    ROOT,
    azd_parameters,
    body,
    bounds,
    pairs,
    parse,
    refusal_for,
    resources,
)

LIST = Path(__file__).with_name("flex_consumption_unsupported.txt")

REST_NAMES = {"isreserved": "reserved"}
"""The table's names that are not the REST API's: the SDK's `IsReserved` is the site's `reserved` property."""


@dataclass(frozen=True)
class Unsupported:
    name: str
    source: str
    reason: str

    @property
    def is_site_property(self) -> bool:
        return self.name.startswith("properties.")

    @property
    def key(self) -> str:
        """What a template writes: a property's last segment or a setting's name (matched case-insensitively)."""
        leaf = self.name.rsplit(".", 1)[-1].lower() if self.is_site_property else self.name.lower()
        return REST_NAMES.get(leaf, leaf)


@cache
def unsupported() -> tuple[Unsupported, ...]:
    text = LIST.read_text()
    sources = set(re.findall(r"^# (\[\d+\]) ", text, re.MULTILINE))
    entries = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        entry = re.fullmatch(r"(\S+)\s+(\[\d+\])\s+(.+)", line)
        assert entry, f"not `<name> [source] <reason>`: {line!r}"
        assert entry.group(2) in sources, f"{entry.group(1)} cites {entry.group(2)}, which the header does not name"
        entries.append(Unsupported(*entry.groups()))
    return tuple(entries)


def keys(node: Any) -> set[str]:
    """The property names of a parsed object literal (none for an expression)."""
    return {key.strip("'").lower() for key in node} if isinstance(node, dict) else set()


def rejected(document: dict[str, Any]) -> list[str]:
    """Where a parsed Bicep document sets something on the list, as `resource: name`."""
    site_properties = {entry.key: entry.name for entry in unsupported() if entry.is_site_property}
    app_settings = {entry.key: entry.name for entry in unsupported() if not entry.is_site_property}
    found = []
    for name, resource in (document.get("resources") or {}).items():
        if resource.get("existing") or resource["type"] not in ("Microsoft.Web/sites", "Microsoft.Web/sites/config"):
            continue
        config = body(resource)
        properties = config.get("properties")
        if resource["type"] == "Microsoft.Web/sites":
            site_config = properties.get("siteConfig") if isinstance(properties, dict) else None
            written = keys(properties) | keys(site_config)
            listed = site_config.get("appSettings") if isinstance(site_config, dict) else None
            settings = {str(item.get("name", "")).lower() for item in listed or [] if isinstance(item, dict)}
        elif config["name"] == "web":
            written, settings = keys(properties), set()
        else:  # appsettings (or another config section): every literal key is a setting name
            written, settings = set(), {key.lower() for key, _ in pairs(properties)}
        found += [f"{name}: {site_properties[key]}" for key in sorted(written & set(site_properties))]
        found += [f"{name}: {app_settings[key]}" for key in sorted(settings & set(app_settings))]
    # The service's settings are built in main.bicep's variables and handed to the app as one object.
    variables = {key.lower() for key, _ in pairs(document.get("variables") or {})}
    found += [f"variables: {app_settings[key]}" for key in sorted(variables & set(app_settings))]
    return found


def test_the_list_names_its_source_and_holds_ftps_state() -> None:
    text = LIST.read_text()
    assert "learn.microsoft.com/azure/azure-functions/functions-app-settings#flex-consumption-plan-deprecations" in text
    names = {entry.name for entry in unsupported()}
    assert {"properties.ftpsState", "FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION"} <= names
    # What the platform refuses outright on a deployment (source [3]) and the scale limit's old setting ([4]).
    assert {"WEBSITE_RUN_FROM_PACKAGE", "SCM_DO_BUILD_DURING_DEPLOYMENT", "ENABLE_ORYX_BUILD"} <= names
    assert {"WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT", "WEBSITE_LOAD_CERTIFICATES"} <= names
    assert len(names) == len(unsupported()), "a name is listed twice"


def test_the_instance_maximum_is_at_least_40() -> None:
    """Flex Consumption's plan page gives 40 as the lowest maximum; its event-driven scaling page (August 2026) has
    since said 1 and regional previews have taken less: the floor is where both documents are satisfied, and the
    comment where it is set says so."""
    main = parse(MAIN)["parameters"]["maximumInstanceCount"]
    assert bounds(MAIN, "maximumInstanceCount") == {"min_value": 40, "max_value": 1000}
    assert main["default"] >= 40
    assert azd_parameters({})["maximumInstanceCount"] == "40"
    text = MAIN.read_text()
    floor = text.index("@minValue(40)")
    assert "regional previews" in text[text.rindex("\n\n", 0, floor) : floor], "say where the floor comes from"


def test_zone_redundancy_is_an_option_for_the_plan_and_the_host_storage() -> None:
    """Microsoft Learn, "Configure zone redundancy for Azure Functions" (Flex Consumption): the plan's zoneRedundant
    and a zone-redundant (ZRS) host storage account."""
    assert parse(MAIN)["parameters"]["zoneRedundant"]["default"] is False
    assert azd_parameters({})["zoneRedundant"] == "false"
    plan = body(resources(INFRA / "app" / "function.bicep")["plan"])["properties"]
    assert plan["zoneRedundant"] == "zoneRedundant"
    storage = body(resources(INFRA / "app" / "storage.bicep")["storage"])
    assert storage["sku"]["name"]["operator"]["operands"] == {
        "condition": "zoneRedundant",
        "true_value": "Standard_ZRS",
        "false_value": "Standard_LRS",
    }
    for module in ("api", "storage"):
        assert body(parse(MAIN)["modules"][module])["params"]["zoneRedundant"] == "zoneRedundant"
    # A zone-redundant plan takes no single always-ready instance (two at least, one per zone): refused up front.
    message = refusal_for(
        {
            "operator": {
                "type": "and",
                "operands": {
                    "operand_1": "zoneRedundant",
                    "operand_2": {
                        "operator": {
                            "type": "equals",
                            "operands": {"operand_1": "alwaysReadyInstanceCount", "operand_2": 1},
                        }
                    },
                },
            }
        }
    )
    assert "alwaysReadyInstanceCount" in message and "FLEX_ALWAYS_READY_INSTANCE_COUNT" in message


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_no_bicep_file_sets_what_flex_consumption_rejects(path: Path) -> None:
    assert rejected(parse(path)) == []


def test_the_check_finds_each_kind_of_place_a_rejected_name_can_be_set(tmp_path: Path) -> None:
    template = tmp_path / "site.bicep"
    template.write_text(
        """resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: 'app'
  location: 'westeurope'
  properties: {
    reserved: true
    siteConfig: {
      ftpsState: 'Disabled'
      minTlsVersion: '1.2'
      appSettings: [
        {
          name: 'FUNCTIONS_WORKER_RUNTIME'
          value: 'python'
        }
      ]
    }
  }
}

resource web 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'web'
  properties: {
    alwaysOn: false
  }
}

resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: union({}, {
    WEBSITE_TIME_ZONE: 'UTC'
  })
}

var more = {
  functions_extension_version: '~4'
}
"""
    )
    assert sorted(rejected(BicepParser().parse(file_path=template))) == [
        "settings: WEBSITE_TIME_ZONE",
        "site: FUNCTIONS_WORKER_RUNTIME",
        "site: properties.ftpsState",
        "site: properties.isReserved",
        "variables: FUNCTIONS_EXTENSION_VERSION",
        "web: properties.alwaysOn",
    ]


def test_the_always_ready_cost_names_every_function_that_scales_on_its_own() -> None:
    """With zone redundancy the platform keeps two always-ready instances per function group (Microsoft Learn,
    "Reliability in Azure Functions"): HTTP functions scale together, every other trigger alone, and each is billed.
    The docs' table counts one row per non-HTTP function that function_app.py registers."""
    source = (ROOT / "function_app.py").read_text()
    alone = sorted(
        chunk.split('"', 1)[0]
        for chunk in source.split('function_name(name="')[1:]
        if "_trigger(" in chunk.split("function_name(")[0] and "route(" not in chunk.split("function_name(")[0]
    )
    assert alone == ["refresh_on_publish", "warm_index_caches"]
    docs = (ROOT / "docs" / "deployment.md").read_text()
    zones = docs[docs.index("## Zone redundancy and tags") :]
    zones = zones[: zones.index("\n## ")]
    for name in alone:
        assert f"`function:{name}`" in zones, f"{name} scales on its own: count its always-ready instances"
    assert "| `http` |" in zones and "four always-ready instances" in docs
