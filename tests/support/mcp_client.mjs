// The official TypeScript MCP SDK client reading a long page the way an agent's host does: the tools, the page in
// parts (each answer checked by the SDK against the tool's output schema), a section, the outline, a tool error,
// and the page again through the resource a search result links. Prints one JSON report on stdout.
// Usage: node tests/support/mcp_client.mjs <mcp-url> <location> <query>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, location, query] = process.argv.slice(2);
const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const tools = (await client.listTools()).tools.map((tool) => tool.name);

async function readInParts(args) {
  const parts = [];
  const sizes = [];
  let offset;
  do {
    const answer = await client.callTool({ name: "get_doc", arguments: offset === undefined ? args : { ...args, offset } });
    if (answer.isError) throw new Error(`get_doc failed: ${answer.content[0].text}`);
    parts.push(answer.structuredContent.content);
    sizes.push(JSON.stringify(answer).length);
    offset = answer.structuredContent.nextOffset ?? undefined;
  } while (offset !== undefined);
  return { joined: parts.join(""), parts: parts.length, sizes };
}

const page = await readInParts({ location });
const section = await readInParts({ location, section: "chapter-5-capacity" });
const outline = await client.callTool({ name: "get_doc", arguments: { location, view: "outline" } });
const missing = await client.callTool({ name: "get_doc", arguments: { location: "no/such/page-xyz" } });
const unknownArgument = await client.callTool({ name: "get_doc", arguments: { loc: location } });

const found = await client.callTool({ name: "search_docs", arguments: { query } });
const link = found.content.find((block) => block.type === "resource_link" && block.name === location);
const resourceParts = [];
let uri = link.uri;
while (uri) {
  const read = await client.readResource({ uri });
  resourceParts.push(read.contents[0].text);
  uri = read.contents[0]._meta?.nextUri;
}
const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate);

console.log(
  JSON.stringify({
    tools,
    page,
    section,
    outline: outline.structuredContent.outline.map((entry) => entry.anchor),
    missing: { isError: missing.isError, structured: missing.structuredContent },
    unknownArgument: { isError: unknownArgument.isError, text: unknownArgument.content[0].text },
    link: { uri: link.uri, mimeType: link.mimeType },
    resource: { joined: resourceParts.join(""), parts: resourceParts.length, mimeType: "text/markdown" },
    templates,
  }),
);
await client.close();
