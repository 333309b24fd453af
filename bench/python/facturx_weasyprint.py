"""The stack a Python shop would pick for Factur-X: WeasyPrint renders the invoice's HTML to
PDF/A-3b, then the `factur-x` library embeds the CII and writes the Factur-X XMP. The
reference the service's own Factur-X PDF is compared with (issue #30).

    python facturx_weasyprint.py INVOICE.json FACTUR-X.xml N

INVOICE.json is `{"one_page": doc}` as `einvoice_bench --dump-dir` writes it (the renderer's
model of the invoice) and FACTUR-X.xml its CII. The HTML is the same layout
`bench/chromium/print.mjs` prints. Each run makes a distinct invoice (its reference changes
in the HTML; the XML is the same bytes, which only favours this side), untimed a few times,
then N times; prints one JSON line with the median and p99 in milliseconds. The factur-x
library is asked not to check the XML against the XSD on every run (`check_xsd=False`),
which the service does not do per request either. PRINT_PDF_DIR=DIR writes the last PDF.
"""

import html as htmllib
import json
import os
import sys
import time

from facturx import generate_from_binary
from weasyprint import HTML

WARMUP = 3


def esc(s):
    return htmllib.escape("" if s is None else str(s), quote=True)


def money(minor, digits):
    return f"{int(minor) / 10 ** digits:,.{digits}f}"


def party(label, p):
    lines = [
        *p.get("address_lines", []),
        " ".join(x for x in (p.get("zipcode"), p.get("city")) if x),
        p.get("state"),
        p.get("country"),
        p.get("fiscal_id") and f"Tax id: {p['fiscal_id']}",
        p.get("vat_id") and f"VAT id: {p['vat_id']}",
    ]
    body = "".join(f"<br>{esc(line)}" for line in lines if line)
    return f'<div class="party"><div class="caption">{esc(label)}</div><strong>{esc(p["name"])}</strong>{body}</div>'


def iban(s):
    s = s or ""
    return " ".join(s[i : i + 4] for i in range(0, len(s), 4))


