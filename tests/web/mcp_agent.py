"""An AI agent asking for an invoice through the MCP server (official Python client).

Used by crates/cli/tests/web.rs before the browser test. Argument 1 is JSON:
  {"mcp": MCP endpoint URL, "token": MCP token, "recipient_id": entity id, "concept": line text}
Prints the held request's audit entry id as JSON.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CFG = json.loads(sys.argv[1])


async def main():
    headers = {"Authorization": f"Bearer {CFG['token']}"}
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(CFG["mcp"], http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(
                    "create_invoice",
                    {
                        "recipient_id": CFG["recipient_id"],
                        "supply_type": "services",
                        "lines": [
                            {"concept": CFG["concept"], "quantity": 3, "quantity_unit": "hours", "unit_price": 12500}
                        ],
                    },
                )
                assert not result.is_error, result
                content = result.structured_content
                assert content["status"] == "pending_approval", content
                print(json.dumps({"auditEntryId": content["auditEntryId"]}))


asyncio.run(main())
