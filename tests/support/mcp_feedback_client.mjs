// The official TypeScript MCP clients sending feedback on a page, as an agent's host does: the tool as listed (its
// annotations), a call (its answer checked by the SDK against the tool's output schema) and a refused one (a tool
// error, checked too). Prints one JSON report on stdout.
// Usage: node tests/support/mcp_feedback_client.mjs <sdk: v1|v2> <era: legacy|auto> <mcp-url> <token> <location>
import { connect } from "./mcp_sdk.mjs";

const [sdk, era, url, token, location] = process.argv.slice(2);

const client = await connect(sdk, era, url, `typescript-${sdk}-feedback`, { Authorization: `Bearer ${token}` });

const tool = (await client.listTools()).tools.find((listed) => listed.name === "submit_feedback");
const kept = await client.callTool({
  name: "submit_feedback",
  arguments: { location, kind: "unclear", text: `The steps skip the restart (sent by ${sdk} ${era}).` },
});
const refused = await client.callTool({
  name: "submit_feedback",
  arguments: { location, kind: "praise", text: "great" },
});

console.log(
  JSON.stringify({
    annotations: tool?.annotations ?? null,
    kept: { isError: kept.isError ?? false, structured: kept.structuredContent ?? null },
    refused: { isError: refused.isError ?? false, text: refused.content?.[0]?.text ?? "" },
  }),
);
await client.close();
