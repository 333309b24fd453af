// The proforma pages of the web app in a real browser (Debian's Chromium
// driven by playwright-core), all at a phone's width (390 px): the list from
// the nav, a proforma written with the line editor while the tax preview
// follows, edited, turned into a draft invoice, deleted after its
// confirmation; every page fits without sideways scrolling, the total in view.
// Run by crates/cli/tests/web_documents.rs (`WebFixture::run_script`);
// argument 1 is JSON with the fixture's fields. Screenshots go to `artifacts`.

import assert from "node:assert/strict";
import { scenario, step, firstSignIn, fitsAPhone, everyInputLabelled } from "./support.mjs";

// Asserts the current page needs no sideways scrolling.
async function fits(page) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `${page.url()}: no sideways scrolling on a phone (overflow ${overflow}px)`);
}

// Asserts `locator` is within the 390 px of the phone's width.
async function inView(locator, what) {
  const box = await locator.boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${what} is in view: ${JSON.stringify(box)}`);
}

await scenario(async ({ cfg, page, shot, flash, api }) => {
  const customer = await api("POST", "/v1/entities", {
    name: "Kunde AG", type: "DE:AG", vies_vat_id: "DE811907980",
    address: { lines: ["Hauptstraße 1"], zipcode: "10115", city: "Berlin", country: "DE" },
  });
  assert.equal(customer.status, 201, customer.text);
  await page.setViewportSize({ width: 390, height: 844 });
  await firstSignIn(page, cfg, "/review");

  step("the proformas from the nav, on a phone");
  await page.getByRole("link", { name: "Proformas" }).click();
  await page.waitForURL("**/proformas");
  assert.match(await page.locator("main").innerText(), /No proforma yet/);
  await fits(page);

  step("a proforma is written with the line editor; the preview follows the lines");
  await page.getByRole("link", { name: "New proforma" }).click();
  await page.getByLabel("Customer", { exact: true }).selectOption({ label: "Kunde AG" });
  await page.getByLabel("Description of line 1").fill("Workshop <b>day</b>");
  await page.getByLabel("Quantity of line 1").fill("2");
  await page.getByLabel("Unit price of line 1").fill("600");
  await page.waitForFunction(() => document.querySelector("#preview")?.innerText.includes("1,200.00 EUR"));
  await page.getByRole("button", { name: "Add a line" }).click();
  assert.ok(page.url().endsWith("/proformas/new"), "the line was added in place");
  await page.getByLabel("Description of line 2").fill("Travel");
  await page.getByLabel("Unit price of line 2").fill("150");
  await page.waitForFunction(() => document.querySelector("#preview")?.innerText.includes("1,350.00 EUR"));
  const preview = await page.locator("#preview").innerText();
  assert.ok(preview.includes("Workshop <b>day</b>") && preview.includes("Travel"), preview);
  await everyInputLabelled(page);
  await fits(page);
  await shot("01-proforma-new-phone");
  await page.getByRole("button", { name: "Save proforma" }).click();
  assert.equal(await flash(), "Proforma created.");
  const proformaUrl = page.url();
  const proformaId = proformaUrl.split("/").pop();
  let stored = (await api("GET", `/v1/proformas/${proformaId}`)).json;
  assert.deepEqual(stored.lines.map((l) => [l.concept, l.quantity, l.unit_price]),
    [["Workshop <b>day</b>", 2, 60000], ["Travel", 1, 15000]]);
  assert.ok((await page.locator("main").innerText()).includes("Workshop <b>day</b>"), "the text as text");
  await fits(page);
  await inView(page.locator("dl.totals dd").last(), "the total");
  await shot("02-proforma-phone");

  step("the proforma is edited");
  await page.getByRole("link", { name: "Edit proforma" }).click();
  assert.equal(await page.getByLabel("Unit price of line 2").inputValue(), "150.00");
  await page.getByLabel("Unit price of line 2").fill("175");
  await fits(page);
  await page.getByRole("button", { name: "Save proforma" }).click();
  assert.equal(await flash(), "Proforma saved.");
  stored = (await api("GET", `/v1/proformas/${proformaId}`)).json;
  assert.equal(stored.lines[1].unit_price, 17500);
  assert.match(await page.locator("dl.totals").innerText(), /1,375\.00 EUR/);

  step("it is turned into an invoice, which opens as a draft with its lines");
  await page.getByRole("button", { name: "Turn into an invoice" }).click();
  await page.waitForURL("**/invoices/*");
  assert.equal(await flash(), "A draft invoice is made from the proforma. Check it, then issue it.");
  const invoiceId = page.url().split("/").pop();
  const invoice = (await api("GET", `/v1/invoices/${invoiceId}`)).json;
  assert.equal(invoice.status, "draft");
  assert.deepEqual(invoice.lines.map((l) => [l.concept, l.unit_price]), [["Workshop <b>day</b>", 60000], ["Travel", 17500]]);
  await fits(page);
  await shot("03-invoice-from-proforma-phone");

  step("the list shows it invoiced; it is deleted after its confirmation");
  await page.goto(cfg.base + "/proformas");
  const row = await page.locator("table.proformas tbody tr").first().innerText();
  assert.ok(row.includes("Kunde AG") && row.includes(stored.reference), row);
  await inView(page.locator("table.proformas tbody tr td.num").first(), "the list's total");
  await fits(page);
  await shot("04-proformas-phone");
  await page.getByRole("link", { name: stored.reference }).click();
  await page.getByText("Delete proforma…").click();
  await fits(page);
  await page.getByRole("button", { name: "Delete proforma", exact: true }).click();
  assert.equal(await flash(), "The proforma is deleted.");
  assert.ok(page.url().endsWith("/proformas"), page.url());
  assert.equal((await api("GET", `/v1/proformas/${proformaId}`)).status, 404);
  assert.equal((await api("GET", `/v1/invoices/${invoiceId}`)).status, 200, "the invoice stays");

  step("the other new pages fit a phone too");
  const recurring = await api("POST", "/v1/recurring-invoices", {
    recipient_id: customer.json.id, frequency: "monthly", start_date: "2031-01-15",
    lines: [{ concept: "Hosting", unit_price: 4900 }],
  });
  assert.equal(recurring.status, 201, recurring.text);
  for (const [path, name] of [
    ["/recurring", "05-recurring-phone"], ["/recurring/new", "06-recurring-new-phone"],
    [`/recurring/${recurring.json.id}`, "07-recurring-invoice-phone"], ["/settings/webhooks", "08-webhooks-phone"],
  ]) {
    await fitsAPhone(page, cfg, path);
    await shot(name);
  }
  assert.match(await page.locator("main").innerText(), /No webhook endpoint yet/);
  // A long URL breaks rather than widen the list or the endpoint's page.
  const hook = await api("POST", "/v1/webhooks", {
    url: "https://hooks.example.invalid/invoicing/a-rather-long-path-that-has-no-spaces-to-wrap-at/and-goes-on",
    events: ["invoice.paid"], description: "Accounting",
  });
  assert.equal(hook.status, 201, hook.text);
  await fitsAPhone(page, cfg, "/settings/webhooks");
  await fitsAPhone(page, cfg, `/settings/webhooks/${hook.json.id}`);
  assert.doesNotMatch(await page.content(), /whsec_/, "the secret is never shown again");
  await shot("09-webhook-endpoint-phone");
});
