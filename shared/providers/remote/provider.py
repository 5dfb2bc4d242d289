"""The `smithy_remote` provider: another deployment of this service, asked through its MCP tools; fetches too.

Each search or get is one `search_docs` or `get_doc` call on the other deployment's `/api/mcp` (`client`), with a
bearer token (`Remote__Token`, or an Entra ID token for `Remote__Scope` from the app's managed identity), the
Functions key when configured, and the forwarding marker (`marker`). Options are read once, at construction.

- `sites` are this deployment's configured sites: the other deployment's own list is not known without a call,
  so a search for a site it does not serve comes back `bad_request` and falls through like any failure.
- Any failure raises `RemoteError` and the chain falls through; a miss the other deployment reports
  (`not_found`, `ambiguous`, ...) is a `ResolutionError` with that reason, ranked by the chain against local misses.
- A failed connection (unreachable, timeout, refused or unobtainable credentials) starts a cooldown of
  `CooldownSeconds`, during which every call is declined without connecting.
- A request that itself came from another deployment's remote provider is declined, so A→B→A cannot loop.
- Every call is bounded by `TimeoutSeconds` or the request's remaining deadline, whichever is sooner, and is never
  retried. Nothing logged names the query, the location, a token or a key: lengths only.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from shared.deadline import capped
from shared.errors import ConfigurationError, ProviderDeclinedError, ResolutionError
from shared.forwarding import FORWARDED_HEADER, FORWARDED_VALUE, is_forwarded
from shared.identity import credential as identity_credential
from shared.models import Document, Found, Reason, Resolution, SearchKind, VersionSet
from shared.providers.base import Capabilities, Instant, LastCalls, LastError, ProviderHealth, Report, Status, absent
from shared.providers.remote import mapping
from shared.providers.remote.client import call_tool, in_session
from shared.providers.remote.errors import COOLING, CREDENTIAL, TIMEOUT, TOOL, RemoteError, translate
from shared.reading import MAX_PART_CHARS
from shared.requests import ReadRequest, SearchRequest
from shared.settings import PREFIX, DocumentationSettings, RemoteSettings
from shared.telemetry import query_shape, redaction

if TYPE_CHECKING:
    from azure.core.credentials_async import AsyncTokenCredential
    from mcp import ClientSession
    from mcp.types import CallToolResult

log = logging.getLogger(__name__)

T = TypeVar("T")


def credential(settings: DocumentationSettings) -> AsyncTokenCredential | None:
    """The managed identity's credential when tokens come from Entra ID (`Scope` without `Token`), else None."""
    options = settings.remote
    if options is None or options.token is not None or not options.scope:
        return None
    return identity_credential(settings)


class LastAnswer(Report):
    """Which provider answered on the other deployment, the last time one did."""

    remote_provider: str
    at: Instant


class RemoteHealth(ProviderHealth):
    """Configuration (never a token or key), the cooldown and the latest outcome."""

    endpoint: str
    authentication: str
    functions_key: bool
    timeout_seconds: float
    cooldown_seconds: float
    cooling_down_until: Instant | None
    last_success_at: Instant | None
    last_error: LastError | None = absent()
    last_answer: LastAnswer | None = absent()


