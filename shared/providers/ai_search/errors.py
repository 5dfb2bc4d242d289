"""The AI Search provider's one error, and the one place the Azure SDK's exceptions are translated into it.

ServiceCallError
└── AiSearchError      kind: unreachable | timeout | unauthorized | status | malformed

The chain logs the error's type and falls through to the next provider; `details` (what a 503 answer lists)
names the kind and the HTTP status, never the query or a key. A timeout reports itself as the chain's own
timeouts do, so a request where every provider ran out of time is a `timeout`, not "unavailable".
"""

from __future__ import annotations

import json

from shared.errors import ServiceCallError

UNREACHABLE = "unreachable"
TIMEOUT = ServiceCallError.TIMEOUT
UNAUTHORIZED = "unauthorized"
STATUS = "status"
MALFORMED = "malformed"


class AiSearchError(ServiceCallError):
    """A search against Azure AI Search failed; `kind` says how, `status` is the HTTP status when there was one."""


def translate(exc: BaseException) -> AiSearchError:
    """The AiSearchError for an exception raised by the SDK or while reading its answer (callers chain `from`)."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        DecodeError,
        HttpResponseError,
        ServiceRequestError,
        ServiceRequestTimeoutError,
        ServiceResponseError,
        ServiceResponseTimeoutError,
    )

    if isinstance(exc, TimeoutError | ServiceRequestTimeoutError | ServiceResponseTimeoutError):
        return AiSearchError(TIMEOUT, "no answer from AI Search in time")
    if isinstance(exc, DecodeError):
        return AiSearchError(MALFORMED, "AI Search answered a body that is not a search result", status=_status(exc))
    status = _status(exc)
    if isinstance(exc, ClientAuthenticationError) or status in (401, 403):
        return AiSearchError(UNAUTHORIZED, "AI Search refused the credentials", status=status)
    if isinstance(exc, HttpResponseError):
        return AiSearchError(STATUS, f"AI Search answered HTTP {status}", status=status)
    if isinstance(exc, ServiceRequestError | ServiceResponseError):
        return AiSearchError(UNREACHABLE, f"AI Search could not be reached ({type(exc).__name__})")
    if isinstance(exc, ValueError | TypeError | KeyError | AttributeError | json.JSONDecodeError):
        return AiSearchError(MALFORMED, f"AI Search answered a body that is not a search result ({type(exc).__name__})")
    return AiSearchError(UNREACHABLE, f"AI Search failed ({type(exc).__name__})")


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None
