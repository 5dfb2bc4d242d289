"""Azure Functions entry point: the ASGI app as one HTTP function, and the timer that keeps index caches warm."""

from __future__ import annotations

import logging

import azure.functions as func

from shared.api import create_app
from shared.compose import process_embedding
from shared.providers.mkdocs.warm import run_warmup
from shared.settings import load_settings
from shared.telemetry.export import configure as export_telemetry

settings = load_settings()
export_telemetry(settings)  # before anything records: only with APPLICATIONINSIGHTS_CONNECTION_STRING
# One model per worker process, shared by requests and the timer: the timer can fire before the first request
# runs the ASGI lifespan, and both must queue their bulk embedding on the same lane.
embedding = process_embedding(settings)
api = create_app(settings, embedding=embedding)
app = func.AsgiFunctionApp(app=api, http_auth_level=func.AuthLevel.FUNCTION)


@app.function_name(name="warm_index_caches")
@app.timer_trigger(schedule=settings.warmup.schedule, arg_name="timer", run_on_startup=False, use_monitor=True)
async def warm_index_caches(timer: func.TimerRequest) -> None:
    """Refresh every site's cached index from the origin (conditional GETs), so instances share fresh copies."""
    if timer.past_due:
        logging.getLogger(__name__).info("warm-up timer is past due; running now")
    await run_warmup(settings, embedding=embedding)
