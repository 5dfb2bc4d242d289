"""Log records of the libraries that can quote a request, stripped of it before any handler sees them.

No raw query, location, token or document body may reach a log at any level. Our own modules log lengths and
types only; these libraries do not:

- the MCP SDK (`mcp.*`): the client logs every message it sends at DEBUG (arguments included) and a traceback that
  quotes a malformed answer; the server logs foreign `Host` and `Origin` header values verbatim, in the message
  itself (an f-string);
- uvicorn's message logger (`uvicorn.asgi`, at `--log-level trace`): every ASGI scope, raw query string included.

`install()` wraps the process's log-record factory once, so the rule holds whatever handlers a host (uvicorn, the
Functions worker, a test) attaches: a record from those loggers keeps its level, logger and message text up to the
first ": " (after which the SDK puts values), loses its arguments, and its exception is reduced to the type's name.
"""

from __future__ import annotations

import logging
from typing import Any

SCRUBBED = ("mcp", "uvicorn.asgi")
"""Loggers (and their children) whose records are stripped."""
NOT_LOGGED = "(not logged)"

_installed = False


def install() -> None:
    """Strip the records of `SCRUBBED` loggers from now on (idempotent)."""
    global _installed
    if _installed:
        return
    base = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = base(*args, **kwargs)
        if _scrubbed(record.name):
            scrub(record)
        return record

    logging.setLogRecordFactory(factory)
    _installed = True


def _scrubbed(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in SCRUBBED)


def scrub(record: logging.LogRecord) -> None:
    """The record without its arguments, what follows the message's first ": ", or its exception's text (once:
    a record made by the wrapped factory is not scrubbed again)."""
    if getattr(record, "scrubbed", False):
        return
    record.scrubbed = True
    head, separator, _ = str(record.msg).partition(": ")
    record.msg = f"{head}: {NOT_LOGGED}" if separator else head
    record.args = None
    if record.exc_info:
        kind = record.exc_info[0]
        record.msg += f" [{kind.__name__ if kind is not None else 'exception'}; traceback not logged]"
        record.exc_info = None
        record.exc_text = None
    record.stack_info = None
