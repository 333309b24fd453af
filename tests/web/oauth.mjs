// An MCP client's OAuth sign-in in a real browser: the authorization request of a
// registered client, the sign-in with the forced password change, the consent page,
// and Allow, which must take the browser to the client's loopback redirect URI (the
// consent page's Content-Security-Policy lets its form lead there), with a code the
// token endpoint exchanges; the tokens page then names the client, and revoking the
// token there ends the sign-in. Run by crates/cli/tests/oauth.rs.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";

import { scenario, step } from "./support.mjs";

await scenario(async ({ cfg, page, shot }) => {
  // The client's redirect listener on 127.0.0.1.
  const got = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    // (Chromium may ask for /favicon.ico too.)
    if (url.pathname === "/callback") got.push(url);
    res.end("signed in");
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const redirect = `http://127.0.0.1:${server.address().port}/callback`;
  try {
    step("a client registers and sends the browser to the authorize endpoint");
    const reg = await fetch(`${cfg.base}/oauth/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ client_name: "Browser agent", redirect_uris: [redirect] }),
    });
    assert.equal(reg.status, 201);
    const clientId = (await reg.json()).client_id;
    const verifier = randomBytes(32).toString("base64url");
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    const query = new URLSearchParams({
      response_type: "code", client_id: clientId, redirect_uri: redirect, state: "xyz",
      code_challenge: challenge, code_challenge_method: "S256",
    });
    await page.goto(`${cfg.base}/oauth/authorize?${query}`);

    step("sign-in, then the forced password change, then the consent page");
    await page.getByLabel("E-mail").fill(cfg.email);
    await page.getByLabel("Password").fill(cfg.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/password?next=**");
    await page.getByLabel("Current password").fill(cfg.password);
    await page.getByLabel(/^New password \(at least/).fill(cfg.newPassword);
    await page.getByLabel("New password again").fill(cfg.newPassword);
    await page.getByRole("button", { name: "Save password" }).click();
    await page.waitForURL("**/oauth/authorize?**");
    await assert.doesNotReject(page.getByText("Every change the agent asks for will wait for your approval").waitFor());
    await assert.doesNotReject(page.getByText("Browser agent").first().waitFor());
    await shot("consent");

    step("Allow takes the browser to the client with a code and the state");
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL(`${redirect}?**`);
    assert.equal(got.length, 1);
    assert.equal(got[0].searchParams.get("state"), "xyz");
    const code = got[0].searchParams.get("code");
    assert.ok(code);

    step("the code is exchanged for a token");
    const res = await fetch(`${cfg.base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code", code, redirect_uri: redirect, client_id: clientId, code_verifier: verifier,
      }),
    });
    const token = await res.json();
    assert.equal(res.status, 200, JSON.stringify(token));
    assert.equal(token.token_type, "Bearer");

    step("the tokens page lists it with the client's name; revoking it ends the sign-in");
    await page.goto(`${cfg.base}/tokens`);
    await assert.doesNotReject(page.getByText("MCP client Browser agent, signed in with OAuth").waitFor());
    await shot("tokens");
    await page.getByRole("button", { name: "Revoke OAuth: Browser agent" }).click();
    await page.waitForLoadState();
    assert.equal(await page.getByText("MCP client Browser agent").count(), 0);
    const refresh = await fetch(`${cfg.base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token.refresh_token, client_id: clientId }),
    });
    assert.equal(refresh.status, 400);
    assert.equal((await refresh.json()).error, "invalid_grant");
  } finally {
    server.close();
  }
});
