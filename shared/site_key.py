"""The key a site, or one version of a versioned site, is loaded, cached, ranked and warmed under.

A versioned site (`mkdocs.lifecycle.versions`) has no index of its own: each of its versions is a site of
its own, keyed `{site}@{version}` (`vdocs@2.1`; no site name may hold `@`, `DocumentationSettings` refuses one).
`SiteKey` is the one place that key is joined (`str`) and split (`parse`): everything else holds the string, or asks
this type what is in it.
"""

from __future__ import annotations

from typing import NamedTuple

SEPARATOR = "@"


class SiteKey(NamedTuple):
    """A site, and the version of it when the site is versioned."""

    site: str
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.site}{SEPARATOR}{self.version}" if self.version is not None else self.site

    @classmethod
    def parse(cls, key: str) -> SiteKey:
        """The site and version a key names; a plain site's key is its name."""
        site, separator, version = key.partition(SEPARATOR)
        return cls(site, version) if separator else cls(key)

    @staticmethod
    def of(site: str, version: str) -> str:
        """The key of one version of a versioned site (`vdocs@2.1`)."""
        return str(SiteKey(site, version))
