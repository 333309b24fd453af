"""Black-box check of the MCP server with the official Python MCP client.

Run by crates/cli/tests/mcp.rs against a real `invoicing serve` (and its MCP
child). Argument 1 is a JSON object:
  {"mode": "core" | "reports", "api": base URL, "mcp": MCP endpoint URL,
   "company": bootstrap JSON, "other": bootstrap JSON of a second company}
Prints one line per step; exits non-zero (with a traceback) on the first failure.
"""

import asyncio
import contextlib
import json
import sys
import uuid

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

CFG = json.loads(sys.argv[1])
API = CFG["api"]
MCP = CFG["mcp"]
CO = CFG["company"]
OTHER = CFG["other"]

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "check", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def step(msg):
    print(f"-- {msg}", flush=True)


def human(company):
    return {"Authorization": f"Bearer {company['token']}", "X-Human-Proof": company["human_proof"]}


def http(method, path, company=CO, body=None, expect=(200, 201, 204)):
    r = httpx.request(method, API + path, headers=human(company), json=body, timeout=30)
    assert r.status_code in expect, f"{method} {path}: {r.status_code} {r.text}"
    return r.json() if r.content and r.headers.get("content-type", "").startswith("application/json") else None


def audit_ids(company=CO):
    return {e["id"] for e in http("GET", "/v1/ai-audit?limit=500", company)["data"]}


def raw_mcp(auth=None, method="POST"):
    headers = dict(MCP_HEADERS)
    if auth is not None:
        headers["Authorization"] = auth
    return httpx.request(method, MCP, headers=headers, json=INIT if method == "POST" else None, timeout=30)


def check_refused(resp, what):
    assert resp.status_code == 401, f"{what}: {resp.status_code} {resp.text}"
    www = resp.headers.get("www-authenticate", "")
    assert www.startswith('Bearer realm="invoicing"'), f"{what}: {resp.headers}"
    assert "error_description=" in www and "OAuth" in www, f"{what}: {www}"
    # A JSON-RPC error that tells a person what to do (MCP clients show its message).
    assert resp.headers.get("content-type", "").startswith("application/json"), f"{what}: {resp.headers}"
    error = resp.json()["error"]
    assert error["code"] == -32001, f"{what}: {resp.text}"
    assert "Authorization: Bearer <token>" in error["message"], f"{what}: {resp.text}"
    assert "mcp_token" in error["message"], f"{what}: {resp.text}"


async def check_sdk_shows_why():
    step("the official client shows why it was refused, not only that it was")
    try:
        async with Session(str(uuid.uuid4())):
            pass
    except BaseException as e:  # noqa: BLE001 (anyio may wrap it in an exception group)
        errors = list(getattr(e, "exceptions", [e]))
        while any(hasattr(x, "exceptions") for x in errors):
            errors = [y for x in errors for y in getattr(x, "exceptions", [x])]
        messages = " | ".join(str(x) for x in errors)
        assert "Authorization: Bearer <token>" in messages, messages
        assert "support OAuth sign in on their own" in messages, messages
        print(f"   {messages[:160]}")
    else:
        raise AssertionError("an unknown token opened a session")


class Session:
    """One MCP client session with a bearer token."""

    def __init__(self, token):
        self.token = token

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        await self.stack.__aenter__()
        try:
            client = await self.stack.enter_async_context(
                create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
            )
            read, write = await self.stack.enter_async_context(streamable_http_client(MCP, http_client=client))
            self.session = await self.stack.enter_async_context(ClientSession(read, write))
            self.init = await self.session.initialize()
        except BaseException:
            await self.stack.__aexit__(*sys.exc_info())
            raise
        return self.session

    async def __aexit__(self, *exc):
        return await self.stack.__aexit__(*exc)


async def read_json(s, uri):
    res = await s.read_resource(uri)
    assert len(res.contents) == 1, res
    c = res.contents[0]
    assert c.mime_type == "application/json", c
    assert str(c.uri) == uri, c
    return json.loads(c.text)


