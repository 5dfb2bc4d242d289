"""Every request to the documentation origin: one aiohttp session, timeouts, size bounds and a same-origin guard.

Each call's timeout is the client's own, cut to what is left of the request's deadline (`shared.deadline`), so
a chain of slow redirects or a raw-then-HTML fetch can never outlast the request."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import aiohttp

from shared.deadline import remaining
from shared.errors import OriginError
from shared.paths import escapes

log = logging.getLogger(__name__)

MAX_PAGE_BYTES = 8 * 1024 * 1024
MAX_INDEX_BYTES = 64 * 1024 * 1024
_MAX_REDIRECTS = 3
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True, slots=True)
class Response:
    """A bounded, fully read origin response."""

    url: str
    status: int
    body: bytes
    content_type: str
    etag: str | None = None
    last_modified: str | None = None
    redirect: str | None = None

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


async def _read_bounded(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(256 * 1024):
        size += len(chunk)
        if size > max_bytes:
            raise OriginError("response too large", status=resp.status, too_large=True)
        chunks.append(chunk)
    return b"".join(chunks)


class OriginClient:
    """GETs (and HEADs) under the configured origin only; redirects are followed only while they stay under `scope`."""

    def __init__(
        self,
        origin: str,
        *,
        timeout: float = 10.0,
        connect_timeout: float = 3.0,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self._origin = origin.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        self._session = session
        self._owns_session = session is None

    @property
    def origin(self) -> str:
        return self._origin

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True)
            self._owns_session = True
        return self._session

    def in_scope(self, url: str, scope: str) -> bool:
        """True when `url` is `scope` itself or below it, on the same scheme, host and port, with no dot segment in
        any spelling (`shared.paths`: `..;`, fullwidth and leader dots, percent-encoded) and no `%2e` at all."""
        scope = scope.rstrip("/") + "/"
        parts, allowed = urlsplit(url), urlsplit(scope)
        if (parts.scheme, parts.netloc.lower()) != (allowed.scheme, allowed.netloc.lower()):
            return False
        if escapes(parts.path) or "%2e" in parts.path.lower():
            return False
        return (parts.path + "/").startswith(allowed.path)

    async def get(
        self,
        url: str,
        *,
        scope: str | None = None,
        max_bytes: int = MAX_PAGE_BYTES,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """GET `url`, which must lie under `scope` (default: the origin). Raises OriginError on refusal or failure."""
        return await self._request("GET", url, scope=scope, max_bytes=max_bytes, headers=headers)

    async def head(self, url: str, *, scope: str | None = None, headers: dict[str, str] | None = None) -> Response:
        """HEAD `url` under the same rules as `get`: the status and validators of a page without its body."""
        return await self._request("HEAD", url, scope=scope, max_bytes=0, headers=headers)

    async def _request(
        self, method: str, url: str, *, scope: str | None, max_bytes: int, headers: dict[str, str] | None
    ) -> Response:
        scope = scope or self._origin
        for _ in range(_MAX_REDIRECTS + 1):
            if not self.in_scope(url, scope):
                raise OriginError("refused a request outside the configured origin")
            response = await self._once(method, url, max_bytes, headers or {})
            if response.status not in _REDIRECTS:
                return response
            if not response.redirect:
                raise OriginError("redirect without a Location header", status=response.status)
            url = urljoin(url, response.redirect)
        raise OriginError("too many redirects")

    def _timeout_now(self) -> aiohttp.ClientTimeout:
        """This call's timeout: the client's own, cut to what is left of the request's deadline."""
        left = remaining()
        if left is None or (self._timeout.total is not None and left >= self._timeout.total):
            return self._timeout
        if left <= 0:
            raise OriginError("the request's deadline has passed", unreachable=True)
        return aiohttp.ClientTimeout(total=left, sock_connect=min(left, self._timeout.sock_connect or left))

    async def _once(self, method: str, url: str, max_bytes: int, headers: dict[str, str]) -> Response:
        timeout = self._timeout_now()
        session = self._client()
        try:
            async with session.request(method, url, allow_redirects=False, headers=headers, timeout=timeout) as resp:
                if resp.status in _REDIRECTS:
                    return Response(url, resp.status, b"", "", redirect=resp.headers.get("Location"))
                declared = resp.content_length
                if method == "HEAD":
                    body = b""  # a HEAD answer's Content-Length describes the GET's body, which never comes
                elif declared is not None and declared > max_bytes:
                    raise OriginError("response too large", status=resp.status, too_large=True)
                else:
                    body = await _read_bounded(resp, max_bytes)
                return Response(
                    url=url,
                    status=resp.status,
                    body=body,
                    content_type=resp.headers.get("Content-Type", ""),
                    etag=resp.headers.get("ETag"),
                    last_modified=resp.headers.get("Last-Modified"),
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise OriginError(f"origin request failed: {type(exc).__name__}", unreachable=True) from exc

    async def aclose(self) -> None:
        if self._session is not None and self._owns_session and not self._session.closed:
            await self._session.close()

    async def __aenter__(self) -> OriginClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
