"""A stdio MCP server that starts and answers but exposes no tools (the `mcp` SDK's MCPServer
with nothing registered): `-T agent_mcp="python tests/support/mcp_no_tools.py"` must be refused
in one line, not run a write pass with no memory."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

if __name__ == "__main__":
    MCPServer("memevals-no-tools").run("stdio")
