"""The command line: serve the API under uvicorn, or search, get, list and warm in-process."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING

from shared.cache import CopyStore, open_store
from shared.client_config import AUTHS, HOSTS, client_config
from shared.code_samples import GUESSED, PENDING
from shared.compose import checked, compose, process_embedding
from shared.embedding import EmbeddingModel
from shared.errors import ConfigurationError, DocsError, EmbeddingUnavailableError, InvalidRequestError, ResolutionError
from shared.insights.text import insights_text
from shared.models import Document, SearchResponse, VersionListing, View
from shared.reading import UnknownSectionError, check_read
from shared.requests import ReadRequest, SearchRequest
from shared.service import DocumentationService
from shared.settings import DocumentationSettings, load_settings
from shared.telemetry import redaction
from shared.validation import LIMIT_REFUSED, ROOT_LOCATION, check_kind, whole_number

if TYPE_CHECKING:
    from shared.providers.mkdocs.lifecycle.outcomes import SiteOutcome

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m shared", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API under uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "7071")))
    serve.add_argument("--log-level", default="info", type=str.lower, choices=LOG_LEVELS, help="uvicorn's levels")
    search = commands.add_parser("search", help="search the documentation")
    search.add_argument("query")
    search.add_argument("--limit", type=_whole("limit"), default=10, help=LIMIT_REFUSED.removeprefix("limit must be "))
    search.add_argument("--site")
    search.add_argument("--version", help="a version (or alias) of the versioned sites searched")
    search.add_argument("--kind", choices=("page", "code"), default="page", help="code: code blocks to copy")
    search.add_argument("--language", help="with --kind code: only blocks in this language (bash, yaml, ...)")
    search.add_argument("--format", choices=("text", "json"), default="text")
    get = commands.add_parser("get", help="fetch one page as Markdown (whole, a section, a part or its outline)")
    get.add_argument("location")
    get.add_argument("--section", help="only this section: a search result's anchor or a heading's text")
    get.add_argument(
        "--offset", type=_whole("offset"), help="start this many characters in (a previous part's nextOffset)"
    )
    get.add_argument(
        "--max-chars", type=_whole("maxChars"), help="at most this many characters, cut at a line boundary"
    )
    get.add_argument("--view", choices=[view.value for view in View], help="outline: the headings with their sizes")
    get.add_argument("--version", help="a version (or alias) of a versioned site; default: the site's default")
    get.add_argument("--format", choices=("text", "json"), default="text")
    versions = commands.add_parser("versions", help="list a site's versions (sites published per release with mike)")
    versions.add_argument("site")
    versions.add_argument("--format", choices=("text", "json"), default="text")
    listing = commands.add_parser("list", help="list pages (at most 25, interleaved across sites)")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    commands.add_parser("warm", help="refresh every site's cached index once")
    config = commands.add_parser("client-config", help="an agent host's configuration to reach a deployment")
    config.add_argument("--host", required=True, choices=HOSTS, help="the agent host")
    config.add_argument("--url", required=True, help="the deployment's https:// address (or its /api/mcp)")
    config.add_argument("--auth", choices=AUTHS, default="key", help="Functions key, inbound token or Entra ID")
    insights = commands.add_parser("insights", help="what agents asked and read, for the documentation's owners")
    insights.add_argument("--days", type=_whole("days"), default=7, help="the last this many days (default 7)")
    insights.add_argument("--site", help="only this site (and questions asked of every site)")
    insights.add_argument("--version", help="only this version")
    insights.add_argument("--format", choices=("text", "json"), default="text")
    insights.add_argument(
        "--as-eval", type=Path, metavar="FILE", help="write an eval set (tools/eval.py) from searches then reads"
    )
    return parser


def _whole(name: str) -> Callable[[str], int]:
    """An argument's parser that says what the API says of a bad value (`validation.BOUNDED`)."""

    def parse(value: str) -> int:
        try:
            return whole_number(name, value)
        except InvalidRequestError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "client-config":  # needs no settings: it describes another deployment
        try:
            print(client_config(args.host, args.url, args.auth))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    redaction.install()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings = checked(load_settings())
    except ConfigurationError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "serve":
        return _serve(settings, args.host, args.port, args.log_level)
    return asyncio.run(_run(settings, args))