class RemoteProvider:
    """Search and get through another deployment's MCP tools; it owns (and closes) the credential it is given."""

    name = mapping.PROVIDER
    capabilities = Capabilities(fetch=True, versions=True, code=True)
    """A `version`, or a code search (`kind`, `language`), is passed on when the other deployment's tools declare
    those arguments; otherwise this provider declines (search) or misses (get), and the chain asks the next."""

    def __init__(
        self,
        options: RemoteSettings,
        *,
        sites: Sequence[str],
        credential: AsyncTokenCredential | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not options.endpoint:
            raise ConfigurationError(f"{PREFIX}Remote__Endpoint", "must be set to register the remote provider")
        self.order = options.order
        self.sites = tuple(sites)
        self._endpoint = options.endpoint
        self._options = options
        self._credential = credential if options.token is None and options.scope else None
        self._clock = clock
        self._cooling_until: float | None = None
        self._cooling_until_at: datetime | None = None
        self._calls = LastCalls()
        self._last_answer: LastAnswer | None = None
        redaction.install()  # the MCP client logs the arguments of every call it makes

    async def search(self, request: SearchRequest) -> Found:
        query, limit, site, version = request.query, request.limit, request.site, request.version
        kind, language = request.kind, request.language
        shape = query_shape(query)
        log.debug("smithy_remote search (query length %d, %d terms, limit %d)", shape["length"], shape["terms"], limit)
        arguments: dict[str, Any] = {"query": query, "limit": limit}
        if site is not None:
            arguments["site"] = site
        optional: dict[str, Any] = {"version": version} if version is not None else {}
        if kind is SearchKind.CODE:
            optional["kind"] = kind.value
            if language is not None:
                optional["language"] = language
        if optional:
            arguments.update(optional)
            answered = await self._session(
                lambda session: _search_declaring(session, arguments, set(optional)), "search_docs"
            )
            if answered is None:
                self._succeeded(None)
                raise ProviderDeclinedError(f"the remote deployment's search_docs takes no {', '.join(optional)}")
            result = answered
        else:
            result = await self._call("search_docs", arguments)
        if result.is_error:
            raise self._failed(RemoteError(TOOL, f"search_docs answered {_code(result) or 'an error'}"))
        try:
            found, backend = mapping.search_results(result.structured_content, limit)
        except Exception as exc:
            raise self._failed(translate(exc)) from exc
        self._succeeded(backend)
        log.debug("smithy_remote answered %d results (remote provider %s)", len(found.results), backend)
        return found

    async def versions(self, site: str) -> VersionSet | None:
        """Declined: a site's versions are listed by the provider that reads its `versions.json`."""
        raise ProviderDeclinedError("the remote deployment does not list versions here")

    async def get(self, request: ReadRequest) -> Document:
        """The whole page as the other deployment's REST `get` answers it, read in parts (`nextOffset`, at most
        `MAX_PART_CHARS` each) within one session, with its outline when asked. A part never becomes a document:
        a deployment that cannot read in parts (no `offset` in its `get_doc` schema) and cut the page, or cannot
        give an outline that was asked for, is a miss for this page and the chain asks the next provider."""
        location, outline, version = request.location, request.outline, request.version
        log.debug("smithy_remote get (location length %d)", len(location))
        reading = await self._session(lambda session: _read_page(session, location, outline=outline, version=version))
        if not reading.parts:  # an older deployment, asked for what it cannot give
            self._succeeded(None)
            raise ResolutionError(_partial(location, reading.cannot))
        first = reading.parts[0]
        if first.is_error:
            text = _text(first)
            miss = mapping.miss(text, location, first.structured_content)
            if miss is None:
                code = mapping.error_code(first.structured_content, text) or "an error"
                raise self._failed(RemoteError(TOOL, f"get_doc answered {code}"))
            self._succeeded(None)
            raise ResolutionError(miss)
        later_error = next((part for part in [*reading.parts[1:], reading.outline] if part and part.is_error), None)
        if later_error is not None:
            raise self._failed(RemoteError(TOOL, f"get_doc answered {_code(later_error) or 'an error'} mid-page"))
        try:
            if reading.legacy:
                document, backend = mapping.legacy_document(first.structured_content)
            else:
                structured = [part.structured_content for part in reading.parts]
                described = reading.outline.structured_content if reading.outline is not None else None
                document, backend = mapping.whole_document(structured, described)
        except ValueError as exc:
            if reading.legacy:
                self._succeeded(None)
                raise ResolutionError(_partial(location, "answered only part of the page")) from None
            raise self._failed(translate(exc)) from exc
        except Exception as exc:
            raise self._failed(translate(exc)) from exc
        self._succeeded(backend)
        log.debug("smithy_remote served a page in %d part(s) (remote provider %s)", len(reading.parts), backend)
        return document

    async def _session(self, work: Callable[[ClientSession], Awaitable[T]], tool: str = "get_doc") -> T:
        """`work` in one session with the other deployment, under the same rules as a single call."""
        return await self._bounded(
            tool, lambda headers, seconds: in_session(self._endpoint, work, headers=headers, seconds=seconds)
        )

    async def _call(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        return await self._bounded(
            tool, lambda headers, seconds: call_tool(self._endpoint, tool, arguments, headers=headers, seconds=seconds)
        )

    async def _bounded(self, tool: str, call: Callable[[dict[str, str], float], Awaitable[T]]) -> T:
        """`call` with the headers and the seconds it may take: declined when forwarded or cooling down; a failure
        is logged (never the query, location or credentials) and may start the cooldown."""
        if is_forwarded():
            raise ProviderDeclinedError("this request came from another deployment: it is never forwarded again")
        if self._cooling_until is not None and self._clock() < self._cooling_until:
            raise ProviderDeclinedError("the remote deployment is cooling down after a failed connection")
        started = self._clock()
        seconds = capped(self._options.timeout_seconds)
        if seconds <= 0:  # the request's own deadline is spent: not the other deployment's fault, no cooldown
            raise RemoteError(TIMEOUT, "no time left for a remote call")
        own_bound = seconds >= self._options.timeout_seconds
        try:
            headers = await self._headers(seconds)
            seconds -= self._clock() - started
            return await call(headers, seconds)
        except RemoteError as error:
            log.warning(
                "smithy_remote %s failed: %s (%s; %s) after %.0f ms",
                tool,
                error.kind,
                error.status or "no status",
                error,  # our own wording and an exception's type name, never the endpoint, query or location
                (self._clock() - started) * 1000,
            )
            # Out of the request's time rather than `TimeoutSeconds`: the remote was not necessarily slow.
            raise self._failed(error, cooling=own_bound or error.kind != TIMEOUT) from None

    async def _headers(self, seconds: float) -> dict[str, str]:
        headers = {FORWARDED_HEADER: FORWARDED_VALUE}
        if self._options.functions_key is not None:
            headers["x-functions-key"] = self._options.functions_key.get_secret_value()
        if self._options.token is not None:
            headers["Authorization"] = f"Bearer {self._options.token.get_secret_value()}"
        elif self._credential is not None and self._options.scope:
            try:
                async with asyncio.timeout(max(seconds, 0.0)):
                    token = await self._credential.get_token(self._options.scope)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise RemoteError(CREDENTIAL, f"no token for the remote scope ({type(exc).__name__})") from exc
            headers["Authorization"] = f"Bearer {token.token}"
        return headers

    def _failed(self, error: RemoteError, *, cooling: bool = True) -> RemoteError:
        now = self._calls.failed(error)
        if cooling and error.kind in COOLING and self._options.cooldown_seconds > 0:
            self._cooling_until = self._clock() + self._options.cooldown_seconds
            self._cooling_until_at = now + timedelta(seconds=self._options.cooldown_seconds)
            log.info("smithy_remote cooling down for %.0f s: calls fall through", self._options.cooldown_seconds)
        return error

    def _succeeded(self, backend: str | None) -> None:
        now = self._calls.succeeded()
        self._cooling_until = self._cooling_until_at = None
        if backend is not None:
            self._last_answer = LastAnswer(remote_provider=backend, at=now)

    def health(self) -> RemoteHealth:
        """Configuration (never a token or key), the cooldown and the latest outcome: `degraded` while cooling
        down or while the latest call failed."""
        cooling = self._cooling_until is not None and self._clock() < self._cooling_until
        return RemoteHealth(
            status=Status.DEGRADED if cooling or self._calls.failing else Status.OK,
            endpoint=urlsplit(self._endpoint).netloc,
            authentication="token" if self._options.token else "entra-id" if self._credential else "none",
            functions_key=self._options.functions_key is not None,
            timeout_seconds=self._options.timeout_seconds,
            cooldown_seconds=self._options.cooldown_seconds,
            cooling_down_until=self._cooling_until_at if cooling else None,
            last_success_at=self._calls.succeeded_at,
            last_error=self._calls.error,
            last_answer=self._last_answer,
        )

    async def aclose(self) -> None:
        close = getattr(self._credential, "close", None)
        if close is not None:
            result = close()
            if inspect.isawaitable(result):
                await result


MAX_PARTS = 100
"""The most parts one page is read in (100 x `MAX_PART_CHARS` is more than any page the origin may serve)."""


@dataclass(frozen=True, slots=True)
class _Reading:
    """What one session learnt of a page: its parts in order (the last may be a tool error), and its outline."""

    parts: list[CallToolResult]
    """Empty when nothing was asked: the deployment cannot give what was wanted."""
    outline: CallToolResult | None = None
    legacy: bool = False
    """The other deployment's `get_doc` takes no `offset`: it answers pages whole, or cut. Compatibility until
    2027-06-30 (`mapping.legacy_document`)."""
    cannot: str = "cannot give a page's outline (it reads pages only whole)"
    """Why nothing was asked, when `parts` is empty."""


async def _accepted(session: ClientSession, name: str) -> set[str]:
    """The arguments the other deployment's tool declares (none when it has no such tool)."""
    listed = await session.list_tools()  # also what lets the client check answers against the output schema
    tool = next((tool for tool in listed.tools if tool.name == name), None)
    return set((tool.input_schema if tool is not None else {}).get("properties", {}))


async def _search_declaring(
    session: ClientSession, arguments: dict[str, Any], needed: set[str]
) -> CallToolResult | None:
    """search_docs with arguments not every deployment takes (`version`, `kind`, `language`), when the other
    deployment declares all of `needed`; None when it does not."""
    if not needed <= await _accepted(session, "search_docs"):
        return None
    return await session.call_tool("search_docs", arguments)


async def _read_page(session: ClientSession, location: str, *, outline: bool, version: str | None = None) -> _Reading:
    """The page's parts, following `nextOffset`, then its outline when asked; an error ends the reading."""
    accepted = await _accepted(session, "get_doc")
    asked = {"version": version} if version is not None else {}
    if version is not None and "version" not in accepted:
        return _Reading([], cannot="takes no version")
    if "offset" not in accepted:
        if outline:
            return _Reading([], legacy=True)
        return _Reading([await session.call_tool("get_doc", {"location": location})], legacy=True)
    parts: list[CallToolResult] = []
    offset = 0
    while len(parts) < MAX_PARTS:
        arguments = {"location": location, "offset": offset, "maxChars": MAX_PART_CHARS, **asked}
        part = await session.call_tool("get_doc", arguments)
        parts.append(part)
        following = None if part.is_error else (part.structured_content or {}).get("nextOffset")
        if not isinstance(following, int) or following <= offset:
            break
        offset = following
    described = None
    if outline and not parts[-1].is_error:
        described = await session.call_tool("get_doc", {"location": location, "view": "outline", **asked})
    return _Reading(parts, described)


def _partial(location: str, what: str) -> Resolution:
    return Resolution(
        requested_location=location,
        reason=Reason.FETCH_FAILED,
        detail=f"the remote deployment {what}: this deployment's other providers are asked instead",
    )


def _text(result: CallToolResult) -> str:
    from mcp.types import TextContent

    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _code(result: CallToolResult) -> str:
    return mapping.error_code(result.structured_content, _text(result))
