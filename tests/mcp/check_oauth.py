"""Black-box check of MCP sign-in with OAuth, then the official Python MCP client.

Run by crates/cli/tests/oauth.rs against a real `invoicing serve` (and its MCP child).
Argument 1 is a JSON object:
  {"api": base URL, "mcp": MCP endpoint URL, "company": bootstrap JSON,
   "other": bootstrap JSON of a second company, "email": the owner's e-mail, "password": their one-time password,
   "newPassword": the password they choose at the forced change}
The sign-in goes through the real web forms with a cookie-keeping HTTP client.
Prints one line per step; exits non-zero (with a traceback) on the first failure.
"""

import asyncio
import base64
import hashlib
import html
import json
import re
import secrets
import sys
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

CFG = json.loads(sys.argv[1])
API = CFG["api"]
MCP = CFG["mcp"]
CO = CFG["company"]
MCP_ORIGIN = "{0.scheme}://{0.netloc}".format(urlsplit(MCP))
REDIRECT = "http://127.0.0.1:33418/callback"
BROWSER = httpx.Client(base_url=API, follow_redirects=False, timeout=30)


def step(msg):
    print(f"-- {msg}", flush=True)


def human(method, path, body=None, expect=(200, 201, 204)):
    headers = {"Authorization": f"Bearer {CO['token']}", "X-Human-Proof": CO["human_proof"]}
    r = httpx.request(method, API + path, headers=headers, json=body, timeout=30)
    assert r.status_code in expect, f"{method} {path}: {r.status_code} {r.text}"
    return r.json() if r.content else None


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def hidden(page, name):
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no field {name} in:\n{page[:3000]}"
    return html.unescape(m.group(1))