def page(doc):
    d = doc["currency"]["minor_digits"]
    m = lambda v: money(v, d)  # noqa: E731
    rows = "".join(
        f'<tr><td>{esc(l["concept"])}</td><td class="n">{esc(l["quantity"])}{(" " + esc(l["unit"])) if l.get("unit") else ""}</td>'
        f'<td class="n">{m(l["unit_price_minor"])}</td><td class="n">{", ".join(esc(t["rate"]) + " %" for t in l["taxes"])}</td>'
        f'<td class="n">{m(l["subtotal_minor"])}</td></tr>'
        for l in doc["lines"]
    )
    taxes = "".join(
        f'<tr><td>VAT {esc(t["rate"])} % · {esc(t["treatment"])}</td><td class="n">{m(t["base_minor"])}</td><td class="n">{m(t["amount_minor"])}</td></tr>'
        + (f'<tr><td colspan="3" class="mention">{esc(t["legal_mention"])}</td></tr>' if t.get("legal_mention") else "")
        for t in doc["tax_breakdown"]
    )
    t = doc["totals"]
    accounts = "".join(
        f'<div>{esc(a["name"])}'
        + (f'<br>{esc(a["bank_name"])}' if a.get("bank_name") else "")
        + (f'<br>IBAN {esc(iban(a["iban"]))}' if a.get("iban") else "")
        + (f'<br>BIC {esc(a["bic"])}' if a.get("bic") else "")
        + "</div>"
        for a in doc["bank_accounts"]
    )
    due = f'<tr><td>Due date</td><td>{esc(doc["due_date"])}</td></tr>' if doc.get("due_date") else ""
    withholding = (
        f'<tr><td>Withholding</td><td class="n">{m(t["withholding_minor"])}</td></tr>' if t["withholding_minor"] else ""
    )
    payment = (
        f'<div class="section"><div class="caption">Payment</div><div class="accounts">{accounts}</div></div>'
        if accounts
        else ""
    )
    code = esc(doc["currency"]["code"])
    return f"""<!doctype html><html lang="{esc(doc.get('language'))}"><head><meta charset="utf-8">
<title>Invoice {esc(doc.get('reference'))}</title>
<style>
  @page {{ size: A4; margin: 16mm 18mm 30mm 18mm;
    @bottom-right {{ content: counter(page) "/" counter(pages); font-size: 7.5pt; color: #555; }} }}
  body {{ font-family: "Libertinus Serif", "DejaVu Serif", serif; font-size: 9.5pt; color: #000; }}
  .caption {{ font-size: 7.5pt; color: #555; letter-spacing: 0.04em; text-transform: uppercase; }}
  h1 {{ font-size: 20pt; margin: 0 0 0.4em; }}
  .meta td {{ padding: 0 1em 0.3em 0; }} .meta td:first-child {{ color: #555; }}
  .parties {{ display: grid; grid-template-columns: 1fr 1fr; gap: 2em; margin: 1.2em 0 1em; }}
  .party {{ break-inside: avoid; }}
  table {{ border-collapse: collapse; }}
  table.lines {{ width: 100%; }}
  table.lines thead {{ display: table-header-group; }}
  table.lines th {{ border-bottom: 0.7pt solid #000; text-align: left; }}
  table.lines td, table.lines th {{ padding: 3.5pt 4pt; vertical-align: top; }}
  table.lines td {{ border-bottom: 0.4pt solid #afafaf; }}
  table.lines tr {{ break-inside: avoid; }}
  .n, table.lines th.n {{ text-align: right; white-space: nowrap; }}
  .currency {{ text-align: right; font-size: 8pt; color: #555; }}
  .trailer {{ display: grid; grid-template-columns: 1fr auto; gap: 2em; margin-top: 0.6em; break-inside: avoid; }}
  .taxes th {{ border-bottom: 0.7pt solid #000; text-align: left; }} .taxes td, .taxes th {{ padding: 3.5pt 4pt; }}
  .mention {{ font-size: 8pt; font-style: italic; }}
  .totals td {{ padding: 0.3em 0 0.3em 2em; }} .totals .total td {{ font-size: 11pt; font-weight: bold; }}
  .section {{ margin-top: 1.2em; break-inside: avoid; }}
  .accounts {{ display: grid; grid-template-columns: 1fr 1fr; gap: 0.8em 2em; }}
</style></head><body>
<h1>Invoice</h1>
<table class="meta"><tr><td>Reference</td><td><strong>{esc(doc.get('reference'))}</strong></td></tr>
<tr><td>Issue date</td><td>{esc(doc['issue_date'])}</td></tr>
{due}</table>
<div class="parties">{party('Issuer', doc['issuer'])}{party('Recipient', doc['recipient'])}</div>
<div class="currency">Amounts in {code}</div>
<table class="lines"><thead><tr><th>Description</th><th class="n">Quantity</th><th class="n">Unit price</th><th class="n">Tax</th><th class="n">Amount</th></tr></thead>
<tbody>{rows}</tbody></table>
<div class="trailer">
  <div><div class="caption">Tax breakdown</div><table class="taxes"><thead><tr><th>Tax</th><th class="n">Base</th><th class="n">Amount</th></tr></thead><tbody>{taxes}</tbody></table></div>
  <table class="totals"><tr><td>Net</td><td class="n">{m(t['net_minor'])}</td></tr><tr><td>Taxes</td><td class="n">{m(t['tax_minor'])}</td></tr>
  {withholding}
  <tr class="total"><td>Total</td><td class="n">{m(t['total_minor'])} {code}</td></tr></table>
</div>
{payment}
</body></html>"""


def facturx_pdf(doc, xml):
    pdf = HTML(string=page(doc)).write_pdf(pdf_variant="pdf/a-3b")
    return generate_from_binary(pdf, xml, flavor="factur-x", level="en16931", check_xsd=False)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: python facturx_weasyprint.py INVOICE.json FACTUR-X.xml N")
    doc = json.load(open(sys.argv[1], encoding="utf-8"))["one_page"]
    xml = open(sys.argv[2], "rb").read()
    runs = max(1, int(sys.argv[3]))
    times, size, pdf = [], 0, b""
    for i in range(WARMUP + runs):
        mine = dict(doc, reference=f"F2026-{i + 1:05}")
        start = time.perf_counter()
        pdf = facturx_pdf(mine, xml)
        ms = (time.perf_counter() - start) * 1000
        if not pdf.startswith(b"%PDF"):
            sys.exit("not a PDF")
        size = len(pdf)
        if i >= WARMUP:
            times.append(ms)
    times.sort()
    pct = lambda p: times[round((len(times) - 1) * p)]  # noqa: E731
    if os.environ.get("PRINT_PDF_DIR"):
        open(os.path.join(os.environ["PRINT_PDF_DIR"], "weasyprint_facturx.pdf"), "wb").write(pdf)
    import facturx
    import weasyprint

    print(
        json.dumps(
            {
                "weasyprint": weasyprint.__version__,
                "factur_x": getattr(facturx, "__version__", "?"),
                "runs": runs,
                "median_ms": round(pct(0.5), 2),
                "p99_ms": round(pct(0.99), 2),
                "pdf_bytes": size,
            }
        )
    )


if __name__ == "__main__":
    main()
