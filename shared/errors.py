"""The one exception tree; `shared.api.errors` maps it to HTTP statuses and MCP tool errors in one place.

DocsError                       library errors (aiohttp, Azure SDK, onnxruntime) are translated into these where caught
├── ConfigurationError          invalid app settings, raised at start-up, names the key
├── InvalidRequestError         caller input the service refuses (400); only the service's own checks stop the chain
│   └── UnknownSectionError         a `section` the page does not have; lists its sections (`shared.reading`)
├── VersionsError               a versioned site's versions.json refused (that site fails with the reason)
├── ResolutionError             a location that did not resolve or fetch; carries the Resolution
├── EmbeddingStopped            a long embedding run was asked to stop (its index is no longer served)
├── ServiceUnavailableError     nothing could be searched: every provider that tried failed (503)
├── ServiceNotStarted           a request before the lifespan composed the service (503, `shared.api.errors`)
├── RequestTimeoutError         the request's deadline passed, or every provider ran out of its share (504)
├── AccessRefused               a caller turned away before any work; `challenge` is its WWW-Authenticate value
│   ├── Unauthorized, Forbidden     no accepted credential (401); a valid one without the scope or role (403)
│   ├── Throttled                   called too often: `seconds` until it may again (429, Retry-After)
│   └── CredentialsUnavailable      no credential can be checked now (503): only unresolved Key Vault references
│       └── KeysUnavailable             the tenant's signing keys could not be fetched (`shared.entra` raises it)
└── ProviderError               a provider could not do its work: the chain logs it and falls through
    ├── ProviderDeclinedError       the provider cannot answer this request (unconfigured, out of its scope)
    ├── ServiceCallError            a call to a service a provider depends on failed, with a `kind` (AI Search, remote)
    ├── SiteUnavailableError, NoSiteLoadedError   a site's index, or every site a search needed, could not be loaded
    ├── OriginError, StoreError     the documentation origin, or the cache store, failed or refused the request
    ├── IndexFormatError, Unconvertible   a search index malformed or empty; a page too big, dense or deep to convert
    └── EmbeddingUnavailableError   the embedding model or its runtime cannot be loaded; ranking stays lexical
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.models import Resolution


class DocsError(Exception):
    """Base of every error the core raises on purpose."""


class ConfigurationError(DocsError):
    """App settings are invalid; the message names the offending key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class InvalidRequestError(DocsError):
    """Caller input that the service refuses with a clear reason; `argument` is the one it names (its REST name,
    which the message starts with), so a protocol that calls it otherwise can say it in its own words."""

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument

    def named(self, names: Mapping[str, str]) -> InvalidRequestError:
        """The same refusal with the argument called by its name in `names` (MCP's `query` for REST's `q`)."""
        name = names.get(self.argument or "")
        text = str(self)
        if name is None or self.argument is None or not text.startswith(self.argument):
            return self
        return InvalidRequestError(name + text[len(self.argument) :], argument=name)


class VersionsError(DocsError, ValueError):
    """A versioned site's `versions.json` the service refuses (not a list, a name twice, a name that is not a folder):
    that site fails with the message, the others are not touched."""


class ResolutionError(DocsError):
    """A location did not resolve to a fetchable page; the resolution says why."""

    def __init__(self, resolution: Resolution) -> None:
        super().__init__(resolution.detail)
        self.resolution = resolution


class EmbeddingStopped(DocsError):  # a request to stop, not a failure
    """An embedding run was asked to stop between batches (its index is no longer served, or the process ends)."""


class ServiceUnavailableError(DocsError):
    """Every provider that tried to answer failed, so nothing could be searched: not the same as "no match"."""

    def __init__(self, failures: dict[str, dict[str, str]]) -> None:
        super().__init__("nothing could be searched: " + ", ".join(sorted(failures)) + " failed")
        self.failures = failures


class RequestTimeoutError(DocsError):
    """The request's deadline passed before the service could answer."""

    def __init__(self, seconds: float | None = None) -> None:
        super().__init__(f"no answer within {seconds:g} s" if seconds is not None else "no answer within the deadline")
        self.seconds = seconds


