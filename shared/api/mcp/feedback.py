"""The MCP tool `submit_feedback`: an agent tells the documentation's owners a page misled it (listed only when the
deployment keeps usage insights). It writes, so its annotations say so and a host may ask the person first; its
checks, rate and page resolution are the REST route's (`shared.api.insights.FeedbackDesk`).

No `from __future__ import annotations`: the SDK reads the tool's annotations at run time.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, WithJsonSchema

from shared.api.insights import FeedbackDesk, accepted
from shared.api.mcp.tool_schemas import FEEDBACK_OUTPUT
from shared.insights.events import MAX_FEEDBACK_CHARS, FeedbackKind
from shared.service import DocumentationService
from shared.validation import MAX_LOCATION_LENGTH

FEEDBACK_DESCRIPTION = """\
Tell the documentation's owners that a page misled you. Use it only when a page you read was outdated, wrong,
missing something you needed, or unclear; not to rate an answer or to ask a question. `location` is the page (a
search_docs result's location), `kind` is `outdated`, `wrong`, `missing` or `unclear`, `text` (up to 2,000
characters) says what was wrong: no secrets or personal data (it is scrubbed, and kept for the docs team)."""

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
"""submit_feedback keeps what it is sent: a host may ask the person before it runs."""


def add_feedback_tool(
    server: MCPServer[Any],
    service: DocumentationService,
    desk: FeedbackDesk,
    *,
    seconds: float,
    guarded: Callable[[Awaitable[CallToolResult]], Awaitable[CallToolResult]],
) -> None:
    """`submit_feedback` on `server`; `guarded` turns a failure into the tool error every tool answers with."""
    kinds = {"type": "string", "enum": [kind.value for kind in FeedbackKind]}

    title = "Report a misleading page"

    @server.tool(name="submit_feedback", title=title, description=FEEDBACK_DESCRIPTION, annotations=WRITES)
    async def submit_feedback(
        location: Annotated[
            str, Field(description="The page: a search_docs result's location.", max_length=MAX_LOCATION_LENGTH)
        ],
        kind: Annotated[str, Field(description="What is wrong with it."), WithJsonSchema(kinds)],
        text: Annotated[str, Field(description="What misled you, in a few sentences.", max_length=MAX_FEEDBACK_CHARS)],
    ) -> Annotated[CallToolResult, FEEDBACK_OUTPUT]:
        async def answer() -> CallToolResult:
            document = await desk.submit(service, location, kind, text, seconds=seconds)
            kept = accepted(document, kind)
            return CallToolResult(
                content=[TextContent(type="text", text=f"Thank you: kept for the owners of {kept.location}.")],
                structured_content=kept.model_dump(mode="json", by_alias=True),
            )

        return await guarded(answer())