def query_of(location):
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def register(name="Test agent", uris=(REDIRECT,)):
    r = httpx.post(f"{API}/oauth/register", json={"client_name": name, "redirect_uris": list(uris), "token_endpoint_auth_method": "none"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["token_endpoint_auth_method"] == "none" and body["redirect_uris"] == list(uris), body
    assert r.headers["access-control-allow-origin"] == "*", r.headers
    return body["client_id"]


def authorize_params(client_id, challenge, state="st-1", **extra):
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": MCP,
    }
    params.update(extra)
    return {k: v for k, v in params.items() if v is not None}


def token(fields):
    r = httpx.post(f"{API}/oauth/token", data=fields)
    return r.status_code, r.json()


def check_metadata():
    step("the MCP server's protected-resource metadata names the service as authorization server")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        r = httpx.get(MCP_ORIGIN + path)
        assert r.status_code == 200, (path, r.status_code, r.text)
        prm = r.json()
        assert prm["resource"] == MCP, prm
        assert prm["authorization_servers"] == [API], prm
        assert r.headers["access-control-allow-origin"] == "*", r.headers

    step("the MCP server's 401 points at that metadata")
    r = httpx.post(MCP, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401, r.text
    www = r.headers["www-authenticate"]
    assert f'resource_metadata="{MCP_ORIGIN}/.well-known/oauth-protected-resource/mcp"' in www, www

    step("the authorization server's metadata (RFC 8414)")
    r = httpx.get(f"{API}/.well-known/oauth-authorization-server")
    assert r.status_code == 200, r.text
    asm = r.json()
    assert asm["issuer"] == API, asm
    assert asm["authorization_endpoint"] == f"{API}/oauth/authorize", asm
    assert asm["token_endpoint"] == f"{API}/oauth/token", asm
    assert asm["registration_endpoint"] == f"{API}/oauth/register", asm
    assert asm["code_challenge_methods_supported"] == ["S256"], asm
    assert asm["token_endpoint_auth_methods_supported"] == ["none"], asm
    assert asm["grant_types_supported"] == ["authorization_code", "refresh_token"], asm
    r = httpx.options(f"{API}/oauth/token", headers={"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "*", r.headers


def check_registration():
    step("registration refuses what it must (RFC 7591 errors)")
    bad = [
        ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://example.com/cb#x"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"redirect_uris": [f"https://c.example/{i}" for i in range(11)]}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "client_name": "x" * 101}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    ]
    for body, error in bad:
        r = httpx.post(f"{API}/oauth/register", json=body)
        assert r.status_code == 400 and r.json()["error"] == error, (body, r.status_code, r.text)
    r = httpx.post(f"{API}/oauth/register", content=b"{" + b" " * 20000 + b"}", headers={"Content-Type": "application/json"})
    assert r.status_code == 413, (r.status_code, r.text)


def sign_in_to_consent(client_id, challenge):
    step("signed out, the authorization goes through the real sign-in and the forced password change")
    r = BROWSER.get("/oauth/authorize", params=authorize_params(client_id, challenge))
    assert r.status_code in (302, 303) and r.headers["location"].startswith("/login?next="), (r.status_code, r.headers)
    page = BROWSER.get(r.headers["location"]).text
    r = BROWSER.post(
        "/login",
        data={"csrf": hidden(page, "csrf"), "next": hidden(page, "next"), "email": CFG["email"], "password": CFG["password"]},
    )
    assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
    assert r.headers["location"].startswith("/oauth/authorize?"), r.headers
    r = BROWSER.get(r.headers["location"])
    assert r.status_code in (302, 303) and r.headers["location"].startswith("/password?next="), (r.status_code, r.headers)
    page = BROWSER.get(r.headers["location"]).text
    r = BROWSER.post(
        "/password",
        data={
            "csrf": hidden(page, "csrf"),
            "next": hidden(page, "next"),
            "current": CFG["password"],
            "new": CFG["newPassword"],
            "confirm": CFG["newPassword"],
        },
    )
    assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
    assert r.headers["location"].startswith("/oauth/authorize?"), r.headers
    return consent_page(r.headers["location"])


def consent_page(location):
    r = BROWSER.get(location)
    assert r.status_code == 200, (r.status_code, r.headers, r.text[:2000])
    page = r.text
    assert "Test agent" in page and "wait for your approval" in page, page
    company = human("GET", "/v1/company")
    assert html.escape(company["name"]) in page or company["name"] in page, page
    assert "form-action 'self' http://127.0.0.1:33418" in r.headers["content-security-policy"], r.headers
    return page


def answer(page, decision="allow", csrf=None, company=None):
    fields = {
        k: hidden(page, k)
        for k in ("client_id", "redirect_uri", "response_type", "code_challenge", "code_challenge_method", "state", "resource")
    }
    fields["company"] = hidden(page, "company") if company is None else company
    fields["csrf"] = hidden(page, "csrf") if csrf is None else csrf
    fields["decision"] = decision
    return BROWSER.post("/oauth/authorize", data=fields)


def new_code(client_id, state="st-2"):
    """Signed in already: authorize, allow, and return (code, verifier)."""
    verifier, challenge = pkce()
    r = BROWSER.get("/oauth/authorize", params=authorize_params(client_id, challenge, state=state))
    assert r.status_code == 200, (r.status_code, r.headers)
    r = answer(r.text)
    assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
    q = query_of(r.headers["location"])
    assert r.headers["location"].startswith(REDIRECT + "?"), r.headers
    assert q["state"] == state and "code" in q, q
    return q["code"], verifier


def exchange(client_id, code, verifier):
    return token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id, "code_verifier": verifier, "resource": MCP})


def mcp_status(access_token):
    r = httpx.post(
        MCP,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {access_token}"},
    )
    return r.status_code


def check_authorize_errors(client_id):
    verifier, challenge = pkce()
    step("unknown client and unregistered redirect_uri: an error page, never a redirect")
    for params in (
        authorize_params("0190c0de-0000-7000-8000-000000000001", challenge),
        authorize_params(client_id, challenge, redirect_uri="http://127.0.0.1:33418/other"),
        authorize_params(client_id, challenge, redirect_uri="https://evil.example/cb"),
    ):
        r = BROWSER.get("/oauth/authorize", params=params)
        assert r.status_code == 400 and "location" not in r.headers, (params, r.status_code, r.headers)

    step("missing PKCE, another method, a wrong response type or resource: error= back to the client")
    for extra, error in (
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"resource": "http://127.0.0.1:1/elsewhere"}, "invalid_target"),
    ):
        r = BROWSER.get("/oauth/authorize", params=authorize_params(client_id, challenge, state="s-err", **extra))
        assert r.status_code in (302, 303), (extra, r.status_code, r.text[:500])
        q = query_of(r.headers["location"])
        assert r.headers["location"].startswith(REDIRECT + "?"), r.headers
        assert q["error"] == error and q["state"] == "s-err", (extra, q)


def check_flow():
    client_id = register()
    check_authorize_errors(client_id)
    verifier, challenge = pkce()
    page = sign_in_to_consent(client_id, challenge)

    step("the consent form is CSRF-protected")
    r = answer(page, csrf="forged")
    assert r.status_code == 403, (r.status_code, r.headers)

    step("Allow sends the browser back with a code and the state")
    r = answer(page)
    assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
    q = query_of(r.headers["location"])
    assert q["state"] == "st-1", q

    step("a wrong code_verifier is invalid_grant, and spends the code")
    status, body = exchange(client_id, q["code"], pkce()[0])
    assert status == 400 and body["error"] == "invalid_grant", body
    status, body = exchange(client_id, q["code"], verifier)
    assert status == 400 and body["error"] == "invalid_grant", body

    step("other refusals: missing verifier, another client, another redirect_uri, unknown code, grant type")
    code, verifier = new_code(client_id)
    status, body = token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id})
    assert status == 400 and body["error"] == "invalid_request", body
    other = register(name="Other agent")
    code, verifier = new_code(client_id)
    status, body = exchange(other, code, verifier)
    assert status == 400 and body["error"] == "invalid_grant", body
    code, verifier = new_code(client_id)
    status, body = token({"grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1:33418/x", "client_id": client_id, "code_verifier": verifier})
    assert status == 400 and body["error"] == "invalid_grant", body
    status, body = exchange(client_id, "no-such-code", verifier)
    assert status == 400 and body["error"] == "invalid_grant", body
    status, body = token({"grant_type": "password", "client_id": client_id})
    assert status == 400 and body["error"] == "unsupported_grant_type", body

    step("Deny tells the client access_denied")
    _, challenge = pkce()
    r = BROWSER.get("/oauth/authorize", params=authorize_params(client_id, challenge, state="st-deny"))
    r = answer(r.text, decision="deny")
    q = query_of(r.headers["location"])
    assert q == {"error": "access_denied", "error_description": q["error_description"], "state": "st-deny"}, q

    step("the right verifier gets an expiring mcp token and a refresh token")
    code, verifier = new_code(client_id)
    status, first = exchange(client_id, code, verifier)
    assert status == 200, first
    assert first["token_type"] == "Bearer" and first["expires_in"] == 3600 and first["refresh_token"], first
    assert mcp_status(first["access_token"]) == 200

    step("it is listed with the client's name")
    tokens = human("GET", "/v1/tokens?limit=100")["data"]
    listed = [t for t in tokens if t["oauth_client"] == "Test agent"]
    assert len(listed) == 1 and listed[0]["kind"] == "mcp" and listed[0]["expires_at"], tokens

    step("the code presented again is invalid_grant and revokes the token it gave")
    status, body = exchange(client_id, code, verifier)
    assert status == 400 and body["error"] == "invalid_grant", body
    assert mcp_status(first["access_token"]) == 401
    status, body = token({"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id})
    assert status == 400 and body["error"] == "invalid_grant", body

    step("a refresh rotates the refresh token")
    code, verifier = new_code(client_id)
    status, second = exchange(client_id, code, verifier)
    assert status == 200, second
    status, refreshed = token({"grant_type": "refresh_token", "refresh_token": second["refresh_token"], "client_id": client_id})
    assert status == 200 and refreshed["refresh_token"] != second["refresh_token"], refreshed
    assert mcp_status(refreshed["access_token"]) == 200
    status, body = token({"grant_type": "refresh_token", "refresh_token": second["refresh_token"], "client_id": client_id})
    assert status == 400 and body["error"] == "invalid_grant", body
    status, body = token({"grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"], "client_id": other})
    assert status == 400 and body["error"] == "invalid_grant", body

    step("revoking one token over the API ends it, the other token and the refresh token of that sign-in")
    tokens = human("GET", "/v1/tokens?limit=100")["data"]
    listed = [t for t in tokens if t["oauth_client"] == "Test agent"]
    assert len(listed) == 2, listed
    human("DELETE", f"/v1/tokens/{listed[0]['id']}")
    tokens = human("GET", "/v1/tokens?limit=100")["data"]
    assert not [t for t in tokens if t["oauth_client"] == "Test agent"], tokens
    assert mcp_status(refreshed["access_token"]) == 401
    assert mcp_status(second["access_token"]) == 401
    status, body = token({"grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"], "client_id": client_id})
    assert status == 400 and body["error"] == "invalid_grant", body


