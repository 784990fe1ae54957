"""`kb mcp` driven by the official MCP SDK's own client over stdio (a child process).

Client usage as in the SDK's documentation (modelcontextprotocol/python-sdk, README
"Writing MCP Clients": StdioServerParameters, stdio_client, ClientSession.initialize,
list_tools, call_tool)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import pytest

from tests.review.conftest import ReviewKb

mcp = pytest.importorskip("mcp")


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def payload(result: Any) -> Any:
    assert not result.is_error, text_of(result)
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) and set(content) == {"result"} else content
    return json.loads(text_of(result))


async def session_run(review_kb: ReviewKb) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbtools", "mcp", "--root", str(review_kb.root)],
        env={"HOME": os.environ["HOME"], "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"]},
    )
    seen: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            seen["search"] = payload(await session.call_tool("search_candidates", {"query": "connection pool"}))
            cid = seen["search"]["results"][0]["ref"]
            seen["everything"] = payload(await session.call_tool("search", {"query": "wal"}))
            seen["list"] = payload(await session.call_tool("list_candidates", {"tool": "claude"}))
            seen["read"] = payload(await session.call_tool("read_candidate", {"candidate_id": cid[:12]}))
            seen["missing"] = await session.call_tool("read_candidate", {"candidate_id": "0" * 64})
            seen["promote"] = payload(
                await session.call_tool("promote", {"candidate_id": cid, "slug": "psycopg-pool", "index": True})
            )
            seen["again"] = await session.call_tool("promote", {"candidate_id": cid})
            seen["raw"] = payload(await session.call_tool("read_raw", {"path": "psycopg-pool"}))
            seen["lint"] = payload(await session.call_tool("lint", {}))
            note = "zh-cn/" + next((review_kb.root / "src/content/note/zh-cn").glob("*.md")).name
            old = (review_kb.root / "src/content/note" / note).read_text()
            seen["keep"] = payload(
                await session.call_tool("check_retention", {"note": note, "new_text": old + "\nMore.\n"})
            )
            seen["drop"] = payload(
                await session.call_tool(
                    "check_retention", {"note": note, "new_text": "---\nkind: concept\n---\nGone.\n"}
                )
            )
            seen["cid"] = cid
    return seen


def test_an_mcp_client_searches_reads_promotes_lints_and_checks_a_rewrite(review_kb: ReviewKb) -> None:
    seen = anyio.run(session_run, review_kb)
    assert seen["tools"] == sorted(
        [
            "search",
            "search_candidates",
            "list_candidates",
            "read_candidate",
            "read_note",
            "read_raw",
            "lint",
            "check_retention",
            "promote",
        ]
    )
    cid = seen["cid"]
    assert cid == review_kb.candidate("psycopg2")["candidate_id"]
    assert any(r["kind"] == "candidate" for r in seen["everything"]["results"])
    assert [c["tool"] for c in seen["list"]["candidates"]] == ["claude"]
    assert seen["read"]["candidate"]["candidate_id"] == cid
    assert [m["role"] for m in seen["read"]["messages"]] == ["user", "assistant"]
    assert seen["missing"].is_error and "no candidate" in text_of(seen["missing"])
    assert seen["promote"]["path"] == "src/content/raw/zh-cn/psycopg-pool.md" and seen["promote"]["indexed"]
    assert seen["again"].is_error and "already promoted" in text_of(seen["again"])
    assert f'candidateId: "{cid}"' in seen["raw"]
    assert seen["lint"]["ok"], seen["lint"]
    assert seen["keep"]["refused"] is False and seen["keep"]["lost"] == []
    assert seen["drop"]["lost"], seen["drop"]