def _serve(settings: DocumentationSettings, host: str, port: int, log_level: str) -> int:
    import uvicorn

    from shared.api import create_app
    from shared.telemetry.export import configure as export_telemetry

    logging.getLogger("shared").setLevel("DEBUG" if log_level == "trace" else log_level.upper())  # no TRACE here
    export_telemetry(settings)
    # proxy_headers off: uvicorn would otherwise take the client's address from X-Forwarded-For on loopback, a header
    # the caller writes, and the throttles and in-flight bound are keyed on the address (`shared.api.gate.limits`).
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, access_log=False, proxy_headers=False)
    return EXIT_OK


async def _warm(settings: DocumentationSettings) -> int:
    from shared.providers.mkdocs import run_warmup

    embedding = process_embedding(settings)
    try:
        cache, report = await run_warmup(settings, embedding=embedding)
    finally:
        if embedding is not None:
            embedding.close()
    sites = {site: outcome.model_dump(mode="json", by_alias=True) for site, outcome in report.items()}
    print(json.dumps({"cache": cache.model_dump(mode="json"), "sites": sites}, indent=2))
    # An unpublished site (404) is a normal state the spec expects; anything else needs attention, embeddings
    # that could not be computed or stored included.
    broken = [site for site, item in report.items() if _needs_attention(item)]
    if broken:
        print(f"warm-up failed for: {', '.join(broken)}", file=sys.stderr)
    return EXIT_FAILED if broken else EXIT_OK


