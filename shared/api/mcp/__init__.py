"""The MCP protocol over the composed service: the server and its tools, page resources, the per-request envelope,
what an answer may cost, and how answers read as text."""
