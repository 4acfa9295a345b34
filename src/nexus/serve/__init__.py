"""The servers, thin layers over the facade (`nexus.Nexus`): `openai` (an OpenAI-compatible tool-routing proxy,
filter and route modes), `mcp` (an MCP gateway over an `mcpServers` config), `security` (what both enforce) and
`scripted` (a scripted OpenAI-compatible upstream for tests and `nexus bench serve`). Web and MCP libraries are
imported inside the factories, so importing this package stays light."""
