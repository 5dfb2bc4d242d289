"""The remote provider (`smithy_remote`): another deployment of this service, searched and fetched over MCP."""

from shared.forwarding import FORWARDED_HEADER, forwarded_request, is_forwarded
from shared.providers.remote.errors import RemoteError
from shared.providers.remote.provider import RemoteProvider, credential

__all__ = ["FORWARDED_HEADER", "RemoteError", "RemoteProvider", "credential", "forwarded_request", "is_forwarded"]
