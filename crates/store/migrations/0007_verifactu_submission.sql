-- VERI*FACTU submission: records are sent to the AEAT in batches by the
-- `verifactu.submit` job, one issuer at a time, in chain order.
--
-- Record states (verifactu_records.status):
--   not_sent              mode disabled: built and chained, never sent
--   pending               waiting for the submission job
--   sending               in a batch whose HTTP request may have gone out
--                         (committed before the request: a crash re-sends the
--                         same batch, and the AEAT's "duplicate" answer 3000
--                         for it counts as accepted)
--   accepted              EstadoRegistro Correcto
--   accepted_with_errors  EstadoRegistro AceptadoConErrores (registered)
--   rejected              EstadoRegistro Incorrecto (not registered)

CREATE TABLE verifactu_batches (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    -- sending (request may be out), answered (AEAT answer stored)
    status TEXT NOT NULL CHECK (status IN ('sending', 'answered')),
    records BIGINT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    -- HTTP requests made for this batch (more than 1 after a failure or crash)
    attempts BIGINT NOT NULL DEFAULT 0,
    -- EstadoEnvio: Correcto, ParcialmenteCorrecto, Incorrecto
    estado_envio TEXT,
    csv TEXT,
    -- TiempoEsperaEnvio of the answer, seconds
    wait_seconds BIGINT,
    -- The last failure (network error, SOAP fault) while sending
    last_error TEXT,
    created_at BIGINT NOT NULL,
    -- When the last request of this batch went out
    sent_at BIGINT,
    answered_at BIGINT
);
CREATE INDEX verifactu_batches_company ON verifactu_batches (company_id, status, created_at);

ALTER TABLE verifactu_records ADD COLUMN batch_id TEXT;
ALTER TABLE verifactu_records ADD COLUMN answered_at BIGINT;
-- The reason given for a RegistroAnulacion (invoice issued in error).
ALTER TABLE verifactu_records ADD COLUMN reason TEXT;

-- One cancellation per invoice.
CREATE UNIQUE INDEX verifactu_records_one_annulment ON verifactu_records (invoice_id) WHERE kind = 'anulacion';
