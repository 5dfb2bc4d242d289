"""Exporting the signals to Azure Monitor: set up by a host at start-up, only when Application Insights is configured.

Without `APPLICATIONINSIGHTS_CONNECTION_STRING` nothing is imported and nothing is installed: the OpenTelemetry
API stays a no-op. With it, the Azure Monitor exporters alone (not the distro, which also instruments half a dozen
frameworks and would cost a cold start more) send metrics and spans, authenticated by the app's managed identity
because the infrastructure turns Application Insights' local (key) authentication off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import metrics, trace

from shared.identity import sync_credential
from shared.settings import DocumentationSettings
from shared.telemetry.signals import NAME

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential
    from azure.monitor.opentelemetry.exporter import AzureMonitorMetricExporter, AzureMonitorTraceExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger(__name__)

SERVICE_NAME = f"{NAME}-docs"
"""The `service.name` resource attribute: Application Insights' cloud role name."""
EXPORT_INTERVAL_MILLIS = 60_000


@dataclass(frozen=True)
class Providers:
    """The SDK providers a host installs; they flush and shut down at interpreter exit."""

    meter_provider: MeterProvider
    tracer_provider: TracerProvider
    exporters: tuple[AzureMonitorMetricExporter, AzureMonitorTraceExporter]


def azure_monitor(settings: DocumentationSettings, *, credential: TokenCredential | None = None) -> Providers | None:
    """Meter and tracer providers exporting to Application Insights, or None without its connection string.

    `credential` defaults to the app's managed identity; building the providers sends nothing and asks for no
    token (the first export, a minute later, does).
    """
    secret = settings.applicationinsights_connection_string
    if secret is None:
        return None
    from azure.monitor.opentelemetry.exporter import AzureMonitorMetricExporter, AzureMonitorTraceExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    connection_string = secret.get_secret_value()
    credential = credential or managed_identity(settings)
    resource = Resource.create({"service.name": SERVICE_NAME})
    metric_exporter = AzureMonitorMetricExporter(connection_string=connection_string, credential=credential)
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=EXPORT_INTERVAL_MILLIS)
    tracer_provider = TracerProvider(resource=resource)
    span_exporter = AzureMonitorTraceExporter(connection_string=connection_string, credential=credential)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return Providers(meter_provider, tracer_provider, (metric_exporter, span_exporter))


def managed_identity(settings: DocumentationSettings) -> TokenCredential:
    """The identity every other Azure client uses (`shared.identity`), in the synchronous form the exporters'
    threads need."""
    return sync_credential(settings)


def configure(settings: DocumentationSettings) -> Providers | None:
    """Install the Azure Monitor providers as the process's global ones, when configured; once per process."""
    providers = azure_monitor(settings)
    if providers is None:
        log.debug("no APPLICATIONINSIGHTS_CONNECTION_STRING: signals are not exported")
        return None
    metrics.set_meter_provider(providers.meter_provider)
    trace.set_tracer_provider(providers.tracer_provider)
    log.info("exporting signals to Azure Monitor as %s", SERVICE_NAME)
    return providers