async def expect_not_found(s, uri):
    try:
        await s.read_resource(uri)
    except MCPError as e:
        assert e.code in (-32002, -32602), (uri, e.code, e.message)
        assert "not found" in e.message.lower(), (uri, e.message)
        return
    raise AssertionError(f"{uri} was readable")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def held_entry(result, what):
    assert not result.is_error, f"{what}: {text_of(result)}"
    entry = result.structured_content["auditEntryId"]
    assert result.structured_content["status"] == "pending_approval", result.structured_content
    assert entry in text_of(result), text_of(result)
    assert "approve" in text_of(result), text_of(result)
    return entry


def approve(entry):
    done = http("POST", f"/v1/ai-audit/{entry}/approve")
    assert done["status"] == "approved", done
    assert done["source"] == "mcp", done
    return done


def check_auth():
    step("unauthenticated and malformed requests are refused with 401 + WWW-Authenticate: Bearer")
    check_refused(raw_mcp(), "no Authorization")
    check_refused(raw_mcp(method="GET"), "GET without Authorization")
    check_refused(raw_mcp("Basic dXNlcjpwYXNz"), "Basic scheme")
    check_refused(raw_mcp("Bearer not-a-uuid"), "malformed token")
    check_refused(raw_mcp(f"Bearer {uuid.uuid4()}"), "unknown token")
    ok = raw_mcp(f"Bearer {CO['mcp_token']}")
    assert ok.status_code == 200, (ok.status_code, ok.text)
    assert "mcp-session-id" not in ok.headers, "stateless: no session id"


async def check_listings(s, init):
    step("initialize: server info and instructions")
    assert init.server_info.name == "invoicing", init.server_info
    assert "approv" in (init.instructions or ""), init.instructions

    step("resources and templates")
    resources = (await s.list_resources()).resources
    assert sorted(str(r.uri) for r in resources) == sorted(
        f"invoicing://{p}" for p in ["company", "entities", "invoices", "proformas", "expenses", "reports", "recurring-invoices"]
    ), resources
    assert all(r.mime_type == "application/json" for r in resources), resources
    templates = (await s.list_resource_templates()).resource_templates
    assert sorted(t.uri_template for t in templates) == sorted(
        f"invoicing://{p}"
        for p in [
            "entities/{id}",
            "entities/{id}/invoices",
            "entities/{id}/expenses",
            "invoices/{id}",
            "invoices/{id}/einvoice",
            "proformas/{id}",
            "expenses/{id}",
            "reports/{id}",
            "recurring-invoices/{id}",
        ]
    ), templates
    for t in templates:
        expected = "application/xml" if t.uri_template.endswith("/einvoice") else "application/json"
        assert t.mime_type == expected, t

    step("tools: names, schemas and annotations")
    tools = {t.name: t for t in (await s.list_tools()).tools}
    assert sorted(tools) == ["create_expense", "create_invoice", "delete_report", "generate_report"], tools
    req = {n: t.input_schema["required"] for n, t in tools.items()}
    assert req["create_invoice"] == ["recipient_id", "supply_type", "lines"], req
    assert req["create_expense"] == ["supplier_id", "invoice_reference", "lines"], req
    assert req["generate_report"] == ["report_type", "period_start", "period_end"], req
    assert req["delete_report"] == ["report_id"], req
    inv = tools["create_invoice"].input_schema["properties"]
    assert inv["supply_type"]["enum"] == ["services", "goods"], inv
    assert inv["lines"]["items"]["required"] == ["concept"], inv
    line = inv["lines"]["items"]["properties"]
    assert {k: line[k]["type"] for k in line} == {
        "concept": "string",
        "quantity": "number",
        "quantity_unit": "string",
        "unit_price": "integer",
        "unit_unit": "string",
        "is_tax": "boolean",
        "tax_amount": "integer",
        "subtotal": "integer",
    }, line
    exp = tools["create_expense"].input_schema["properties"]
    assert exp["lines"]["items"]["required"] == ["concept", "subtotal"], exp
    assert exp["expense_date"]["format"] == "date-time", exp
    rep = tools["generate_report"].input_schema["properties"]
    assert rep["report_type"]["enum"] == [
        "business_overview",
        "vat_summary",
        "profit_loss",
        "client_revenue",
        "expense_supplier",
    ], rep
    assert rep["period_start"]["format"] == rep["period_end"]["format"] == "date-time", rep
    assert rep["locales"] == {"type": "array", "items": {"type": "string"}, "description": rep["locales"]["description"]}
    for name, t in tools.items():
        a = t.annotations
        assert a.read_only_hint is False and a.idempotent_hint is False, (name, a)
        assert a.destructive_hint is (name == "delete_report"), (name, a)
        assert "cents" in t.description or name.endswith("_report"), (name, t.description)
        assert "approve" in t.description, (name, t.description)


