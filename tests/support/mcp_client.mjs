// The official TypeScript MCP clients reading a long page the way an agent's host does: the tools, the page in
// parts (each answer checked by the SDK against the tool's output schema), a section, the outline, tool errors, a
// search at the largest limit, and the page again through the resource a search result links. Prints one JSON
// report on stdout.
// Usage: node tests/support/mcp_client.mjs <sdk: v1|v2> <era: legacy|auto> <mcp-url> <location> <query>
//   v1: @modelcontextprotocol/sdk 1.x (the 2025-11-25 handshake only)
//   v2: @modelcontextprotocol/client 2.x; `auto` probes with server/discover and speaks 2026-07-28 when offered.
import { connect } from "./mcp_sdk.mjs";

const [sdk, era, url, location, query] = process.argv.slice(2);

const client = await connect(sdk, era, url, `typescript-${sdk}-test`);

const version = client.getNegotiatedProtocolVersion?.() ?? null;
const capabilities = client.getServerCapabilities();
const listed = await client.listTools();
const tools = listed.tools.map((tool) => tool.name);

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

async function failure(call) {
  try {
    await call();
    return { thrown: false };
  } catch (error) {
    return { thrown: true, code: error.code ?? null };
  }
}

const page = await readInParts({ location });
const section = await readInParts({ location, section: "chapter-5-capacity" });
const outline = await client.callTool({ name: "get_doc", arguments: { location, view: "outline" } });
const missing = await client.callTool({ name: "get_doc", arguments: { location: "no/such/page-xyz" } });
const unknownArgument = await client.callTool({ name: "get_doc", arguments: { loc: location } });
const blank = await client.callTool({ name: "search_docs", arguments: { query: "   " } });
const unknownTool = await failure(() => client.callTool({ name: "no_such_tool", arguments: {} }));
const prompts = await failure(() => client.getPrompt({ name: "no-such-prompt" }));

const found = await client.callTool({ name: "search_docs", arguments: { query } });
const widest = await client.callTool({ name: "search_docs", arguments: { query: "*", limit: 25 } });
const code = await client.callTool({
  name: "search_docs",
  arguments: { query: "terraform resource for the pager receiver", kind: "code", language: "hcl" },
});
const badKind = await client.callTool({ name: "search_docs", arguments: { query: "install", kind: "snippet" } });
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
    version,
    capabilities,
    tools,
    page,
    section,
    outline: outline.structuredContent.outline.map((entry) => entry.anchor),
    missing: { isError: missing.isError, structured: missing.structuredContent },
    unknownArgument: { isError: unknownArgument.isError, text: unknownArgument.content[0].text },
    blank: { isError: blank.isError, text: blank.content[0].text },
    unknownTool,
    prompts,
    search: { results: widest.structuredContent.results.length, leftOut: widest.structuredContent.leftOut },
    code: {
      isError: code.isError ?? false,
      first: code.structuredContent.results[0],
      text: code.content[0].text,
    },
    badKind: { isError: badKind.isError, text: badKind.content[0].text },
    link: { uri: link.uri, mimeType: link.mimeType },
    resource: { joined: resourceParts.join(""), parts: resourceParts.length, mimeType: "text/markdown" },
    templates,
  }),
);
await client.close();
