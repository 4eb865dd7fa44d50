"""An MCP tool server written with the official SDK, for the tests: `python server.py stdio` or
`python server.py http PORT` (127.0.0.1 only). Its tools echo text, return an image, and report
a failure the way MCP tools do (a result with isError). With `--extra` last it also has a tool
whose output is as long as asked (for the 20 KB cap) and two whose names sanitise to one."""

from __future__ import annotations

import base64
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent

# A 1x1 PNG: small enough to compare whole.
PIXEL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5d5b3f90000000049454e44ae426082"
    )
).decode("ascii")

server = MCPServer("testkit")


@server.tool(description="Echo the text back, upper-cased")
def shout(text: str, times: int = 1) -> str:
    return " ".join([text.upper()] * times)


@server.tool(description="A one-pixel picture with a caption")
def pixel() -> list[TextContent | ImageContent]:
    return [TextContent(type="text", text="a pixel"), ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")]


@server.tool(description="Always fails")
def broken() -> str:
    raise ToolError("the gizmo is jammed")


def flood(size: int) -> str:
    """`size` characters: lines of digits, then a last line that says it is the end."""
    body = "".join(f"{n % 10}" * 99 + "\n" for n in range(size // 100 + 1))
    return body[: max(0, size - 4)] + "\nEND"


def add_extra_tools() -> None:
    server.tool(description="Print a long report of the given size")(flood)
    server.tool(name="weather.now", description="The weather now")(lambda: "sunny")
    server.tool(name="weather-now", description="The weather now, again")(lambda: "rainy")


if __name__ == "__main__":
    if sys.argv[-1] == "--extra":
        add_extra_tools()
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
