"""The one way the service authenticates to Azure: DefaultAzureCredential, pinned to the app's managed identity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.settings import DocumentationSettings

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential
    from azure.core.credentials_async import AsyncTokenCredential


def credential(settings: DocumentationSettings) -> AsyncTokenCredential:
    """An async token credential for storage, search and telemetry; the caller closes it.

    In Azure it is the user-assigned identity named by `Identity__ClientId` (a system-assigned one when unset);
    on a developer machine the usual chain (environment, Azure CLI, ...). It never probes anything until a token is
    asked for.
    """
    from azure.identity.aio import DefaultAzureCredential

    client_id = settings.identity.client_id
    if client_id:
        return DefaultAzureCredential(managed_identity_client_id=client_id)
    return DefaultAzureCredential()


def sync_credential(settings: DocumentationSettings) -> TokenCredential:
    """The same identity as a synchronous credential, for clients that send from their own threads through a
    synchronous pipeline (the Azure Monitor exporters)."""
    from azure.identity import DefaultAzureCredential

    client_id = settings.identity.client_id
    if client_id:
        return DefaultAzureCredential(managed_identity_client_id=client_id)
    return DefaultAzureCredential()
