"""Properties over generated input: locations never escape, every indexed page resolves from its own location,
and previews keep their contract whatever the text."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import InvalidRequestError
from shared.models import Reason
from shared.preview import make_preview
from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex, unsafe_location
from shared.providers.mkdocs.indexes.resolution import normalize, resolve_in_site
from shared.validation import check_location, split_whitespace

ORIGIN = "https://docs.example.com"
segment = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cf")), min_size=1, max_size=8)
"""A page name's characters: anything a file name holds but control and invisible format characters, which a
request may not carry (`check_location` refuses them) and no documentation page is named with."""


@given(st.text(max_size=60))
def test_a_checked_location_never_has_a_dot_segment_or_leaves_the_origin(location: str) -> None:
    try:
        path = check_location(location, ORIGIN)
    except InvalidRequestError:
        return
    segments = normalize(path).split("/")
    assert ".." not in segments and "." not in segments and "\\\\" not in path
    assert "://" not in path.split("#", 1)[0] or path.startswith(ORIGIN)


@given(st.lists(st.lists(segment.filter(lambda s: "/" not in s and "#" not in s), min_size=1, max_size=3), min_size=1))
@settings(max_examples=200)
def test_every_page_resolves_from_the_location_search_would_return(paths: list[list[str]]) -> None:
    """MkDocs percent-encodes locations; `get` receives them as the service decodes them. Pages that share a
    spelling up to case, or that no server could serve safely, are left out: their outcome is a different rule."""
    entries, seen = [], set()
    for parts in paths:
        if "/".join(parts) != "/".join(parts).strip():
            continue  # requests are trimmed of surrounding whitespace, so no page can start or end with it
        location = "/".join(quote(part) for part in parts) + "/"
        if location.lower() in seen or unsafe_location(location):
            continue
        seen.add(location.lower())
        entries.append(IndexEntry(location, location, None, "T", "T", "", 1.0))
    if not entries:
        return
    index = SiteIndex.build("docs", entries)
    for page in index.pages:
        requested = check_location(page.path, ORIGIN)  # what `get` does with the location search returned
        outcome = resolve_in_site(index, normalize(requested))
        assert outcome.reason is Reason.RESOLVED and outcome.page == page, (page.path, outcome)


@given(st.text(max_size=400), st.text(max_size=30))
def test_a_preview_keeps_its_contract_for_any_text(text: str, query: str) -> None:
    preview = make_preview(text, query)
    body = preview.removeprefix("...").removesuffix("...")
    assert len(body.encode("utf-16-le")) // 2 <= 200
    assert split_whitespace(body) == body.split(" ") or not body  # collapsed to single spaces, trimmed
