"""Who may read which site: the sites' audiences (`SiteAudiences`) and the audiences a caller holds when nothing
names theirs (`Audiences__Default`). Audience names are case-insensitive (app settings' keys are), kept lower case.

A site named in `SiteAudiences` is read only by callers holding one of its audiences; every other site by every
admitted caller. Where a caller's audiences come from is the gate's (`shared.api.gate.inbound`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.settings.values import json_object, names

AUDIENCE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
"""An audience's name, lower case: what an app setting's key, an Entra app role's suffix and a JSON key all carry."""


def audience_names(value: Any, where: str) -> tuple[str, ...]:
    """`value` (comma-separated text or a list) as audience names, lower case; ValueError saying `where`."""
    found = tuple(name.lower() for name in names(value if not isinstance(value, Mapping) else list(value.values())))
    for name in found:
        if not AUDIENCE.fullmatch(name):
            raise ValueError(f"{where}: {name!r} is not an audience name (letters, digits, '.', '_', '-'; 1-64)")
    return found


class AudiencesSettings(BaseModel):
    """`Forge__Documentation__Audiences__*`: the audiences of callers the app cannot tell apart."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    default: tuple[str, ...] = Field((), alias="Default")
    """Audiences, comma-separated, held by callers no credential of the app's names: Functions-key callers (the host
    checks the key; the app cannot tell keys apart) and, without any gate, everyone. Empty: none, so such callers
    read only the sites SiteAudiences does not name."""

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        return audience_names(value, "must be audience names")


def parse_site_audiences(value: Any) -> Any:
    """`SiteAudiences` as given: a JSON object (or a mapping) from site to its audiences."""
    value = json_object(value, "a site to its audiences")
    if not isinstance(value, Mapping):
        raise ValueError("must be a JSON object mapping a site to its audiences")
    return dict(value)


def checked_site_audiences(
    given: Mapping[str, Any], sites: Mapping[str, str], default_site: str
) -> dict[str, tuple[str, ...]]:
    """Each restricted site (its configured spelling) with its audiences; ValueError naming `SiteAudiences` for a
    site that is not configured, an empty list, the default site (its pages' locations carry no site name, so a
    bare path could not be told from another site's) or a name that is not an audience's. `sites`: lower -> name."""
    checked: dict[str, tuple[str, ...]] = {}
    for site, audiences in given.items():
        canonical = sites.get(str(site).strip().lower())
        if canonical is None:
            raise ValueError(f"SiteAudiences: {site!r} is not a configured site")
        if canonical.lower() == default_site.lower():
            raise ValueError(f"SiteAudiences: {canonical!r} is the default site, which is open to every caller")
        if isinstance(audiences, str) or not isinstance(audiences, list | tuple):
            raise ValueError(f"SiteAudiences: {canonical!r} must map to a list of audiences")
        named = audience_names(audiences, "SiteAudiences")
        if not named:
            raise ValueError(f"SiteAudiences: {canonical!r} has an empty audience list (name one, or leave it out)")
        checked[canonical] = named
    return checked
