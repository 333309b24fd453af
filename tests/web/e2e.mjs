// End-to-end test of the web app in a real browser (Debian's Chromium driven by
// playwright-core). Run by crates/cli/tests/web.rs against a real `invoicing
// serve`; argument 1 is JSON:
//   {"base", "email", "password", "newPassword", "customer", "concept",
//    "apiToken", "apiProof", "artifacts"}
// Prints one line per step and "ok" at the end; exits non-zero on the first failure.
// Screenshots of every page go to `artifacts` (look at them after a change).

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import assert from "node:assert/strict";
import { scenario, step, everyInputLabelled, fitsAPhone } from "./support.mjs";

await scenario(async ({ cfg, context, page, shot, flash, api }) => {
  step("a page asks for sign-in first, then the mailed password must be replaced");
  await page.goto(cfg.base + "/review");
  assert.match(page.url(), /\/login\?next=\/review$/);
  await page.getByLabel("E-mail").fill(cfg.email);
  await page.getByLabel("Password").fill(cfg.password);
  await shot("01-sign-in");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/password");
  await shot("02-choose-password");
  await page.getByLabel("Current password").fill(cfg.password);
  await page.getByLabel(/^New password \(at least/).fill(cfg.newPassword);
  await page.getByLabel("New password again").fill(cfg.newPassword);
  await page.getByRole("button", { name: "Save password" }).click();
  await page.waitForURL("**/review");
  assert.equal(await flash(), "Your password is saved.");

  step("the MCP agent's invoice waits in the review queue, described in words");
  const card = page.locator("article.pending").filter({ hasText: cfg.concept });
  assert.equal(await card.count(), 1);
  const text = await card.innerText();
  for (const expected of ["Create invoice", "through MCP", cfg.customer, "125.00 EUR", "hours"]) {
    assert.ok(text.includes(expected), `the queue entry shows ${expected}: ${text}`);
  }
  assert.ok(!text.includes('"recipient_id"'), "no raw JSON outside the technical details");
  assert.equal(await page.locator("nav .badge").innerText(), "1");
  assert.equal(await page.getByText("You have legal documents to accept").count(), 1);
  await shot("03-review-queue");
  await card.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL("**/review");
  assert.equal(await flash(), "Approved and done: Create invoice.");
  assert.equal(await page.locator("article.pending").count(), 0);
  const done = page.locator("table.history tbody tr").first();
  assert.ok((await done.innerText()).includes("approved"));
  await shot("04-review-approved");

  step("the approved invoice is in the list; its PDF downloads; the draft is issued");
  await page.getByRole("link", { name: "Invoices" }).click();
  const row = page.locator("table.invoices tbody tr").filter({ hasText: cfg.customer });
  assert.equal(await row.count(), 1);
  assert.ok((await row.innerText()).includes("draft"));
  await shot("05-invoices");
  await row.getByRole("link").click();
  await page.waitForURL(/\/invoices\/[0-9a-f-]+$/);
  assert.ok((await page.locator("main").innerText()).includes(cfg.concept));
  assert.ok((await page.locator("dl.totals").innerText()).includes("375.00 EUR"));
  await shot("06-invoice-draft");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download PDF" }).click(),
  ]);
  const pdf = await readFile(await download.path());
  assert.equal(pdf.subarray(0, 5).toString(), "%PDF-");
  const invoiceUrl = page.url();
  await page.getByRole("link", { name: "Issue this invoice…" }).click();
  await page.waitForURL("**/issue");
  assert.match(await page.locator("main").innerText(), /Issuing cannot be undone/);
  await page.getByRole("button", { name: "Yes, issue it" }).click();
  await page.waitForURL("**/agreements");
  assert.match(await flash(), /Accept the current legal documents first/);
  await shot("07-legal-documents");
  const accept = page.getByRole("button", { name: /^Accept / });
  assert.ok((await accept.count()) > 0);
  while ((await accept.count()) > 0) {
    await accept.first().click();
    await page.waitForLoadState();
  }
  assert.equal(await page.getByText("You have legal documents to accept").count(), 0);
  await page.goto(invoiceUrl);
  await page.getByRole("link", { name: "Issue this invoice…" }).click();
  await page.getByRole("button", { name: "Yes, issue it" }).click();
  assert.match(await flash(), /^Issued as \S+\.$/);
  assert.equal(await page.getByRole("link", { name: "Issue this invoice…" }).count(), 0);
  await shot("08-invoice-issued");
  await page.goto(cfg.base + "/invoices?status=draft");
  assert.equal(await page.locator("table.invoices tbody tr").filter({ hasText: cfg.customer }).count(), 0);
  await page.goto(cfg.base + "/invoices?status=issued");
  assert.equal(await page.locator("table.invoices tbody tr").filter({ hasText: cfg.customer }).count(), 1);

  step("a token created here works once copied, and is refused once revoked");
  await page.getByRole("link", { name: "API tokens" }).click();
  await page.getByLabel("What it is for").fill("e2e token");
  await page.getByRole("button", { name: "Create token" }).click();
  const token = await page.locator("#new-token").inputValue();
  const proof = await page.locator("#new-proof").inputValue();
  assert.match(token, /^[0-9a-f-]{36}$/);
  await shot("09-token-created");
  assert.equal((await api("GET", "/v1/session", undefined, token, proof)).status, 200);
  await page.goto(cfg.base + "/tokens");
  assert.equal(await page.locator("#new-token").count(), 0, "the value is shown only once");
  await page.getByRole("button", { name: "Revoke e2e token" }).click();
  assert.match(await flash(), /revoked/);
  assert.equal((await api("GET", "/v1/session", undefined, token, proof)).status, 401);
  await shot("10-token-revoked");

  step("a cross-site form post without the CSRF token is refused and changes nothing");
  const evil = createServer((_, res) => {
    res.setHeader("content-type", "text/html");
    res.end(`<!doctype html><form id=f method=post action="${cfg.base}/tokens">
      <input name=description value="planted by another site"><input name=kind value=standard></form>
      <script>document.getElementById("f").submit()</script>`);
  });
  await new Promise((resolve) => evil.listen(0, "127.0.0.1", resolve));
  const attacker = await context.newPage();
  const refused = attacker.waitForResponse((r) => r.url() === `${cfg.base}/tokens` && r.request().method() === "POST");
  await attacker.goto(`http://127.0.0.1:${evil.address().port}/`);
  assert.equal((await refused).status(), 403);
  await attacker.waitForLoadState();
  assert.ok((await attacker.locator("main").innerText()).includes("Request refused"));
  await shot("11-cross-site-refused", attacker);
  await attacker.close();
  evil.close();
  const tokens = (await api("GET", "/v1/tokens?limit=500")).json;
  assert.ok(!tokens.data.some((t) => t.description.includes("planted")), JSON.stringify(tokens));

  step("dashboard, members, settings and the VERI*FACTU page render");
  await page.getByRole("link", { name: "Dashboard" }).click();
  assert.equal(await page.locator("figure.chart svg rect").count(), 12);
  assert.ok((await page.locator(".tiles").innerText()).includes("EUR"));
  await shot("12-dashboard");
  await page.getByRole("link", { name: "Members" }).click();
  await page.getByLabel("E-mail").fill("clerk@example.com");
  await page.getByRole("button", { name: "Add member" }).click();
  assert.match(await flash(), /clerk@example.com is a member; their password is on its way/);
  assert.equal(await page.locator("table tbody tr").filter({ hasText: "clerk@example.com" }).count(), 1);
  await page.getByRole("button", { name: "Deactivate clerk@example.com" }).click();
  assert.match(await flash(), /deactivated/);
  assert.equal(await page.getByRole("button", { name: "Reactivate clerk@example.com" }).count(), 1);
  await shot("13-members");
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByLabel("Short name").fill("E2E Co");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Settings saved.");
  assert.equal(await page.getByLabel("Short name").inputValue(), "E2E Co");
  await shot("14-settings");
  await page.getByRole("link", { name: "VERI*FACTU authorization" }).click();
  assert.ok((await page.locator("main").innerText()).includes("does not apply"));
  await shot("15-verifactu");

  step("keyboard: the first Tab reaches the skip link; every input has a label");
  await page.goto(cfg.base + "/members");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Skip to content");
  await everyInputLabelled(page);

  step("readable on a phone");
  await fitsAPhone(page, cfg, "/review");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot("16-phone-review");

  step("sign out ends the session");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL("**/login");
  assert.equal(await flash(), "You are signed out.");
  await page.goto(cfg.base + "/review");
  assert.match(page.url(), /\/login/);
});
