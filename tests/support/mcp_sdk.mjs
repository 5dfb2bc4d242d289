// The official TypeScript MCP clients as the test scripts connect them: `v1` is @modelcontextprotocol/sdk 1.x (the
// 2025-11-25 handshake only), `v2` is @modelcontextprotocol/client 2.x in its `era` (`legacy`, or `auto`, which
// probes with server/discover and speaks 2026-07-28 when offered). `headers` go with every request.
export async function connect(sdk, era, url, name, headers = {}) {
  const { Client, StreamableHTTPClientTransport } =
    sdk === "v2"
      ? await import("@modelcontextprotocol/client")
      : {
          Client: (await import("@modelcontextprotocol/sdk/client/index.js")).Client,
          StreamableHTTPClientTransport: (await import("@modelcontextprotocol/sdk/client/streamableHttp.js"))
            .StreamableHTTPClientTransport,
        };
  const options = sdk === "v2" ? { versionNegotiation: { mode: era } } : {};
  const client = new Client({ name, version: "1.0.0" }, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}
