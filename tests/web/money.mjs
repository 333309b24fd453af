// The money pages of the web app in a real browser (Debian's Chromium driven
// by playwright-core): a bank account is created from the nav, a balance is
// recorded and deleted; a report is asked for, waits (no worker runs until the
// script starts one), turns ready on the page by itself, downloads and is
// deleted; a draft invoice is deleted from its page; the pages fit a phone.
// Run by crates/cli/tests/web_money.rs (`WebFixture::run_script`); argument 1
// is JSON with the fixture's fields. Screenshots go to `artifacts`.

import { readFile, writeFile } from "node:fs/promises";
import assert from "node:assert/strict";
import { scenario, step, firstSignIn, fitsAPhone, everyInputLabelled } from "./support.mjs";

await scenario(async ({ cfg, page, shot, flash, api }) => {
  await firstSignIn(page, cfg, "/review");

  step("a bank account is created from the nav; the list shows its IBAN and balance");
  await page.getByRole("link", { name: "Bank accounts" }).click();
  assert.match(await page.locator("main").innerText(), /No bank account yet/);
  await page.getByRole("link", { name: "New bank account" }).click();
  await page.getByLabel(/^Name/).fill("Main <i>account</i>");
  await page.getByLabel("Bank", { exact: true }).fill("Bank of Ireland");
  await page.getByLabel("IBAN").fill("IE29 AIBK 9311 5212 3456 78");
  await page.getByLabel("BIC").fill("AIBKIE2D");
  await everyInputLabelled(page);
  await shot("01-bank-account-new");
  await page.getByRole("button", { name: "Create" }).click();
  assert.equal(await flash(), "Main <i>account</i> is saved.");
  const accountUrl = page.url();
  const accountId = accountUrl.split("/").pop();
  const stored = (await api("GET", `/v1/bank-accounts/${accountId}`)).json;
  assert.equal(stored.account.iban, "IE29AIBK93115212345678");
  assert.equal(stored.account.is_main, true);

  step("a balance is recorded, shown, and deleted");
  await page.getByLabel("Balance (EUR)").fill("2500.75");
  await page.getByLabel("On (empty: today)").fill("2026-10-31");
  await page.getByLabel("Note").fill("Statement 10");
  await everyInputLabelled(page);
  await page.getByRole("button", { name: "Record balance" }).click();
  assert.equal(await flash(), "The balance is recorded.");
  assert.match(await page.locator("table.snapshots").innerText(), /2,500\.75 EUR/);
  await shot("02-bank-account");
  await page.goto(cfg.base + "/bank-accounts");
  const row = await page.locator("table.bank-accounts tbody tr").first().innerText();
  assert.ok(row.includes("Main <i>account</i>"), `the name as text: ${row}`);
  assert.ok(row.includes("IE29 AIBK 9311 5212 3456 78"), row);
  assert.ok(row.includes("2,500.75 EUR"), row);
  await shot("03-bank-accounts");
  await page.goto(accountUrl);
  await page.getByRole("button", { name: "Delete balance of 2026-10-31" }).click();
  assert.equal(await flash(), "The balance is deleted.");
  assert.equal((await api("GET", `/v1/bank-accounts/${accountId}`)).json.snapshots.length, 0);

  step("a report is asked for, becomes ready and downloads");
  await page.getByRole("link", { name: "Reports" }).click();
  await page.getByLabel("Report", { exact: true }).selectOption({ label: "Business overview" });
  await page.getByLabel("From (first day)").fill("2026-01-01");
  await page.getByLabel("To (last day, included)").fill("2026-12-31");
  await everyInputLabelled(page);
  await page.getByRole("button", { name: "Ask for the report" }).click();
  assert.equal(await flash(), "The report is asked for; it is made in the background.");
  // No worker runs yet: the report waits, the page says so and offers "Refresh".
  assert.match(await page.locator("table.reports").innerText(), /Waiting/);
  assert.equal(await page.getByRole("link", { name: "Refresh" }).count(), 1);
  await shot("04a-report-waiting");

  step("the waiting report turns ready on the page by itself, which then stops asking");
  // A reload would lose this mark; the list's own requests are counted.
  await page.evaluate(() => { window.sameDocument = true; });
  let asked = 0;
  page.on("request", (r) => { if (new URL(r.url()).pathname === "/reports") asked += 1; });
  await writeFile(cfg.startWorker, "");
  const deadline = Date.now() + 120_000;
  while (!(await page.getByRole("link", { name: "Download PDF" }).count())) {
    assert.ok(Date.now() < deadline, "the report is ready within 120 s");
    assert.doesNotMatch(await page.locator("table.reports").innerText(), /Failed/);
    await page.waitForTimeout(250);
  }
  assert.equal(await page.evaluate(() => window.sameDocument), true, "no page load: the list refreshed itself");
  assert.ok(asked >= 1, `the list was asked for again (${asked} times)`);
  assert.equal(await page.getByRole("link", { name: "Refresh" }).count(), 0, "nothing waits any more");
  assert.equal(await page.locator("[data-refresh]").count(), 0);
  const askedWhenReady = asked;
  await page.waitForTimeout(7_000);
  assert.equal(asked, askedWhenReady, "no more requests once nothing waits");
  assert.match(await page.locator("table.reports").innerText(), /Business overview\s+2026-01-01 – 2026-12-31/);
  await shot("04b-reports");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download PDF" }).click(),
  ]);
  const pdf = await readFile(await download.path());
  assert.equal(pdf.subarray(0, 4).toString(), "%PDF");
  await page.getByRole("button", { name: "Delete report" }).click();
  assert.equal(await flash(), "The report is deleted.");
  assert.equal((await api("GET", "/v1/reports")).json.data.length, 0);

  step("a draft invoice is deleted from its page after opening the confirmation");
  const customer = await api("POST", "/v1/entities", {
    name: "Kunde AG", type: "DE:AG", vies_vat_id: "DE811907980",
    address: { lines: ["Hauptstraße 1"], zipcode: "10115", city: "Berlin", country: "DE" },
  });
  assert.equal(customer.status, 201, customer.text);
  const draft = await api("POST", "/v1/invoices", {
    recipient_id: customer.json.id, lines: [{ concept: "Consulting", unit_price: 10000 }],
  });
  assert.equal(draft.status, 201, draft.text);
  await page.goto(`${cfg.base}/invoices/${draft.json.id}`);
  await page.getByText("Delete draft…").click();
  await shot("05-delete-draft");
  await page.getByRole("button", { name: "Delete draft", exact: true }).click();
  assert.equal(await flash(), "The draft is deleted.");
  assert.ok(page.url().endsWith("/invoices"), page.url());
  assert.equal((await api("GET", `/v1/invoices/${draft.json.id}`)).status, 404);

  step("the money pages fit a phone");
  await fitsAPhone(page, cfg, "/bank-accounts");
  await fitsAPhone(page, cfg, accountUrl.slice(cfg.base.length));
  await fitsAPhone(page, cfg, "/reports");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(cfg.base + "/bank-accounts");
  const balance = page.locator("table.bank-accounts tbody tr td.num").first();
  const box = await balance.boundingBox();
  assert.ok(box && box.x + box.width <= 390, `the balance is in view: ${JSON.stringify(box)}`);
  await shot("06-phone-bank-accounts");
});
