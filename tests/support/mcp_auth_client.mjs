// The official TypeScript MCP SDK discovering where to sign in, then calling with a bearer token: the 401 an
// unauthenticated initialize gets, the WWW-Authenticate parameters and the protected resource metadata read with
// the SDK's own discovery functions (and the resource it would ask the authorization server for), then the tools
// with `Authorization: Bearer`. Prints one JSON report on stdout.
// Usage: node tests/support/mcp_auth_client.mjs <mcp-url> <access-token>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from "@modelcontextprotocol/sdk/client/auth.js";

const [url, token] = process.argv.slice(2);
const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "typescript-sdk-test", version: "1" } },
};
const refused = await fetch(url, {
  method: "POST",
  headers: { accept: "application/json, text/event-stream", "content-type": "application/json" },
  body: JSON.stringify(initialize),
});
const challenge = extractWWWAuthenticateParams(refused);
const metadata = await discoverOAuthProtectedResourceMetadata(new URL(url), {
  resourceMetadataUrl: challenge.resourceMetadataUrl,
});
const resource = await selectResourceURL(new URL(url), {}, metadata);

const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const tools = (await client.listTools()).tools.map((tool) => tool.name);
const found = await client.callTool({ name: "search_docs", arguments: { query: "install" } });
await client.close();

console.log(
  JSON.stringify({
    status: refused.status,
    resourceMetadataUrl: challenge.resourceMetadataUrl?.href ?? null,
    scope: challenge.scope ?? null,
    metadata,
    resource: resource?.href ?? null,
    tools,
    searchError: Boolean(found.isError),
    results: found.structuredContent?.results?.length ?? 0,
  }),
);
