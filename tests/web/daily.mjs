// A person's daily work in the web app, in a real browser (Debian's Chromium
// driven by playwright-core): add a customer with its e-invoice settings, find
// it, write an invoice with the line editor and its tax preview, issue it after
// the confirmation, record a payment, send it, download its e-invoice; record
// an expense, upload its receipt, import the invoice's UBL file as an expense;
// an unknown page answers an HTML page; the lists fit a phone.
// Run by crates/cli/tests/web.rs (`WebFixture::run_script`); argument 1 is JSON
// with the fixture's fields. Screenshots go to `artifacts`.

import { readFile } from "node:fs/promises";
import assert from "node:assert/strict";
import { scenario, step, firstSignIn, acceptAgreements, fitsAPhone, everyInputLabelled } from "./support.mjs";

await scenario(async ({ cfg, page, shot, flash, api }) => {
  await firstSignIn(page, cfg, "/review");
  await page.getByRole("link", { name: "Customers" }).click();

  step("a customer is created with its e-invoice settings");
  assert.match(await page.locator("main").innerText(), /No customer or supplier yet/);
  await page.getByRole("link", { name: "New customer or supplier" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Kunde AG <b>bold</b>");
  await page.getByLabel(/^Country and legal form/).fill("DE:AG");
  await page.getByLabel("EU VAT id (VIES)").fill("DE811907980");
  await page.getByLabel("E-mail for invoices").fill("billing@kunde.example");
  await page.getByLabel(/^Street address/).fill("Hauptstraße 1");
  await page.getByLabel("Postcode").fill("10115");
  await page.getByLabel("City").fill("Berlin");
  await page.getByLabel(/^Country \(ISO/).fill("DE");
  await page.getByLabel("E-invoice format").selectOption("cii");
  await page.getByLabel(/^Electronic address scheme/).fill("0204");
  await page.getByLabel(/^Electronic address id/).fill("991-12345-67");
  await page.getByLabel(/^Buyer reference/).fill("991-12345-67");
  await everyInputLabelled(page);
  await shot("01-customer-new");
  await page.getByRole("button", { name: "Create" }).click();
  assert.equal(await flash(), "Kunde AG <b>bold</b> is saved.");
  const customerUrl = page.url();
  const customerId = customerUrl.split("/").pop();
  const stored = (await api("GET", `/v1/entities/${customerId}`)).json;
  assert.equal(stored.name, "Kunde AG <b>bold</b>");
  assert.deepEqual(stored.einvoice, { format: "cii", endpoint: { scheme: "0204", id: "991-12345-67" }, buyer_reference: "991-12345-67" });
  assert.equal(stored.address.city, "Berlin");

  step("a form the API refuses comes back with what was typed and the API's words");
  await page.goto(cfg.base + "/entities/new");
  await page.getByLabel("Name", { exact: true }).fill("Broken GmbH");
  await page.getByLabel(/^Country and legal form/).fill("XX:Nothing");
  await page.getByLabel(/^Country \(ISO/).fill("DE");
  await page.getByRole("button", { name: "Create" }).click();
  assert.ok((await flash()).length > 0);
  assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Broken GmbH");

  step("the customer is found by search and edited");
  await page.goto(cfg.base + "/entities");
  await page.getByLabel("Search by name or fiscal id").fill("kunde");
  await page.getByRole("button", { name: "Search" }).click();
  const rows = page.locator("table.entities tbody tr");
  assert.equal(await rows.count(), 1);
  assert.ok((await rows.first().innerText()).includes("Kunde AG <b>bold</b>"), "the name is shown as text");
  await shot("02-customers");
  await page.getByLabel("Search by name or fiscal id").fill("nobody-has-this-name");
  await page.getByRole("button", { name: "Search" }).click();
  assert.equal(await rows.count(), 0);
  await page.goto(customerUrl);
  await page.getByLabel("Name", { exact: true }).fill("Kunde AG");
  await page.getByLabel("Payment terms in days (empty: the company's)").fill("14");
  await page.getByRole("button", { name: "Save changes" }).click();
  assert.equal(await flash(), "Changes saved.");
  assert.equal((await api("GET", `/v1/entities/${customerId}`)).json.payment_terms_days, 14);

  step("an invoice is written with the line editor; the preview follows the lines");
  await page.goto(cfg.base + "/invoices");
  await page.getByRole("link", { name: "New invoice" }).click();
  await page.getByLabel("Customer", { exact: true }).selectOption({ label: "Kunde AG" });
  await page.getByLabel("Description of line 1").fill("Consulting");
  await page.getByLabel("Quantity of line 1").fill("2");
  await page.getByLabel("Unit of line 1").fill("hours");
  await page.getByLabel("Unit price of line 1").fill("100");
  await page.getByRole("button", { name: "Add a line" }).click();
  await page.getByLabel("Description of line 2").fill("Travel");
  await page.getByLabel("Unit price of line 2").fill("50.00");
  await page.getByLabel("Purchase order reference").fill("PO-4711");
  await page.getByLabel("Notes printed on the invoice").fill("Thank you & see you soon");
  await page.locator("#preview table.preview").waitFor();
  await page.waitForFunction(() => document.querySelector("#preview")?.innerText.includes("Travel"));
  const preview = await page.locator("#preview").innerText();
  assert.ok(preview.includes("Consulting") && preview.includes("Travel"), preview);
  assert.ok(preview.includes("250.00 EUR"), `the net of both lines: ${preview}`);
  await everyInputLabelled(page);
  await shot("03-invoice-editor");
  await page.getByRole("button", { name: "Save draft" }).click();
  assert.equal(await flash(), "Draft created.");
  const invoiceUrl = page.url();
  const invoiceId = invoiceUrl.split("/").pop();
  let inv = (await api("GET", `/v1/invoices/${invoiceId}`)).json;
  assert.equal(inv.lines.length, 2);
  assert.equal(inv.lines[0].unit_price, 10000);
  assert.equal(inv.lines[0].quantity, 2);
  assert.equal(inv.order_reference, "PO-4711");
  assert.equal(inv.buyer_reference, "991-12345-67", "copied from the customer");
  assert.equal(inv.notes, "Thank you & see you soon");

  step("a line is removed when editing the draft");
  await page.getByRole("link", { name: "Edit draft" }).click();
  await page.getByLabel("Remove line 2").check();
  await page.getByRole("button", { name: "Save draft" }).click();
  assert.equal(await flash(), "Draft saved.");
  inv = (await api("GET", `/v1/invoices/${invoiceId}`)).json;
  assert.deepEqual(inv.lines.map((l) => l.concept), ["Consulting"]);
  const total = inv.total;

  step("issuing asks first and says it cannot be undone");
  await acceptAgreements(page, cfg);
  await page.goto(invoiceUrl);
  await page.getByRole("link", { name: "Issue this invoice…" }).click();
  assert.match(await page.locator("main").innerText(), /Issuing cannot be undone/);
  await shot("04-issue-confirmation");
  await page.getByRole("link", { name: "Not now" }).click();
  assert.equal((await api("GET", `/v1/invoices/${invoiceId}`)).json.status, "draft", "nothing issued yet");
  await page.getByRole("link", { name: "Issue this invoice…" }).click();
  await page.getByRole("button", { name: "Yes, issue it" }).click();
  assert.match(await flash(), /^Issued as \S+\.$/);

  step("a payment is recorded");
  await page.getByLabel(/^Amount received/).fill("100.00");
  await page.getByLabel("Note", { exact: true }).fill("First half");
  await page.getByRole("button", { name: "Record payment" }).click();
  assert.equal(await flash(), "Payment of 100.00 EUR recorded.");
  assert.ok((await page.locator("table.payments").innerText()).includes("First half"));
  inv = (await api("GET", `/v1/invoices/${invoiceId}`)).json;
  assert.equal(inv.paid_minor, 10000);
  assert.equal(inv.payment_status, "partially_paid");
  assert.ok(total > 10000);

  step("the invoice is sent to the customer and its delivery is listed");
  await page.getByLabel("A personal message (optional)").fill("Here is the invoice.");
  await page.getByRole("button", { name: "Send invoice" }).click();
  assert.equal(await flash(), "On its way to billing@kunde.example.");
  assert.ok((await page.locator("table.deliveries").innerText()).includes("billing@kunde.example"));
  const deliveries = (await api("GET", `/v1/invoices/${invoiceId}/deliveries`)).json;
  assert.equal(deliveries.data.length, 1);
  await shot("05-invoice-issued");

  step("the e-invoice downloads in the customer's format or one picked");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Download e-invoice" }).click(),
  ]);
  const xml = (await readFile(await download.path())).toString();
  assert.ok(xml.includes("CrossIndustryInvoice"), `the customer's format: ${xml.slice(0, 300)}`);
  await page.getByLabel("E-invoice format").selectOption("ubl");
  const [ubl] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Download e-invoice" }).click(),
  ]);
  const ublPath = await ubl.path();
  assert.ok((await readFile(ublPath)).toString().includes("urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"));

  step("correcting an issued invoice opens a corrective draft that reverses it");
  await page.goto(invoiceUrl);
  await page.getByRole("button", { name: "Correct this invoice" }).click();
  await page.waitForURL(/\/invoices\/[0-9a-f-]+\/edit$/);
  assert.match(await flash(), /corrective draft is ready/);
  const corrective = (await api("GET", `/v1/invoices/${page.url().split("/").at(-2)}`)).json;
  assert.equal(corrective.series, "corrective");
  assert.equal(corrective.corrected_invoice_id, invoiceId);
  assert.equal(corrective.total, -inv.total);
  assert.equal(await page.getByLabel("Description of line 1").inputValue(), "Consulting");

  step("a customer named by an invoice cannot be deleted; an unused one can");
  await page.goto(customerUrl);
  await page.getByRole("link", { name: "Delete…" }).click();
  await page.getByRole("button", { name: "Delete Kunde AG" }).click();
  assert.match(await flash(), /cannot be deleted/);
  const spare = (await api("POST", "/v1/entities", { name: "Spare Ltd", type: "IE:LTD", address: { country: "IE" } })).json;
  await page.goto(`${cfg.base}/entities/${spare.id}/delete`);
  assert.match(await page.locator("main").innerText(), /cannot be undone/);
  await page.getByRole("button", { name: "Delete Spare Ltd" }).click();
  assert.equal(await flash(), "Deleted.");
  assert.equal((await api("GET", `/v1/entities/${spare.id}`)).status, 404);

  step("an AI request reads as one sentence, shows fields in the order sent, and is approved from it");
  const held = await api("POST", "/v1/invoices", {
    recipient_id: customerId, period_start: "2026-01-01", period_end: "2026-01-31",
    lines: [{ concept: "Agent work", quantity: 2, unit_price: 50000 }],
  }, cfg.apiToken, null);
  assert.equal(held.status, 202, held.text);
  await page.goto(cfg.base + "/review");
  const card = page.locator("article.pending").filter({ hasText: "Agent work" });
  const sentence = await card.locator(".sentence").innerText();
  assert.match(sentence, /^Create an invoice for Kunde AG, 1 line, 1,\d{3}\.\d\d EUR\.$/);
  const cardText = await card.innerText();
  assert.ok(cardText.indexOf("Period start") < cardText.indexOf("Period end"), cardText);
  await shot("08-review-sentence");
  await card.getByRole("button", { name: "Approve" }).click();
  assert.equal(await flash(), "Approved and done: Create invoice.");
  await page.locator("table.history tbody tr").first().getByRole("link", { name: "Open invoice" }).click();
  assert.ok((await page.locator("main").innerText()).includes("Agent work"));

  step("settings show and change the company's ids, address, terms, reminders and electronic address");
  await page.goto(cfg.base + "/settings");
  assert.equal(await page.getByLabel("City").inputValue(), "Dublin");
  await page.getByLabel("EU VAT id (VIES)").fill("IE6388047V");
  await page.getByLabel("Contact person").fill("Ada Owner");
  await page.getByLabel("City").fill("Cork");
  await page.getByLabel(/^Payment terms/).fill("21");
  await page.getByLabel(/^Reminders, in days/).fill("7, 14");
  await page.getByLabel(/^Scheme \(EAS code/).fill("EM");
  await page.getByLabel("Id within the scheme").fill("billing@example.com");
  await everyInputLabelled(page);
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Settings saved.");
  const company = (await api("GET", "/v1/company")).json;
  assert.equal(company.viesVatId, "IE6388047V");
  assert.equal(company.contactName, "Ada Owner");
  assert.equal(company.address.city, "Cork");
  assert.equal(company.address.lines[0], "1 Main Street", "the other address fields are kept");
  assert.equal(company.paymentTermsDays, 21);
  assert.deepEqual(company.reminderDays, [7, 14]);
  assert.deepEqual(company.electronicAddress, { scheme: "EM", id: "billing@example.com" });
  await shot("07-settings");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Nothing changed.", "an unchanged form changes nothing");

  step("settings add, change and remove custom placeholders");
  await page.getByLabel("Placeholder 1: key (a-z, 0-9, _)").fill("po_number");
  await page.getByLabel("Placeholder 1: label").fill("Purchase order <b>no.</b>");
  await page.getByLabel("Placeholder 1: required on every invoice").check();
  await page.getByLabel("Placeholder 2: key (a-z, 0-9, _)").fill("project");
  await page.getByLabel("Placeholder 2: default value").fill("General");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Settings saved.");
  let placeholders = (await api("GET", "/v1/company")).json.customPlaceholders;
  assert.deepEqual(placeholders, [
    { key: "po_number", label: "Purchase order <b>no.</b>", required: true, default: null },
    { key: "project", label: "project", required: false, default: "General" },
  ]);
  assert.equal(await page.getByLabel("Placeholder 1: label").inputValue(), "Purchase order <b>no.</b>", "shown as typed, escaped");
  assert.equal(await page.getByLabel("Placeholder 4: key (a-z, 0-9, _)").inputValue(), "", "blank rows for new ones");
  await page.getByLabel("Placeholder 3: label").fill("no key");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.match(await flash(), /Placeholder 3: give it a key/);
  await page.goto(cfg.base + "/settings");
  await page.getByLabel("Placeholder 1: key (a-z, 0-9, _)").fill("Bad Key");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.match(await flash(), /customPlaceholders/, "the API's refusal is shown");
  await page.goto(cfg.base + "/settings");
  await page.getByLabel("Placeholder 1: key (a-z, 0-9, _)").fill("");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Settings saved.");
  placeholders = (await api("GET", "/v1/company")).json.customPlaceholders;
  assert.deepEqual(placeholders.map((p) => p.key), ["project"], "a cleared key removes its placeholder");
  await page.getByLabel("Placeholder 1: key (a-z, 0-9, _)").fill("");
  await page.getByRole("button", { name: "Save settings" }).click();
  assert.equal(await flash(), "Settings saved.");
  assert.deepEqual((await api("GET", "/v1/company")).json.customPlaceholders, []);

  step("an expense is recorded, refused with what was typed kept, and edited");
  const supplier = (await api("POST", "/v1/entities", { name: "Office Supplies Ltd", type: "IE:LTD", address: { country: "IE" } })).json;
  await page.goto(cfg.base + "/review");
  await page.getByRole("link", { name: "Expenses" }).click();
  assert.match(await page.locator("main").innerText(), /No expense yet/);
  await page.getByRole("link", { name: "New expense" }).click();
  const fillExpense = async (number) => {
    await page.getByLabel("Supplier", { exact: true }).selectOption({ label: "Office Supplies Ltd" });
    await page.getByLabel("Supplier's invoice number").fill(number);
    await page.getByLabel("Date").fill("2026-11-02");
    await page.getByLabel(/^Category/).fill("office");
    await page.getByLabel("What was bought").fill("Paper <i>A4</i>");
    await page.getByLabel("Net amount (before tax)").fill("100");
    await page.getByLabel("Tax charged (VAT), if any").fill("23.00");
  };
  await fillExpense("B-100");
  await everyInputLabelled(page);
  await shot("09-expense-new");
  await page.getByRole("button", { name: "Record expense" }).click();
  assert.equal(await flash(), "The expense is recorded.");
  const expenseUrl = page.url();
  const expenseId = expenseUrl.split("/").pop();
  let expense = (await api("GET", `/v1/expenses/${expenseId}`)).json;
  assert.equal(expense.supplier_id, supplier.id);
  assert.equal(expense.invoice_reference, "B-100");
  assert.equal(expense.expense_date.slice(0, 10), "2026-11-02");
  assert.equal(expense.net_total, 10000);
  assert.equal(expense.tax_total, 2300);
  assert.equal(expense.total, 12300);
  assert.equal(expense.lines[0].concept, "Paper <i>A4</i>");
  assert.equal(expense.source, "manual");
  await page.goto(cfg.base + "/expenses/new");
  await fillExpense("B-100");
  await page.getByRole("button", { name: "Record expense" }).click();
  assert.match(await flash(), /B-100 is already recorded for this supplier/);
  assert.equal(await page.getByLabel("Net amount (before tax)").inputValue(), "100");
  assert.equal(await page.getByLabel("What was bought").inputValue(), "Paper <i>A4</i>");
  await page.goto(expenseUrl);
  assert.equal(await page.getByLabel("Tax charged (VAT), if any").inputValue(), "23.00");
  await page.getByLabel(/^Category/).fill("stationery");
  await page.getByLabel("Net amount (before tax)").fill("110.50");
  await page.getByRole("button", { name: "Save changes" }).click();
  assert.equal(await flash(), "Changes saved.");
  expense = (await api("GET", `/v1/expenses/${expenseId}`)).json;
  assert.equal(expense.category, "stationery");
  assert.equal(expense.total, 13350);

  step("a receipt is uploaded to the expense and downloads as it was sent");
  const receipt = Buffer.from("%PDF-1.4\n% a receipt\n%%EOF\n");
  assert.match(await page.locator("main").innerText(), /No receipt yet/);
  await page.getByLabel(/^Receipt file/).setInputFiles({ name: "receipt.pdf", mimeType: "application/pdf", buffer: receipt });
  await page.getByRole("button", { name: "Upload the receipt" }).click();
  assert.equal(await flash(), "The receipt is saved.");
  assert.equal((await api("GET", `/v1/expenses/${expenseId}`)).json.receipt.content_type, "application/pdf");
  const got = await page.request.get(cfg.base + `/expenses/${expenseId}/receipt`);
  assert.equal(got.status(), 200);
  assert.equal(got.headers()["content-type"], "application/pdf");
  assert.match(got.headers()["content-disposition"], /^attachment/);
  assert.ok(Buffer.from(await got.body()).equals(receipt), "the receipt comes back as sent");
  await page.getByLabel(/^Receipt file/).setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("not a receipt") });
  await page.getByRole("button", { name: "Replace the receipt" }).click();
  assert.match(await flash(), /must be a PDF, PNG, JPEG or WebP/);
  assert.equal((await api("GET", `/v1/expenses/${expenseId}`)).json.receipt.size, receipt.length, "the receipt is kept");

  step("a supplier's e-invoice is imported; a second import links to the expense it already is");
  await page.goto(cfg.base + "/expenses");
  await page.getByLabel(/^Import a supplier's e-invoice/).setInputFiles(ublPath);
  await page.getByRole("button", { name: "Import e-invoice", exact: true }).click();
  assert.equal(await flash(), "The e-invoice is imported as an expense.");
  const importedId = page.url().split("/").pop();
  const imported = (await api("GET", `/v1/expenses/${importedId}`)).json;
  assert.equal(imported.source, "einvoice");
  assert.equal(imported.total, inv.total);
  assert.match(await page.locator("main").innerText(), /several lines|What was bought/);
  await page.goto(cfg.base + "/expenses");
  await page.getByLabel(/^Import a supplier's e-invoice/).setInputFiles(ublPath);
  await page.getByRole("button", { name: "Import e-invoice", exact: true }).click();
  assert.match(await flash(), new RegExp(`already recorded as expense ${importedId}`));
  assert.equal(page.url(), cfg.base + `/expenses/${importedId}`, "the existing expense is shown");
  await page.goto(cfg.base + "/expenses");
  const expenseRows = page.locator("table.expenses tbody tr");
  assert.equal(await expenseRows.count(), 2);
  const listed = await page.locator("table.expenses").innerText();
  assert.ok(listed.includes("Office Supplies Ltd") && listed.includes("B-100"), listed);
  assert.ok(listed.includes("e-invoice") && listed.includes("manual"), listed);
  assert.ok(listed.includes("133.50 EUR"), listed);
  await shot("10-expenses");

  step("an unknown page is an HTML page with a way back; the app has an icon");
  const missing = await page.goto(cfg.base + "/no-such-page");
  assert.equal(missing.status(), 404);
  assert.equal(await page.locator("h1").innerText(), "Page not found");
  assert.equal(await page.getByRole("link", { name: "Back to the start page" }).count(), 1);
  const icon = await page.goto(cfg.base + "/assets/favicon.svg");
  assert.equal(icon.headers()["content-type"], "image/svg+xml");

  step("the lists fit a phone, with the invoice total in view");
  await fitsAPhone(page, cfg, "/entities");
  await fitsAPhone(page, cfg, "/invoices");
  await fitsAPhone(page, cfg, "/expenses");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(cfg.base + "/invoices");
  const cell = page.locator("table.invoices tbody tr td.num").first();
  const box = await cell.boundingBox();
  assert.ok(box && box.x + box.width <= 390, `the total is in view: ${JSON.stringify(box)}`);
  await shot("06-phone-invoices");
  await fitsAPhone(page, cfg, invoiceUrl.slice(cfg.base.length));
});