class AccessRefused(DocsError):
    """A caller turned away before any work is done; `challenge` is the `WWW-Authenticate` value to answer with."""

    def __init__(self, message: str, *, challenge: str | None = None) -> None:
        super().__init__(message)
        self.challenge = challenge


class Unauthorized(AccessRefused):
    """No accepted credential: none, a wrong one, or a token that is not valid for this app."""


class Forbidden(AccessRefused):
    """A valid credential without a required scope or an accepted role."""


class Throttled(AccessRefused):
    """The caller called too often: `seconds` (whole, at least 1) until it may again."""

    def __init__(self, seconds: float, message: str) -> None:
        super().__init__(message)
        self.seconds = max(1, math.ceil(seconds))


class CredentialsUnavailable(AccessRefused):
    """No credential can be checked right now (only unresolved Key Vault references configured, or the tenant's
    keys out of reach): the request is refused, never let through."""


class KeysUnavailable(CredentialsUnavailable):
    """The tenant's signing keys could not be fetched: no token can be checked right now."""


class ProviderError(DocsError):
    """A provider failed; the chain logs it and tries the next one."""

    @property
    def details(self) -> dict[str, str]:
        """What operators may see about the failure (never a query or a location)."""
        return {"error": type(self).__name__}

    @property
    def timed_out(self) -> bool:
        """The provider ran out of time (a request where every provider did is a `timeout`, not "unavailable")."""
        return False


class ServiceCallError(ProviderError):
    """A call to a service a provider stands on failed; `kind` says how, `status` is the HTTP status when there
    was one. A timeout reports itself as the chain's own timeouts do (`{"error": "timeout"}`), so a request where
    every provider ran out of time is a `timeout`, not "unavailable"."""

    TIMEOUT = "timeout"

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status

    @property
    def timed_out(self) -> bool:
        return self.kind == self.TIMEOUT

    @property
    def details(self) -> dict[str, str]:
        if self.timed_out:
            return {"error": "timeout"}
        details = {"error": type(self).__name__, "kind": self.kind}
        if self.status is not None:
            details["status"] = str(self.status)
        return details


class ProviderDeclinedError(ProviderError):
    """The provider cannot answer this request at all (unconfigured, cooling down, or out of its scope)."""


class SiteUnavailableError(ProviderError):
    """A site's search index could not be loaded (unpublished, unreachable, malformed or empty)."""

    def __init__(self, site: str, reason: str, *, unpublished: bool = False) -> None:
        super().__init__(f"site {site!r} is unavailable: {reason}")
        self.site = site
        self.reason = reason
        self.unpublished = unpublished
        """True when the origin says the index does not exist (404): the site is not published yet."""


class NoSiteLoadedError(ProviderError):
    """None of the sites a search needed could be loaded; `sites` says why for each."""

    def __init__(self, sites: dict[str, str]) -> None:
        super().__init__("no site could be loaded: " + ", ".join(sorted(sites)))
        self.sites = sites

    @property
    def details(self) -> dict[str, str]:
        return dict(self.sites)


class OriginError(ProviderError):
    """A request to the documentation origin failed, was too large, or would have left the origin."""

    def __init__(
        self, message: str, *, status: int | None = None, unreachable: bool = False, too_large: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.unreachable = unreachable
        """True when the origin could not be reached at all (connection refused, timeout)."""
        self.too_large = too_large
        """True when the response was larger than the client reads (decompressed: a gzip bomb is too large too)."""


class IndexFormatError(ProviderError, ValueError):
    """The document is not a usable MkDocs search index (malformed or without entries)."""


class Unconvertible(ProviderError, ValueError):
    """A page that will not be converted to Markdown (too large, too dense, nested too deep); the message says which.
    Raised where the page is checked (`markup.scan`, `convert.convert`), answered as `fetch_failed`."""


class StoreError(ProviderError):
    """The cache store could not be reached or refused the request; callers carry on from the origin."""


class EmbeddingUnavailableError(ProviderError):
    """The embedding model or its runtime cannot be loaded; searches stay lexical."""
