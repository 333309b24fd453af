-- Where an expense came from: 'manual' (typed in, or through the API's JSON) or 'einvoice'
-- (imported from a supplier's UBL, CII or Factur-X file, kept as its receipt), and, for an
-- imported credit note, the expense of the invoice it corrects when that one is known.
ALTER TABLE expenses ADD COLUMN source TEXT NOT NULL DEFAULT 'manual';
ALTER TABLE expenses ADD COLUMN corrected_expense_id TEXT;
