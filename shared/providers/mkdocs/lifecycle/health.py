"""What health says of the MkDocs provider: where each site's index stands and how it ranks, rolled up into a status.

    MkDocsHealth       status: the sites' roll-up (a failed site `unavailable`, a loaded one `ok`)
    └── sites          site -> SiteHealth    not_loaded | loading     counts for nothing
                                SiteVersioned versioned               counts for nothing (its versions count)
                                SiteFailed   failed                   `unavailable`, unless only unpublished
                                SiteLoaded   loaded                   `ok`; its ranker, and why it ranks lexically

The models become JSON only at the API; this module says what each one holds and how a loaded site reads
(`site_loaded`).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import PlainSerializer, SerializeAsAny

from shared.providers.base import Instant, ProviderHealth, Report, Status, absent, roll_up
from shared.providers.mkdocs.indexes.index import IndexFormat
from shared.providers.mkdocs.lifecycle.loading import LoadedSite, Source
from shared.site_key import SEPARATOR


class Semantic(StrEnum):
    """Where a site's entry embeddings stand."""

    OFF = "off"
    PENDING = "pending"
    READY = "ready"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"


class SiteState(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADING = "loading"
    LOADED = "loaded"
    FAILED = "failed"
    VERSIONED = "versioned"
    """No index of its own: a mike site, each version loaded under its own key (`site@version`)."""


class RankerState(StrEnum):
    """How a loaded site's search structures came to be."""

    DEFERRED = "deferred"
    """Not built yet: a provider ahead of MkDocs answers searches."""
    PREBUILT = "prebuilt"
    """Loaded from the warm-up's stored artifact."""
    BUILT = "built"


class Ranking(StrEnum):
    """How a loaded site's searches are ranked."""

    SEMANTIC = "semantic"
    LEXICAL = "lexical"
    DEFERRED = "deferred"


class SiteHealth(Report):
    """A site that is not loaded (yet), or loading."""

    state: SiteState

    @property
    def status(self) -> Status | None:
        """What the site counts for in the provider's status; None: nothing."""
        return None


class SiteFailed(SiteHealth):
    state: SiteState = SiteState.FAILED
    reason: str
    unpublished: bool
    """The origin says its index does not exist: a normal state, it counts for nothing."""
    retry_at: Annotated[datetime, PlainSerializer(lambda at: at.isoformat(timespec="seconds"))]

    @property
    def status(self) -> Status | None:
        return None if self.unpublished else Status.UNAVAILABLE


class SiteVersioned(SiteHealth):
    """A versioned site's own entry: its versions and default; each version stands under its key as a site."""

    state: SiteState = SiteState.VERSIONED
    versions: list[str]
    default: str


class SiteLoaded(SiteHealth):
    state: SiteState = SiteState.LOADED
    source: Source
    index_format: IndexFormat
    """Which generator's index the site publishes: `mkdocs` (`search/search_index.json`) or `zensical`
    (`search.json`)."""
    ranker: RankerState
    entries: int
    pages: int
    code_blocks: int
    """Its code blocks (`kind=code` searches them): embedded with its entries, so `semantic` is `ready` only once
    their vectors are too."""
    code_languages: str | None = absent()
    """Where its code blocks' languages from the Markdown's fences stand once a code search asked for them:
    `reading`, `partial` (some pages did not answer; asked again later) or `read` (`languages.py`)."""
    fetched_at: Instant
    missing_pages: int
    ranking: Ranking
    semantic: Semantic | None = absent()
    """Where its embeddings stand, once its search structures are built."""
    why: str | None = absent()
    """Why it ranks lexically (or is deferred)."""
    updating: str | None = absent()
    """A newer index is being embedded while this one ranks semantically."""

    @property
    def status(self) -> Status | None:
        return Status.OK


def site_loaded(loaded: LoadedSite, semantic: Semantic, reason: str, *, updating: bool, missing: int) -> SiteLoaded:
    """How a loaded site reads: `semantic` and `reason` are where its newest index's embeddings stand, `updating`
    that a newer index is being embedded, `missing` its pages the origin does not serve."""
    ranking, shown, why, newer = _ranking(loaded, semantic, reason, updating=updating)
    built = RankerState.PREBUILT if loaded.prebuilt else RankerState.BUILT
    return SiteLoaded(
        source=loaded.source,
        index_format=loaded.index.format,
        ranker=RankerState.DEFERRED if loaded.ranker is None else built,
        entries=len(loaded.index.entries),
        pages=len(loaded.index.pages),
        code_blocks=len(loaded.index.code),
        fetched_at=loaded.fetched_at,
        missing_pages=missing,
        ranking=ranking,
        semantic=shown,
        why=why,
        updating=newer,
    )


def _ranking(
    loaded: LoadedSite, semantic: Semantic, reason: str, *, updating: bool
) -> tuple[Ranking, Semantic | None, str | None, str | None]:
    """How the site ranks, where its embeddings stand, why it ranks lexically, and whether a newer index is being
    embedded."""
    if loaded.ranker is None:
        why = (
            "a provider ahead of MkDocs answers searches: the search structures are built when a search falls "
            "through to MkDocs; resolution and get use the index"
        )
        return Ranking.DEFERRED, None, why, None
    if loaded.ranker.semantic is None:
        why = {
            Semantic.OFF: "semantic matching is off (Search__Semantic=false)",
            Semantic.PENDING: "its embeddings are being computed in the background",
            Semantic.UNAVAILABLE: f"the embedding model is unavailable: {reason}",
            Semantic.FAILED: f"embedding its index failed: {reason}; it is tried again later (backing off)",
            Semantic.READY: "",
        }[semantic]
        return Ranking.LEXICAL, semantic, why, None
    newer = "a newer index is being embedded; it is served with its vectors once they are ready" if updating else None
    return Ranking.SEMANTIC, semantic, None, newer


LEXICAL_NOTE = "a search over any site listed in lexicalSites ranks every site lexically (one kind of score)"


class MkDocsHealth(ProviderHealth):
    """The origin, each site's state and how it ranks."""

    origin: str
    default_site: str
    semantic: bool
    lexical_sites: tuple[str, ...]
    note: str
    sites: dict[str, SerializeAsAny[SiteHealth]]

    def without(self, hidden: frozenset[str]) -> MkDocsHealth:
        if not hidden:
            return self

        def shown(name: str) -> bool:
            return name.split(SEPARATOR, 1)[0].lower() not in hidden

        return self.model_copy(
            update={
                "sites": {name: site for name, site in self.sites.items() if shown(name)},
                "lexical_sites": tuple(name for name in self.lexical_sites if shown(name)),
            }
        )

    @classmethod
    def of(cls, sites: dict[str, SiteHealth], *, origin: str, default_site: str, semantic: bool) -> MkDocsHealth:
        """The report over the sites' own: `unavailable` while sites fail and none is loaded, `degraded` while any
        fails (an unpublished site is not failing), else `ok`."""
        lexical = sorted(
            name for name, site in sites.items() if isinstance(site, SiteLoaded) and site.ranking is Ranking.LEXICAL
        )
        return cls(
            status=roll_up(site.status for site in sites.values() if site.status is not None),
            origin=origin,
            default_site=default_site,
            semantic=semantic,
            lexical_sites=tuple(lexical),
            note=LEXICAL_NOTE if lexical and semantic else "",
            sites=sites,
        )
