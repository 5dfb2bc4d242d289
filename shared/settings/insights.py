"""`Forge__Documentation__Insights__*`: usage insights for the people who own the documentation (`shared.insights`).

Off by default: a deployment keeps nothing about its callers' questions until its owners turn it on.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from shared.settings.secrets import Secret, secret_list
from shared.settings.values import container_name, names


class InsightsSettings(BaseModel):
    """`Forge__Documentation__Insights__*`: what agents asked and read, kept for the documentation's owners."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    enabled: bool = Field(False, alias="Enabled")
    """Keep usage events (scrubbed questions, pages read after a search, agents' feedback) for the documentation's
    owners, in the index cache's storage account, read through GET /api/admin/insights. Off: nothing is kept and
    submit_feedback answers that feedback is off.

    What is kept, for how long and who reads it: docs/insights.md.
    """
    min_callers: int = Field(2, alias="MinCallers", ge=1, le=1000)
    """A question appears in a report (and in an evaluation set made from it) only when at least this many distinct
    callers asked it (1 shows every question)."""
    retention_days: int = Field(30, alias="RetentionDays", ge=1, le=365)
    """Days usage events are kept: the warm-up deletes older ones. Callers' pseudonyms change once per this many days,
    so one caller cannot be followed past it."""
    tokens: Annotated[tuple[SecretStr, ...], Secret(6)] = Field((), alias="Tokens")
    """Bearer tokens that may read the insights report (GET /api/admin/insights), comma-separated (a secret: a Key Vault
    reference in Azure). Apart from Inbound__Tokens and Refresh__Tokens: the docs team holds one, never the docs
    pipeline. Unset (and no Insights__AppRoles): the report answers 401 to every caller.

    The indexed form (`Tokens__0`, ...) is read too.
    """
    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """With Entra sign-in: app roles, comma-separated, whose tokens may also read the insights report, such as
    Docs.Insights.Read for the documentation team's group. Such a role grants no reading of pages."""
    container: str = Field("docs-insights", alias="Container")
    """Blob container of the usage events, in the index cache's storage account (created if missing); apart from the
    cache's container so its access can be granted apart."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return secret_list(value)

    @field_validator("app_roles", mode="before")
    @classmethod
    def _roles(cls, value: Any) -> Any:
        return names(value)

    @field_validator("container")
    @classmethod
    def _container_name(cls, value: str) -> str:
        return container_name(value)
