"""Azure Functions entry point: the ASGI app as one HTTP function, the publish hook's routes without a Functions key,
the timer that keeps index caches warm, and (with `Refresh__QueueName`) the queue Event Grid reports publishes to."""

from __future__ import annotations

import asyncio
import logging

import azure.functions as func

from shared.api import create_app
from shared.compose import Composition, process_embedding
from shared.providers.mkdocs import run_warmup
from shared.settings import load_settings
from shared.telemetry.export import configure as export_telemetry

log = logging.getLogger(__name__)

settings = load_settings()
export_telemetry(settings)  # before anything records: only with APPLICATIONINSIGHTS_CONNECTION_STRING
# One model per worker process, shared by requests and the timer: the timer can fire before the first request
# runs the ASGI lifespan, and both must queue their bulk embedding on the same lane.
embedding = process_embedding(settings)
# With Entra sign-in the app is the gate: an OAuth client finds where to sign in from the app's own 401 challenge
# (RFC 9728 metadata), which a Functions-key 401 from the host would hide, and per-user tokens replace the key
# every user would otherwise paste into mcp.json. Without it, the Functions key stays the gate.
auth_level = func.AuthLevel.ANONYMOUS if settings.auth.enabled else func.AuthLevel.FUNCTION
api = create_app(settings, embedding=embedding, gated_by_host=auth_level == func.AuthLevel.FUNCTION)
app = func.AsgiFunctionApp(app=api, http_auth_level=auth_level)
_starting = asyncio.Lock()


async def _started() -> Composition:
    """The ASGI app's composed service, running its lifespan first if no request has yet."""
    async with _starting:
        if not app.startup_task_done:
            if not await app.middleware.notify_startup():  # type: ignore[no-untyped-call]
                raise RuntimeError("ASGI middleware startup failed.")
            app.startup_task_done = True
    composition: Composition | None = api.state.composition
    if composition is None:
        raise RuntimeError("the service is not started")
    return composition


@app.function_name(name="admin_http")
@app.http_type(http_type="asgi")
@app.route(
    route="api/admin/{*path}", methods=("GET", "POST", "PUT", "PATCH", "DELETE"), auth_level=func.AuthLevel.ANONYMOUS
)
async def admin_http(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
    """`/api/admin/*` (the publish hook) without a Functions key: a docs pipeline holds a `Refresh__Tokens` token,
    which the app checks, and nothing that reads. A literal route segment wins over the app's catch-all."""
    await _started()
    response: func.HttpResponse = await app.middleware.handle_async(req, context)
    return response


@app.function_name(name="health_http")
@app.http_type(http_type="asgi")
@app.route(route="api/health", methods=("GET",), auth_level=func.AuthLevel.ANONYMOUS)
async def health_http(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
    """`/api/health` without a Functions key: the availability test (`infra/app/monitoring.bicep`) and load balancers
    probe it keyless, as `Inbound__Tokens` and Entra sign-in already leave it open. It says how the service stands
    (site states, store and model), never a page or a query. A literal route wins over the app's catch-all."""
    await _started()
    response: func.HttpResponse = await app.middleware.handle_async(req, context)
    return response


@app.function_name(name="server_card_http")
@app.http_type(http_type="asgi")
@app.route(route=".well-known/mcp/server-card.json", methods=("GET",), auth_level=func.AuthLevel.ANONYMOUS)
async def server_card_http(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
    """The MCP server card without a Functions key: a client reads it before it has any credential, to learn where
    to connect and which credential to send (`shared.api.discovery`). A literal route wins over the app's catch-all."""
    await _started()
    response: func.HttpResponse = await app.middleware.handle_async(req, context)
    return response


@app.function_name(name="warm_index_caches")
@app.timer_trigger(schedule=settings.warmup.schedule, arg_name="timer", run_on_startup=False, use_monitor=True)
async def warm_index_caches(timer: func.TimerRequest) -> None:
    """Refresh every site's cached index from the origin (conditional GETs), so instances share fresh copies."""
    if timer.past_due:
        log.info("warm-up timer is past due; running now")
    composition = await _started()  # the service's own store and origin session, not a second of each
    await run_warmup(settings, embedding=embedding, store=composition.store, client=composition.client)
    await composition.purge_usage()  # usage events past Insights__RetentionDays, with insights on


async def refresh_on_publish(message: func.QueueMessage) -> None:
    """A `BlobCreated` event for a site's index: refresh that site as the publish hook does. A refresh that fails
    raises, so the queue delivers the message again later (up to its dequeue count, then the poison queue)."""
    composition = await _started()
    try:
        sites = composition.published(message.get_body())
    except ValueError:
        log.warning("refresh queue: a message that is not JSON was dropped (dequeue count %s)", message.dequeue_count)
        return
    if not sites:
        log.info("refresh queue: the blob written is no site's index; nothing to refresh")
        return
    run = composition.refresher.request(sites)
    await asyncio.gather(*run.outcomes.values(), return_exceptions=True)
    report = run.report().sites
    failed = sorted(site for site, outcome in report.items() if outcome.failed)
    log.info("refresh queue: %s", ", ".join(f"{site} {outcome.outcome}" for site, outcome in report.items()))
    if failed:
        raise RuntimeError(f"refreshing {', '.join(failed)} failed; the message is delivered again")


if settings.refresh.queue_name:
    app.function_name(name="refresh_on_publish")(
        app.queue_trigger(arg_name="message", queue_name=settings.refresh.queue_name, connection="AzureWebJobsStorage")(
            refresh_on_publish
        )
    )
