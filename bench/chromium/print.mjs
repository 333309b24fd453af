// Warm headless Chromium printing the benchmark invoices to PDF: the reference the
// in-process Typst renderer is compared with (issue 5). This is what HTML-to-PDF services
// such as Gotenberg or Browsershot do per document: one browser kept running, a new page
// per document, setContent, page.pdf, close the page.
//
//   node print.mjs INVOICE.json N
//
// INVOICE.json is what `render_bench --dump-json FILE` writes: {"one_page": doc,
// "lines_500": doc}, each the renderer's own InvoiceDocument model. The HTML built here
// shows what the Typst template shows: title, reference and dates, issuer and recipient
// blocks, the line table with its header repeated on every page, the tax breakdown, the
// totals, the bank account (IBAN) and a page-number footer. Each document is printed a
// few times untimed, then N times (N/10 for 500 lines, at least 3) with a distinct
// reference each time; prints one JSON line with the median and p99 in milliseconds.
//
// Chromium comes from the system (CHROMIUM_PATH, default /usr/bin/chromium); playwright
// never downloads a browser here. PRINT_PDF_DIR=DIR also writes the last PDF of each kind
// there, to compare with `render_bench --pdf-dir`.
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [file, runsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node print.mjs INVOICE.json N');
  process.exit(2);
}
const runs = Math.max(1, Number(runsArg ?? 50));
const runs500 = Math.max(3, Math.round(runs / 10));
const WARMUP = 3;
const docs = JSON.parse(readFileSync(file, 'utf8'));

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function money(minor, digits) {
  const value = Number(minor) / 10 ** digits;
  return value.toLocaleString('en-GB', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function party(label, p) {
  const lines = [
    ...p.address_lines,
    [p.zipcode, p.city].filter(Boolean).join(' '),
    p.state,
    p.country,
    p.fiscal_id && `Tax id: ${p.fiscal_id}`,
    p.vat_id && `VAT id: ${p.vat_id}`,
  ].filter(Boolean);
  return `<div class="party"><div class="caption">${esc(label)}</div><strong>${esc(p.name)}</strong>${lines
    .map((l) => `<br>${esc(l)}`)
    .join('')}</div>`;
}

function iban(s) {
  return String(s ?? '').replace(/(.{4})/g, '$1 ').trim();
}

function html(doc) {
  const d = doc.currency.minor_digits;
  const m = (v) => money(v, d);
  const rows = doc.lines
    .map(
      (l) =>
        `<tr><td>${esc(l.concept)}</td><td class="n">${esc(l.quantity)}${l.unit ? ' ' + esc(l.unit) : ''}</td>` +
        `<td class="n">${m(l.unit_price_minor)}</td><td class="n">${l.taxes.map((t) => `${esc(t.rate)} %`).join(', ')}</td>` +
        `<td class="n">${m(l.subtotal_minor)}</td></tr>`,
    )
    .join('');
  const taxes = doc.tax_breakdown
    .map(
      (t) =>
        `<tr><td>VAT ${esc(t.rate)} % · ${esc(t.treatment)}</td><td class="n">${m(t.base_minor)}</td><td class="n">${m(t.amount_minor)}</td></tr>` +
        (t.legal_mention ? `<tr><td colspan="3" class="mention">${esc(t.legal_mention)}</td></tr>` : ''),
    )
    .join('');
  const t = doc.totals;
  const accounts = doc.bank_accounts
    .map(
      (a) =>
        `<div>${esc(a.name)}${a.bank_name ? '<br>' + esc(a.bank_name) : ''}${a.iban ? '<br>IBAN ' + esc(iban(a.iban)) : ''}${a.bic ? '<br>BIC ' + esc(a.bic) : ''}</div>`,
    )
    .join('');
  return `<!doctype html><html lang="${esc(doc.language)}"><head><meta charset="utf-8">
<title>Invoice ${esc(doc.reference)}</title>
<style>
  @page { size: A4; margin: 16mm 18mm 30mm 18mm; }
  body { font-family: "Libertinus Serif", "DejaVu Serif", serif; font-size: 9.5pt; color: #000; }
  .caption { font-size: 7.5pt; color: #555; letter-spacing: 0.04em; text-transform: uppercase; }
  h1 { font-size: 20pt; margin: 0 0 0.4em; }
  .meta td { padding: 0 1em 0.3em 0; } .meta td:first-child { color: #555; }
  .parties { display: grid; grid-template-columns: 1fr 1fr; gap: 2em; margin: 1.2em 0 1em; }
  .party { break-inside: avoid; }
  table { border-collapse: collapse; }
  table.lines { width: 100%; }
  table.lines thead { display: table-header-group; }
  table.lines th { border-bottom: 0.7pt solid #000; text-align: left; }
  table.lines td, table.lines th { padding: 3.5pt 4pt; vertical-align: top; }
  table.lines td { border-bottom: 0.4pt solid #afafaf; }
  table.lines tr { break-inside: avoid; }
  .n, table.lines th.n { text-align: right; white-space: nowrap; }
  .currency { text-align: right; font-size: 8pt; color: #555; }
  .trailer { display: grid; grid-template-columns: 1fr auto; gap: 2em; margin-top: 0.6em; break-inside: avoid; }
  .taxes th { border-bottom: 0.7pt solid #000; text-align: left; } .taxes td, .taxes th { padding: 3.5pt 4pt; }
  .mention { font-size: 8pt; font-style: italic; }
  .totals td { padding: 0.3em 0 0.3em 2em; } .totals .total td { font-size: 11pt; font-weight: bold; }
  .section { margin-top: 1.2em; break-inside: avoid; }
  .accounts { display: grid; grid-template-columns: 1fr 1fr; gap: 0.8em 2em; }
</style></head><body>
<h1>Invoice</h1>
<table class="meta"><tr><td>Reference</td><td><strong>${esc(doc.reference)}</strong></td></tr>
<tr><td>Issue date</td><td>${esc(doc.issue_date)}</td></tr>
${doc.due_date ? `<tr><td>Due date</td><td>${esc(doc.due_date)}</td></tr>` : ''}</table>
<div class="parties">${party('Issuer', doc.issuer)}${party('Recipient', doc.recipient)}</div>
<div class="currency">Amounts in ${esc(doc.currency.code)}</div>
<table class="lines"><thead><tr><th>Description</th><th class="n">Quantity</th><th class="n">Unit price</th><th class="n">Tax</th><th class="n">Amount</th></tr></thead>
<tbody>${rows}</tbody></table>
<div class="trailer">
  <div><div class="caption">Tax breakdown</div><table class="taxes"><thead><tr><th>Tax</th><th class="n">Base</th><th class="n">Amount</th></tr></thead><tbody>${taxes}</tbody></table></div>
  <table class="totals"><tr><td>Net</td><td class="n">${m(t.net_minor)}</td></tr><tr><td>Taxes</td><td class="n">${m(t.tax_minor)}</td></tr>
  ${t.withholding_minor ? `<tr><td>Withholding</td><td class="n">${m(t.withholding_minor)}</td></tr>` : ''}
  <tr class="total"><td>Total</td><td class="n">${m(t.total_minor)} ${esc(doc.currency.code)}</td></tr></table>
</div>
${accounts ? `<div class="section"><div class="caption">Payment</div><div class="accounts">${accounts}</div></div>` : ''}
</body></html>`;
}

const footer =
  '<div style="font-size:7.5pt;color:#555;width:100%;margin:0 18mm;border-top:0.4pt solid #afafaf;text-align:right;padding-top:2pt">' +
  '<span class="pageNumber"></span>/<span class="totalPages"></span></div>';

async function printOnce(context, doc, keep) {
  const page = await context.newPage();
  await page.setContent(html(doc), { waitUntil: 'load' });
  const pdf = await page.pdf({
    format: 'A4',
    printBackground: true,
    displayHeaderFooter: true,
    headerTemplate: '<span></span>',
    footerTemplate: footer,
    margin: { top: '16mm', bottom: '30mm', left: '18mm', right: '18mm' },
  });
  await page.close();
  if (pdf.subarray(0, 4).toString() !== '%PDF') throw new Error('not a PDF');
  if (keep && process.env.PRINT_PDF_DIR) writeFileSync(`${process.env.PRINT_PDF_DIR}/${keep}.pdf`, pdf);
  return pdf.length;
}

async function measure(context, base, n, name) {
  const times = [];
  let bytes = 0;
  for (let i = 0; i < WARMUP + n; i++) {
    const doc = { ...base, reference: `F2026-${String(i + 1).padStart(5, '0')}` };
    const start = process.hrtime.bigint();
    bytes = await printOnce(context, doc, i + 1 === WARMUP + n && `chromium_${name}`);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (i >= WARMUP) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const pct = (p) => times[Math.round((times.length - 1) * p)];
  const round = (v) => Math.round(v * 100) / 100;
  return { runs: n, median_ms: round(pct(0.5)), p99_ms: round(pct(0.99)), pdf_bytes: bytes };
}

const launched = process.hrtime.bigint();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
try {
  const launch_ms = Math.round(Number(process.hrtime.bigint() - launched) / 1e4) / 100;
  const context = await browser.newContext();
  const out = {
    chromium: browser.version(),
    launch_ms,
    one_page: await measure(context, docs.one_page, runs, 'one_page'),
    lines_500: await measure(context, docs.lines_500, runs500, 'lines_500'),
  };
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