def settle(company=CO):
    """Completes the registration and accepts the legal documents: the company may issue."""
    http(
        "POST",
        "/v1/company/registration",
        company,
        body={
            "name": "MCP Ltd",
            "fiscal_id": "IE6388047V",
            "email": "billing@mcp.example",
            "phone": "+353 1 555 0100",
            "address": {"lines": ["1 Main Street"], "zipcode": "D02 X285", "city": "Dublin", "country": "IE"},
        },
    )
    for doc in http("GET", "/v1/agreements", company)["data"]:
        http("POST", f"/v1/agreements/{doc['id']}/accept", company)


def seed():
    step("data created over HTTP by a person: entities, a draft invoice, a proforma, an expense")
    customer = http(
        "POST",
        "/v1/entities",
        body={"name": "MCP Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}},
    )
    supplier = http("POST", "/v1/entities", body={"name": "MCP Supplier SL", "type": "ES:SL", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})
    lines = [{"concept": "Consulting", "quantity": 2, "unit_price": 15000}, {"concept": "Travel", "subtotal": 4000}]
    draft = http("POST", "/v1/invoices", body={"recipient_id": customer["id"], "lines": lines})
    proforma = http("POST", "/v1/proformas", body={"recipient_id": customer["id"], "lines": lines[:1]})
    expense = http(
        "POST",
        "/v1/expenses",
        body={"supplier_id": supplier["id"], "invoice_reference": "F-2026-001", "lines": [{"concept": "Hosting", "subtotal": 9900}]},
    )
    other_entity = http(
        "POST", "/v1/entities", company=OTHER, body={"name": "Not yours", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}
    )
    other_invoice = http(
        "POST", "/v1/invoices", company=OTHER, body={"recipient_id": other_entity["id"], "lines": [{"concept": "x", "subtotal": 1}]}
    )
    return customer, supplier, draft, proforma, expense, other_entity, other_invoice


async def check_reads(s, customer, supplier, draft, proforma, expense, other_entity, other_invoice):
    step("read every resource")
    company = await read_json(s, "invoicing://company")
    assert company["id"] == CO["company_id"], company
    entities = await read_json(s, "invoicing://entities")
    ids = {e["id"] for e in entities["data"]}
    assert {customer["id"], supplier["id"]} <= ids and other_entity["id"] not in ids, entities
    assert entities["truncated"] is False and entities["count"] == len(entities["data"]), entities
    for uri, doc in [("invoicing://invoices", draft), ("invoicing://proformas", proforma), ("invoicing://expenses", expense)]:
        listed = await read_json(s, uri)
        item = next(i for i in listed["data"] if i["id"] == doc["id"])
        assert item["lineCount"] == doc["lineCount"] >= 1, (uri, item)
        assert "lines" not in item, (uri, "list items carry lineCount, not lines")
    invoices = await read_json(s, "invoicing://invoices")
    assert other_invoice["id"] not in {i["id"] for i in invoices["data"]}
    one = await read_json(s, f"invoicing://entities/{customer['id']}")
    assert one["name"] == "MCP Customer Ltd", one
    billed = await read_json(s, f"invoicing://entities/{customer['id']}/invoices")
    assert [i["id"] for i in billed["data"]] == [draft["id"]], billed
    received = await read_json(s, f"invoicing://entities/{supplier['id']}/expenses")
    assert [e["id"] for e in received["data"]] == [expense["id"]], received
    none = await read_json(s, f"invoicing://entities/{supplier['id']}/invoices")
    assert none["data"] == [], none
    inv = await read_json(s, f"invoicing://invoices/{draft['id']}")
    assert len(inv["lines"]) == 2 and inv["lines"][0]["unit_price"] == 15000, inv
    pro = await read_json(s, f"invoicing://proformas/{proforma['id']}")
    assert len(pro["lines"]) == 1, pro
    exp = await read_json(s, f"invoicing://expenses/{expense['id']}")
    assert exp["lines"][0]["subtotal"] == 9900, exp

    assert inv["deliveries"] == [], inv

    step("recurring invoices, and the deliveries of an issued invoice")
    recurring = http(
        "POST",
        "/v1/recurring-invoices",
        body={"recipient_id": customer["id"], "lines": [{"concept": "Support", "subtotal": 5000}], "frequency": "monthly", "start_date": "2099-01-01"},
    )
    listed = await read_json(s, "invoicing://recurring-invoices")
    assert [r["id"] for r in listed["data"]] == [recurring["id"]], listed
    one = await read_json(s, f"invoicing://recurring-invoices/{recurring['id']}")
    assert one["status"] == "active" and one["next_run_date"] == "2099-01-01", one
    assert one["lines"][0]["concept"] == "Support", one
    await expect_not_found(s, f"invoicing://recurring-invoices/{uuid.uuid4()}")
    settle()
    issued = http("POST", "/v1/invoices", body={"recipient_id": customer["id"], "lines": [{"concept": "Sent", "subtotal": 100}]})
    issued = http("POST", f"/v1/invoices/{issued['id']}/issue")
    http("POST", f"/v1/invoices/{issued['id']}/send", body={"to": ["ap@customer.example"]})
    inv = await read_json(s, f"invoicing://invoices/{issued['id']}")
    assert [d["kind"] for d in inv["deliveries"]] == ["send"], inv
    assert inv["deliveries"][0]["to"] == ["ap@customer.example"], inv
    assert inv["deliveries"][0]["status"] in ("queued", "sent"), inv
    http("DELETE", f"/v1/recurring-invoices/{recurring['id']}")

    step("another company's ids and unknown URIs are resource-not-found")
    await expect_not_found(s, f"invoicing://entities/{other_entity['id']}")
    await expect_not_found(s, f"invoicing://entities/{other_entity['id']}/invoices")
    await expect_not_found(s, f"invoicing://invoices/{other_invoice['id']}")
    await expect_not_found(s, f"invoicing://invoices/{uuid.uuid4()}")
    await expect_not_found(s, "invoicing://nothing-here")


async def check_tools(s, customer, supplier):
    step("create_invoice is held; approved over HTTP it creates the draft, origin and audit source mcp")
    before = audit_ids()
    res = await s.call_tool(
        "create_invoice",
        {
            "recipient_id": customer["id"],
            "supply_type": "services",
            "lines": [{"concept": "Agent work", "quantity": 1.5, "quantity_unit": "hours", "unit_price": 10000}],
        },
    )
    entry = held_entry(res, "create_invoice")
    assert audit_ids() - before == {entry}
    done = approve(entry)
    invoice = await read_json(s, f"invoicing://invoices/{done['resourceId']}")
    assert invoice["origin"] == "mcp" and invoice["status"] == "draft", invoice
    assert invoice["lines"][0]["subtotal"] == 15000, invoice
    assert http("GET", f"/v1/ai-audit/{entry}")["source"] == "mcp"

    step("create_expense is held too")
    res = await s.call_tool(
        "create_expense",
        {
            "supplier_id": supplier["id"],
            "invoice_reference": "F-2026-002",
            "expense_date": "2026-03-31T00:00:00Z",
            "category": "software",
            "lines": [{"concept": "Licence", "quantity": 1, "unit_price": 5000, "subtotal": 5000}],
        },
    )
    held_entry(res, "create_expense")

    step("business errors come back as tool errors with the API's message, and record nothing")
    before = audit_ids()
    bogus = str(uuid.uuid4())
    res = await s.call_tool("create_invoice", {"recipient_id": bogus, "supply_type": "goods", "lines": [{"concept": "x"}]})
    assert res.is_error, text_of(res)
    assert "recipient" in text_of(res) and "Nothing was recorded" in text_of(res), text_of(res)
    res = await s.call_tool(
        "create_expense",
        {"supplier_id": supplier["id"], "invoice_reference": "F-2026-001", "lines": [{"concept": "Again", "subtotal": 1}]},
    )
    assert res.is_error, text_of(res)
    assert "F-2026-001" in text_of(res) or "reference" in text_of(res).lower(), text_of(res)
    res = await s.call_tool("create_invoice", {"recipient_id": customer["id"], "supply_type": "food", "lines": []})
    assert res.is_error and "food" in text_of(res), text_of(res)
    assert audit_ids() == before, "nothing recorded for refused calls"


async def check_source(customer):
    step("through the MCP server a standard token is recorded as source mcp; the bare header over HTTP is not")
    async with Session(CO["token"]) as s:
        res = await s.call_tool(
            "create_invoice",
            {"recipient_id": customer["id"], "supply_type": "services", "lines": [{"concept": "Via MCP", "subtotal": 100}]},
        )
        entry = held_entry(res, "create_invoice with a standard token")
    assert http("GET", f"/v1/ai-audit/{entry}")["source"] == "mcp"
    forged = httpx.request(
        "PATCH",
        API + "/v1/company",
        headers={"Authorization": f"Bearer {CO['token']}", "X-Invoicing-Source": "mcp"},
        json={"friendlyName": "Forged source"},
        timeout=30,
    )
    assert forged.status_code == 202, (forged.status_code, forged.text)
    forged_entry = http("GET", f"/v1/ai-audit/{forged.json()['auditEntryId']}")
    assert forged_entry["source"] == "api", forged_entry


async def check_revocation():
    step("a revoked token stops working on the next MCP call")
    created = http("POST", "/v1/tokens", body={"description": "revoke me", "kind": "mcp"})
    async with Session(created["token"]) as s:
        await s.list_resources()
        http("DELETE", f"/v1/tokens/{created['id']}")
        try:
            await s.list_resources()
        except Exception as e:  # the transport turns the 401 into an error
            print(f"   refused after revocation: {type(e).__name__}: {e}")
        else:
            raise AssertionError("a revoked token still listed resources")
    check_refused(raw_mcp(f"Bearer {created['token']}"), "revoked token")


async def check_reports(s):
    step("generate_report: a bad period is refused, a good one is held, approved and readable")
    before = audit_ids()
    res = await s.call_tool(
        "generate_report",
        {"report_type": "vat_summary", "period_start": "2026-04-01T00:00:00Z", "period_end": "2026-01-01T00:00:00Z"},
    )
    assert res.is_error and "Nothing was recorded" in text_of(res), text_of(res)
    assert audit_ids() == before
    res = await s.call_tool(
        "generate_report",
        {
            "report_type": "business_overview",
            "period_start": "2026-01-01T00:00:00Z",
            "period_end": "2026-04-01T00:00:00Z",
            "locales": ["en", "es_ES"],
        },
    )
    entry = held_entry(res, "generate_report")
    approve(entry)
    reports = await read_json(s, "invoicing://reports")
    assert len(reports["data"]) == 2, reports
    report = reports["data"][0]
    one = await read_json(s, f"invoicing://reports/{report['id']}")
    assert one["report_type"] == "business_overview" and one["status"] in ("queued", "rendering", "ready", "failed"), one

    step("delete_report is held; approved, the report is gone")
    entry = held_entry(await s.call_tool("delete_report", {"report_id": report["id"]}), "delete_report")
    approve(entry)
    await expect_not_found(s, f"invoicing://reports/{report['id']}")
    res = await s.call_tool("delete_report", {"report_id": str(uuid.uuid4())})
    assert res.is_error, text_of(res)


async def main():
    check_auth()
    await check_sdk_shows_why()
    if CFG["mode"] == "reports":
        async with Session(CO["mcp_token"]) as s:
            await check_reports(s)
    else:
        data = seed()
        session = Session(CO["mcp_token"])
        async with session as s:
            await check_listings(s, session.init)
            await check_reads(s, *data)
            await check_tools(s, data[0], data[1])
        await check_source(data[0])
        await check_revocation()
    print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
