-- One typed document per issued invoice (crates/document): the EN 16931 content of the
-- invoice as versioned JSON, written once at issue and decoded by every reader. Existing
-- issued invoices get theirs from their snapshot columns when the service starts
-- (`api::documents::backfill`), which then empties those columns: an issued invoice's
-- content is in one place.
ALTER TABLE invoices ADD COLUMN document_json TEXT;
-- What a draft says beyond its lines (EN 16931 BT-10, BT-13, BT-72, BT-73/74, BT-22), as one
-- typed JSON value (`store::invoices::DraftDetails`).
ALTER TABLE invoices ADD COLUMN details_json TEXT NOT NULL DEFAULT '{}';

-- Company settings of the legal content (API.md "Legal content of an invoice").
ALTER TABLE companies ADD COLUMN payment_terms_days BIGINT NOT NULL DEFAULT 30;
ALTER TABLE companies ADD COLUMN reminder_days_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE companies ADD COLUMN electronic_address_json TEXT;
ALTER TABLE companies ADD COLUMN contact_name TEXT;

-- Entity settings: payment terms overriding the company's, and e-invoice settings.
ALTER TABLE entities ADD COLUMN payment_terms_days BIGINT;
ALTER TABLE entities ADD COLUMN einvoice_json TEXT;
