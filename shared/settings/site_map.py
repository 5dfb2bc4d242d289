"""Where each configured site is published: the one value every part that asks the origin for a site's pages or
index takes, instead of the whole settings (`DocumentationSettings.site_map` builds it once, at start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.site_key import SiteKey


@dataclass(frozen=True, slots=True, kw_only=True)
class SiteMap:
    """The origin, the configured sites (the default first among equals), and where each one's index is."""

    origin: str
    sites: tuple[str, ...]
    default_site: str
    search_index_path: str = "/search/search_index.json"
    overrides: Mapping[str, str] = field(default_factory=dict)
    """`SearchIndexOverrides`: a site's index at another path under the origin."""

    def base_url(self, site: str) -> str:
        """A site's base URL: `{Origin}/{site}`, and a version's (`{site}@{version}`, a versioned site's folder,
        `shared.providers.mkdocs.lifecycle.versions`) `{Origin}/{site}/{version}`; there are no per-site base URLs."""
        key = SiteKey.parse(site)
        return f"{self.origin}/{key.site}/{key.version}" if key.version else f"{self.origin}/{site}"

    def index_url(self, site: str) -> str:
        """Where a site's search index is published: the override, else `{base}{SearchIndexPath}`."""
        override = self.overrides.get(site)
        return self.origin + override if override else self.base_url(site) + self.search_index_path

    def site_named(self, name: str) -> str | None:
        """The configured site with this name, case-insensitively."""
        lowered = name.lower()
        return next((site for site in self.sites if site.lower() == lowered), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexPolicy:
    """How a site's index is taken: where from (`sites`), how long a stored copy is served unchecked, what it is
    stored as, and the bounds an index must keep to be loaded at all."""

    sites: SiteMap
    cache_hours: float = 24.0
    """`CacheDurationHours`."""
    file_name_template: str = "{site}-docs-search-index.json"
    """`CacheFileNameTemplate`."""
    max_entries: int = 50_000
    """`MaxIndexEntries`."""
    max_megabytes: float = 16.0
    """`MaxIndexMegabytes`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SiteTimings:
    """How often a process's sites are checked and retried, and how long a request waits for one."""

    check_interval: float
    """`Cache__CheckIntervalSeconds`: a loaded site's store check, at most this often."""
    site_wait: float
    """`Search__SiteWaitSeconds`: what a request waits for a site still loading or checking."""
    retry: float
    """`SiteRetrySeconds`: a site that failed is tried again after this (with jitter)."""
    unpublished_retry: float
    """`UnpublishedRetrySeconds`: a site that is not published is checked again after this."""
