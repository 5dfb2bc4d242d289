"""Which layout each site publishes, so that checking a site costs the origin one request.

A site publishes one of three layouts: a MkDocs index (`search/search_index.json`), a Zensical one (`search.json`
at its root) or a `versions.json` (mike: an index per version folder). A site whose layout answered is asked that
one first on its next check. A site that published none (every layout answered 404 on first contact) is asked one
layout per check, in turn, so an unpublished site costs one request per check (`UnpublishedRetrySeconds`) and any
layout it publishes later is seen within three checks, at once when the publish hook or the warm-up says so.

`Layouts` is per process and shared by the loader (`loading.fetch_index`) and the versions lookup
(`versions.Versions`), which asks `versions.json` of an unpublished site only when its turn has come.
"""

from __future__ import annotations

from enum import StrEnum


class Layout(StrEnum):
    INDEX = "index"
    ZENSICAL = "zensical"
    VERSIONS = "versions"


ROTATION = (Layout.INDEX, Layout.ZENSICAL, Layout.VERSIONS)
FIRST_CONTACT = (Layout.INDEX, Layout.ZENSICAL)
"""What a site never seen is asked for, in order (its `versions.json` is asked next, by the versions lookup)."""


class Layouts:
    """What each site last published, and whose turn it is for those that published nothing."""

    def __init__(self) -> None:
        self._published: dict[str, Layout] = {}
        self._turn: dict[str, int] = {}
        self._versions_due: set[str] = set()

    def to_ask(self, site: str) -> tuple[Layout, ...]:
        """The index layouts this check asks for, in order: the published one first (then the other, for a site that
        changed generators), both on first contact, else one in turn; none when it is `versions.json`'s turn."""
        known = self._published.get(site)
        if known is not None:
            return (known, *(layout for layout in FIRST_CONTACT if layout != known))
        turn = self._turn.get(site)
        if turn is None:
            return FIRST_CONTACT
        self._turn[site] = turn + 1
        layout = ROTATION[turn % len(ROTATION)]
        if layout is Layout.VERSIONS:
            self._versions_due.add(site)
            return ()
        return (layout,)

    def published(self, site: str, layout: Layout) -> None:
        self._published[site] = layout
        self._turn.pop(site, None)

    def unpublished(self, site: str) -> None:
        """No index layout answered: the next checks ask one layout each, in turn."""
        self._published.pop(site, None)
        self._turn.setdefault(site, 0)

    def versions_due(self, site: str) -> bool:
        """Whether the site's `versions.json` is to be asked again now (its turn came since it was last asked)."""
        if site in self._versions_due:
            self._versions_due.discard(site)
            return True
        return False
