"""The warm-up's check of an index version's pages against the origin: which ones it lists but does not serve.

Each page not yet decided for the version, and each page the record hides (it may have come back: a page uploaded
after its index, a cached 404), gets one HEAD of its HTML page (a GET once the origin refuses HEAD with
405 or 501), conditional on the validators it was last served with, so an unchanged page costs a `304`. A 404 or
410 is confirmed against the raw Markdown, as `get` would fetch it: only a page with neither is missing. Anything
else (a 5xx, 403, 429, a timeout, a redirect off the site) says nothing about the page, which is checked again by
the next warm-up.

Bounded twice: at most `Warmup__PageCheckConcurrency` requests (default 8) are in flight for a whole warm-up (one
lane shared by every site), and a site's check stops after `Warmup__PageCheckSeconds` (default 120: the request
deadline of `shared.deadline`, which the origin client honours); what it did not reach is left undecided and
checked next time. An origin that rate-limits gets a lower concurrency; a large site on a slow origin, more time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from shared.deadline import budget
from shared.errors import OriginError
from shared.fetch import OriginClient, Response
from shared.providers.mkdocs.fetching.pages import raw_markdown_url
from shared.providers.mkdocs.fetching.unserved import MissingRecord, Validators, Verdict, verdict
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.settings import DocumentationSettings, SiteMap

_NO_HEAD = frozenset({405, 501})


@dataclass(frozen=True, slots=True)
class Probe:
    """What the origin said about one page, and the validators to send next time when it is served."""

    verdict: Verdict
    validators: Validators | None = None


def page_check(client: OriginClient, settings: DocumentationSettings, *, concurrency: int | None = None) -> PageCheck:
    """A warm-up's page check, from the settings (`Warmup__PageCheck*`): what the warm-up and refresh runners use."""
    return PageCheck(
        client,
        sites=settings.site_map,
        raw_pattern=settings.raw_markdown_url_pattern,
        concurrency=concurrency or settings.warmup.page_check_concurrency,
        seconds=settings.warmup.page_check_seconds,
    )


class PageCheck:
    """Checks pages against the origin for one warm-up: one lane of `concurrency` requests for every site, each
    site's check bounded to `seconds` (`Warmup__PageCheckConcurrency`, `Warmup__PageCheckSeconds`)."""

    def __init__(
        self,
        client: OriginClient,
        *,
        sites: SiteMap,
        raw_pattern: str | None,
        concurrency: int,
        seconds: float,
    ) -> None:
        self._client = client
        self._sites = sites
        self._raw_pattern = raw_pattern
        self._lane = asyncio.Semaphore(concurrency)
        self._seconds = seconds
        self._head = True
        """HEAD until the origin refuses it; then GET (conditional still) for the rest of the warm-up."""

    async def site(self, site: str, index: SiteIndex, record: MissingRecord) -> MissingRecord:
        """`record` with the verdicts on every page of `index` it had not decided yet (`complete` when none is left),
        and the pages it hides asked again: those served now are `revived`.

        Validators are kept only for pages of this index, so the record does not grow with every version.
        """
        paths = [page.path for page in index.pages]
        listed = set(paths)
        fresh = record.unchecked(paths)
        again = sorted(page for page in record.hidden if page in listed)  # hidden pages may have come back
        probes = await self._probes(site, [*fresh, *again], record)
        served = {path for path, probe in probes.items() if probe.verdict is Verdict.SERVED}
        missing = {path for path, probe in probes.items() if probe.verdict is Verdict.MISSING}
        decided = sum(1 for path in fresh if path in served or path in missing)
        validators = {path: found for path, found in record.validators.items() if path in listed}
        validators.update({path: probe.validators for path, probe in probes.items() if probe.validators})
        return MissingRecord(
            record.index,
            record.missing | missing,
            record.checked | served,
            complete=decided == len(fresh),
            validators=validators,
            revived=record.revived | (served & set(again)),
        )

    async def again(self, site: str, record: MissingRecord) -> MissingRecord:
        """`record` (complete for its index version) with the pages it hides asked again: those served now are
        `revived`. Needs no index: every hidden page is one of the version's pages."""
        probes = await self._probes(site, sorted(record.hidden), record)
        served = {path for path, probe in probes.items() if probe.verdict is Verdict.SERVED}
        return replace(record, checked=record.checked | served, revived=record.revived | served)

    async def _probes(self, site: str, paths: list[str], record: MissingRecord) -> dict[str, Probe]:
        """What the origin says about each of `paths`, within the site's time budget."""
        with budget(self._seconds):
            probes = await asyncio.gather(*(self._page(site, path, record.validators.get(path)) for path in paths))
        return dict(zip(paths, probes, strict=True))

    async def _page(self, site: str, path: str, known: Validators | None) -> Probe:
        async with self._lane:
            html = await self._ask(f"{self._sites.base_url(site)}/{path}", self._sites.base_url(site) + "/", known)
            if html is None:
                return Probe(Verdict.UNKNOWN)
            found = verdict(html.status)
            if found is Verdict.SERVED:
                fresh = Validators(html.etag, html.last_modified)
                return Probe(found, fresh if fresh else known if html.status == 304 else None)
            raw_url = raw_markdown_url(self._sites, self._raw_pattern, site, path)
            if found is Verdict.UNKNOWN or raw_url is None:
                return Probe(found)
            # The pattern is configuration and may point anywhere under the origin, not only under the site.
            raw = await self._ask(raw_url, self._sites.origin, None)
            return Probe(verdict(raw.status) if raw is not None else Verdict.UNKNOWN)

    async def _ask(self, url: str, scope: str, known: Validators | None) -> Response | None:
        """The origin's answer for `url` (HEAD while it is accepted), or None when there was none."""
        headers = known.headers() if known else {}
        try:
            if self._head:
                response = await self._client.head(url, scope=scope, headers=headers)
                if response.status not in _NO_HEAD:
                    return response
                self._head = False
            return await self._client.get(url, scope=scope, headers=headers)
        except OriginError as exc:
            if exc.status is not None and 200 <= exc.status < 300:  # served, only too large to read
                return Response(url, exc.status, b"", "")
            return None  # unreachable, too slow, refused: says nothing about the page