async def _insights(settings: DocumentationSettings, args: argparse.Namespace) -> int:
    """The insights report (or, with --as-eval, the evaluation set) from the usage store, whether or not this
    deployment keeps usage now; the pages no search returned come from the sites' indexes (lexical, no model)."""
    from shared.insights.report import Scope, as_eval, build
    from shared.insights.store import open_usage_store

    store = open_usage_store(settings)
    if store is None:
        print("error: no storage account is configured, so no usage is kept (docs/insights.md)", file=sys.stderr)
        return EXIT_FAILED
    until = datetime.now(UTC)
    scope = Scope(int(until.timestamp() * 1000), args.days, args.site, args.version, settings.insights.min_callers)
    try:
        events, complete = await store.events(until - timedelta(days=args.days), until)
    except Exception as exc:
        print(f"error: the usage store cannot be read ({type(exc).__name__})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        await store.aclose()
    if args.as_eval is not None:
        written = as_eval(events, scope, corpus=settings.origin)
        args.as_eval.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
        print(f"{len(written['cases'])} cases written to {args.as_eval}", file=sys.stderr)  # type: ignore[arg-type]
        return EXIT_OK
    lexical = settings.model_copy(update={"search": settings.search.model_copy(update={"semantic": False})})
    async with compose(lexical) as composed:
        try:
            site = composed.service.check_site(args.site)
        except InvalidRequestError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        sites = [site] if site is not None else list(composed.service.sites)
        listed = await asyncio.gather(*(composed.service.pages(one) for one in sites))
    pages = {one: found for one, found in zip(sites, listed, strict=True) if found is not None}
    report = build(events, replace(scope, site=site), pages, complete=complete)
    print(report.model_dump_json(by_alias=True, indent=2) if args.format == "json" else insights_text(report))
    return EXIT_OK


def _needs_attention(outcome: SiteOutcome) -> bool:
    failed = outcome.failed and outcome.status != HTTPStatus.NOT_FOUND
    return failed or (outcome.semantic is not None and outcome.semantic.failed)


def _one_shot(settings: DocumentationSettings, store: CopyStore) -> DocumentationSettings:
    """A one-shot command ranks semantically only with embeddings it can read from shared storage.

    Without storage it would spend a minute of CPU embedding every site for one query and then exit.
    """
    if store.shared or not settings.search.semantic:
        return settings
    logging.getLogger(__name__).info("no shared storage: ranking lexically (run `warm` with storage for embeddings)")
    return settings.model_copy(update={"search": settings.search.model_copy(update={"semantic": False})})


async def _run(settings: DocumentationSettings, args: argparse.Namespace) -> int:
    if args.command == "warm":
        return await _warm(settings)
    if args.command == "insights":
        return await _insights(settings, args)
    store = open_store(settings)
    settings = _one_shot(settings, store)
    embedding = process_embedding(settings)
    try:
        if embedding is not None:
            await _preload(embedding)
        async with compose(settings, embedding=embedding, store=store) as composed:
            return await _answer(composed.service, args)
    finally:
        await store.aclose()
        if embedding is not None:
            embedding.close()


async def _preload(embedding: EmbeddingModel) -> None:
    """A one-shot command waits for the model itself, so its one search can use the stored vectors."""
    try:
        await embedding.ready()
    except EmbeddingUnavailableError as exc:
        logging.getLogger(__name__).info("semantic matching unavailable (%s); ranking lexically", exc)


async def _answer(service: DocumentationService, args: argparse.Namespace) -> int:
    try:
        if args.command in ("search", "list"):
            query, limit = ("*", 25) if args.command == "list" else (args.query, args.limit)
            site, version = getattr(args, "site", None), getattr(args, "version", None)
            kind, language = getattr(args, "kind", None), getattr(args, "language", None)
            asked = SearchRequest(query, limit, site, version, check_kind(kind), language)
            found = await service.search(asked)
            _print_search(found, args.format)
            return EXIT_OK
        if args.command == "versions":
            listing = VersionListing.of(args.site, await service.versions(args.site))
            print(listing.model_dump_json(by_alias=True, indent=2) if args.format == "json" else _versions(listing))
            return EXIT_OK
        read = check_read(section=args.section, offset=args.offset, max_chars=args.max_chars, view=args.view)
        _print_document(await service.read(ReadRequest(args.location, read, args.version)), args.format)
        return EXIT_OK
    except InvalidRequestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for entry in exc.sections if isinstance(exc, UnknownSectionError) else []:  # the page's, to choose from
            anchor = f"  #{entry.anchor}" if entry.anchor else ""
            print(f"  {'  ' * (entry.level - 1)}{entry.title}{anchor}", file=sys.stderr)
        return EXIT_USAGE
    except ResolutionError as exc:
        resolution = exc.resolution.model_dump(mode="json", by_alias=True)
        if args.format == "json":
            error = {"code": exc.resolution.reason.value, "message": exc.resolution.detail}
            print(json.dumps({"error": error, "resolution": resolution}, indent=2))
        else:
            print(f"{exc.resolution.reason.value}: {exc.resolution.detail}", file=sys.stderr)
            for candidate in exc.resolution.candidates:
                print(f"  candidate: {_shown(candidate)}", file=sys.stderr)
            for suggestion in exc.resolution.suggestions:
                print(f"  did you mean: {_shown(suggestion)}", file=sys.stderr)
        return EXIT_FAILED
    except DocsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _versions(listing: VersionListing) -> str:
    if not listing.versioned:
        return f"{listing.site} is not versioned"
    return "\n".join(
        f"{version.version}{' (' + ', '.join(version.aliases) + ')' if version.aliases else ''}"
        f"{'  default' if version.default else ''}{'  hidden' if version.hidden else ''}"
        for version in listing.versions
    )


def _print_search(response: SearchResponse, fmt: str) -> None:
    if fmt == "json":
        print(response.model_dump_json(by_alias=True, indent=2))
        return
    for rank, result in enumerate(response.results, 1):
        print(f"{rank:2}. {_shown(result.location)}  ({result.score:g})\n    {result.title}\n    {result.preview_text}")
        if result.code is not None:
            guessed = f", {GUESSED}" if result.language_guessed else ""
            pending = f"; {PENDING}" if result.language_pending else ""
            print(f"    [{result.code.language}{guessed}{pending}]")
            print("\n".join(f"    | {line}" for line in result.code.text.splitlines()))
    if not response.results:
        print("no results", file=sys.stderr)


def _shown(location: str) -> str:
    """A location as the text output shows it: the default site's home page, whose location is empty, said so."""
    return location if location else ROOT_LOCATION


def _print_document(document: Document, fmt: str) -> None:
    if fmt == "json":
        print(document.model_dump_json(by_alias=True, indent=2))
    elif document.outline is not None:
        for entry in document.outline:
            anchor = f"  #{entry.anchor}" if entry.anchor else ""
            print(f"{'  ' * (entry.level - 1)}{entry.title}{anchor}  ({entry.chars:,} chars at {entry.offset:,})")
    else:
        in_parts = document.offset > 0 or document.next_offset is not None
        print(document.content, end="" if in_parts else "\n")
        if document.next_offset is not None:  # said on stderr, so parts written to one file join exactly
            print(f"[continues: --offset {document.next_offset} of {document.total_chars:,}]", file=sys.stderr)
