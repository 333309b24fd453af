// The screenshots docs/WEB.md shows ("What it looks like"), taken of fixed demo
// data (made-up companies and people) in Debian's Chromium at 1280x800:
// dashboard, invoices list, an invoice, the invoice editor, the review queue
// and the settings. Every run saves them to `artifacts`; with
// `docsScreenshots` set (crates/cli/tests/web.rs sets it to docs/web when
// INVOICING_UPDATE_DOCS_SCREENSHOTS=1) they are written there too, under the
// same stable names. Argument 1 is JSON with the fixture's fields.

import { mkdir, writeFile } from "node:fs/promises";
import assert from "node:assert/strict";
import { scenario, step, firstSignIn, acceptAgreements } from "./support.mjs";

const MAX_BYTES = 200 * 1024;

await scenario(async ({ cfg, page, api }) => {
  const ok = async (method, path, body, status) => {
    const res = await api(method, path, body);
    assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
    return res.json;
  };
  await firstSignIn(page, cfg, "/review");
  await acceptAgreements(page, cfg);

  step("demo data: customers, a supplier, invoices issued and paid, a draft, an expense");
  await ok("PATCH", "/v1/company", { contactName: "Ada Example" }, 200);
  const customer = (name, type, address, more = {}) =>
    ok("POST", "/v1/entities", { name, type, address, ...more }, 201);
  const example = await customer("Example Customer Ltd", "IE:LTD",
    { lines: ["2 Quay Street"], zipcode: "D01 F5P2", city: "Dublin", country: "IE" },
    { email: "accounts@customer.example" });
  const muster = await customer("Muster Beispiel AG", "DE:AG",
    { lines: ["Beispielstraße 1"], zipcode: "10115", city: "Berlin", country: "DE" },
    { vies_vat_id: "DE811907980", email: "rechnung@muster.example" });
  const demo = await customer("Demo Studio Ltd", "IE:LTD",
    { lines: ["9 Sample Lane"], zipcode: "T12 X2Y3", city: "Cork", country: "IE" });
  const supplier = await customer("Placeholder Office Supplies Ltd", "IE:LTD", { country: "IE" });
  const invoice = (recipient, lines) => ok("POST", "/v1/invoices", { recipient_id: recipient.id, lines }, 201);
  const issue = (inv) => ok("POST", `/v1/invoices/${inv.id}/issue`, undefined, 200);
  const paid = await issue(await invoice(example, [
    { concept: "Consulting, March", quantity: 12, quantity_unit: "hours", unit_price: 9500 },
    { concept: "Workshop on invoicing", quantity: 1, unit_price: 120000 },
  ]));
  await ok("POST", `/v1/invoices/${paid.id}/payments`, { amount_minor: paid.total, note: "Bank transfer" }, 201);
  await issue(await invoice(muster, [{ concept: "Software licence, one year", quantity: 1, unit_price: 240000 }]));
  await issue(await invoice(demo, [{ concept: "Design review", quantity: 6, quantity_unit: "hours", unit_price: 8000 }]));
  const draft = await invoice(example, [
    { concept: "Support retainer, April", quantity: 1, unit_price: 45000 },
    { concept: "Travel to the client", quantity: 1, unit_price: 8550 },
  ]);
  await ok("POST", "/v1/expenses", {
    supplier_id: supplier.id, invoice_reference: "OS-1042",
    lines: [{ concept: "Paper and toner", subtotal: 18000 }, { concept: "VAT", subtotal: 4140, is_tax: true }],
  }, 201);

  step("an AI agent asks for an invoice: it waits in the review queue");
  const held = await api("POST", "/v1/invoices", {
    recipient_id: demo.id, period_start: "2026-04-01", period_end: "2026-04-30",
    lines: [
      { concept: "Illustrations", quantity: 3, unit_price: 25000 },
      { concept: "Usage rights", quantity: 1, unit_price: 40000 },
    ],
  }, cfg.apiToken, null);
  assert.equal(held.status, 202, held.text);

  step("the pages, at 1280x800");
  await page.setViewportSize({ width: 1280, height: 800 });
  const shots = [
    ["dashboard", "/dashboard", async () => { await page.locator("main svg, main table").first().waitFor(); }],
    ["invoices", "/invoices", async () => { await page.locator("table.invoices").waitFor(); }],
    ["invoice", `/invoices/${paid.id}`, async () => { await page.locator("dl.totals").waitFor(); }],
    ["invoice-editor", `/invoices/${draft.id}/edit`, async () => { await page.locator("table.lines-editor").waitFor(); }],
    ["review-queue", "/review", async () => { await page.locator("article.pending .sentence").waitFor(); }],
    ["settings", "/settings", async () => { await page.getByLabel("City").waitFor(); }],
  ];
  if (cfg.docsScreenshots) await mkdir(cfg.docsScreenshots, { recursive: true });
  for (const [name, path, ready] of shots) {
    await page.goto(cfg.base + path);
    await ready();
    await page.mouse.move(0, 0);
    const png = await page.screenshot({
      path: `${cfg.artifacts}/${name}.png`, animations: "disabled", caret: "hide",
    });
    if (cfg.docsScreenshots) {
      assert.ok(png.length < MAX_BYTES, `${name}.png is ${png.length} bytes, over ${MAX_BYTES}`);
      await writeFile(`${cfg.docsScreenshots}/${name}.png`, png);
      step(`wrote ${cfg.docsScreenshots}/${name}.png (${png.length} bytes)`);
    }
  }
});