class Memory:
    """Token storage of the SDK's OAuth client, in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def check_sdk():
    step("the official client discovers, registers and signs in on its own, then calls tools")
    customer = human(
        "POST",
        "/v1/entities",
        body={"name": "OAuth Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}},
    )
    redirected = {}

    async def redirect_handler(url):
        # The person's browser: already signed in, it gets the consent page and allows.
        assert url.startswith(f"{API}/oauth/authorize?"), url
        r = BROWSER.get(url[len(API):])
        assert r.status_code == 200, (r.status_code, r.headers, r.text[:2000])
        assert "SDK agent" in r.text, r.text
        r = answer(r.text)
        assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
        redirected["to"] = r.headers["location"]

    async def callback_handler():
        q = query_of(redirected["to"])
        return AuthorizationCodeResult(code=q["code"], state=q.get("state"))

    storage = Memory()
    auth = OAuthClientProvider(
        server_url=MCP,
        client_metadata=OAuthClientMetadata(
            client_name="SDK agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with create_mcp_http_client(auth=auth) as client:
        async with streamable_http_client(MCP, http_client=client) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert "create_invoice" in tools, tools
                before = {e["id"] for e in human("GET", "/v1/ai-audit?limit=500")["data"]}
                res = await s.call_tool(
                    "create_invoice",
                    {"recipient_id": customer["id"], "supply_type": "services", "lines": [{"concept": "Agent work", "quantity": 1, "unit_price": 10000}]},
                )
                assert not res.is_error, res
                assert res.structured_content["status"] == "pending_approval", res.structured_content
                entry = res.structured_content["auditEntryId"]
                after = {e["id"] for e in human("GET", "/v1/ai-audit?limit=500")["data"]}
                assert after - before == {entry}, (before, after)
                held = human("GET", f"/v1/ai-audit/{entry}")
                assert held["status"] == "pending", held
    assert storage.tokens is not None and storage.client is not None
    tokens = human("GET", "/v1/tokens?limit=100")["data"]
    assert any(t["oauth_client"] == "SDK agent" for t in tokens), tokens
    print(f"   held {entry} for approval")


def check_several_companies():
    step("a member of several companies picks the company on the consent page")
    other = CFG["other"]
    headers = {"Authorization": f"Bearer {other['token']}", "X-Human-Proof": other["human_proof"]}
    r = httpx.post(f"{API}/v1/members", headers=headers, json={"email": CFG["email"], "kind": "password"})
    assert r.status_code == 201, r.text
    client_id = register(name="Test agent")
    verifier, challenge = pkce()
    r = BROWSER.get("/oauth/authorize", params=authorize_params(client_id, challenge, state="st-co"))
    assert r.status_code == 200, (r.status_code, r.headers)
    page = r.text
    radios = re.findall(r'type="radio" name="company" id="company-\d" value="([^"]+)"', page)
    assert sorted(radios) == sorted([CO["company_id"], other["company_id"]]), (radios, page)
    r = answer(page, company="0190c0de-0000-7000-8000-00000000dead")
    assert r.status_code == 400 and "location" not in r.headers, (r.status_code, r.headers)
    r = answer(page, company=other["company_id"])
    assert r.status_code in (302, 303), (r.status_code, r.text[:2000])
    q = query_of(r.headers["location"])
    status, issued = exchange(client_id, q["code"], verifier)
    assert status == 200, issued
    r = httpx.get(f"{API}/v1/session", headers={"Authorization": f"Bearer {issued['access_token']}"})
    assert r.status_code == 200 and r.json()["company"]["id"] == other["company_id"], r.text


def check_registration_share():
    step("one address registers at most 10 clients an hour (others keep theirs)")
    for _ in range(11):
        r = httpx.post(f"{API}/oauth/register", json={"client_name": "Flood", "redirect_uris": [REDIRECT]})
        if r.status_code != 201:
            break
    assert r.status_code == 429 and r.json()["error"] == "temporarily_unavailable", (r.status_code, r.text)
    assert r.headers["retry-after"] == "3600", r.headers


async def main():
    check_metadata()
    check_registration()
    check_flow()
    await check_sdk()
    check_several_companies()
    check_registration_share()
    print("ok")


asyncio.run(main())
