//! VERI*FACTU jobs: `verifactu.submit` sends an issuer's records to the AEAT,
//! `verifactu.check_authorization` (daily) asks whether declared powers of
//! attorney are confirmed.
//!
//! Submission, per issuer, one job at a time (dedupe key per issuer):
//!
//! 1. A batch still `sending` (its request failed, timed out, or the worker
//!    died) is sent again, byte for byte, before anything else.
//! 2. Otherwise the next up to 1,000 `pending` records, in chain order, become
//!    a `sending` batch in a committed transaction, before any byte goes out.
//! 3. The answer is stored per record (`accepted`, `accepted_with_errors`,
//!    `rejected` with the AEAT code and text, the CSV) and per batch
//!    (`EstadoEnvio`, CSV, `TiempoEsperaEnvio`).
//! 4. The next batch waits `TiempoEsperaEnvio` seconds from the previous
//!    request (60 when the answer gives none), unless 1,000 records are
//!    waiting (Orden HAC/1177/2024 art. 16.2): the job is rescheduled for
//!    that instant.
//!
//! A batch sent again may have reached the AEAT the first time: its records
//! then come back as duplicates (error 3000), which count as accepted because
//! the batch carries the same stored XML, hence the same huella. A first-time
//! record answered 3000 is someone else's record with the same invoice id:
//! rejected.

use std::sync::Arc;

use store::jobs::VerifactuSubmit;
use store::verifactu::{self as vf, status};
use verifactu::respuesta::{
    EstadoRegistro, EstadoRegistroDuplicado, RespuestaAeat, RespuestaLinea, TipoOperacion,
    parse_respuesta,
};

use crate::{Context, Job, JobError, aeat::AeatClient};

/// Records per request (`RegFactuSistemaFacturacion` allows 1,000).
pub const BATCH_SIZE: usize = verifactu::RegFactuSistemaFacturacion::MAX_REGISTROS;
/// Wait between requests until the AEAT says otherwise (seconds).
pub const DEFAULT_WAIT_SECONDS: i64 = 60;
/// AEAT error: `Registro de facturación duplicado.`
pub const DUPLICATE: u32 = 3000;

const SECOND: i64 = 1_000_000;

/// `verifactu.submit`: sends the issuer's pending records, batch after batch.
pub(crate) async fn submit(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: VerifactuSubmit = job.payload()?;
    let Some(client) = ctx.aeat.clone() else {
        return Err(anyhow::anyhow!(
            "this worker does not send to the AEAT: run it with INVOICING_AEAT_MODE=test or \
             production (and INVOICING_AEAT_CERT); the records stay pending meanwhile"
        )
        .into());
    };
    loop {
        let mut conn = ctx.db.pool().acquire().await?;
        let batch_id = match vf::batch_in_flight(&mut conn, &p.company_id).await? {
            Some(b) => {
                tracing::info!(batch = %b.id, attempts = b.attempts, "sending an unanswered batch again");
                b.id
            }
            None => {
                let pending = vf::pending_count(&mut conn, &p.company_id).await?;
                if pending == 0 {
                    drop(conn);
                    if finish(&ctx, &job, &p.company_id).await? {
                        return Ok(());
                    }
                    continue;
                }
                // The wait is skipped once a full batch is waiting (art. 16.2 c).
                if pending < i64::try_from(BATCH_SIZE).unwrap_or(i64::MAX)
                    && let Some(at) = not_before(&mut conn, &p.company_id).await?
                    && at > store::now_micros()
                {
                    tracing::info!(
                        pending,
                        "waiting for TiempoEsperaEnvio before the next batch"
                    );
                    return Err(JobError::Later(at));
                }
                drop(conn);
                let mut tx = ctx.db.begin_write().await?;
                let records = vf::next_pending(
                    tx.conn(),
                    &p.company_id,
                    i64::try_from(BATCH_SIZE).unwrap_or(1000),
                )
                .await?;
                if records.is_empty() {
                    continue;
                }
                let id = vf::create_batch(tx.conn(), &p.company_id, &records).await?;
                tx.commit().await?;
                id
            }
        };
        send_batch(&ctx, &client, &batch_id).await?;
    }
}

/// The earliest instant of the next request: the last one plus its wait.
async fn not_before(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
) -> Result<Option<i64>, JobError> {
    Ok(vf::last_answered_batch(conn, company_id)
        .await?
        .and_then(|b| {
            let wait = b.wait_seconds.unwrap_or(DEFAULT_WAIT_SECONDS).max(0);
            b.sent_at
                .map(|sent| sent.saturating_add(wait.saturating_mul(SECOND)))
        }))
}

/// Nothing left: frees the dedupe key while holding the issuer's chain head,
/// so an invoice issued meanwhile either is seen here (and sent) or enqueues a
/// new job. Returns false when records appeared.
async fn finish(ctx: &Context, job: &Job, company_id: &store::CompanyId) -> Result<bool, JobError> {
    let mut tx = ctx.db.begin_write().await?;
    vf::lock_head(tx.conn(), company_id).await?;
    if vf::pending_count(tx.conn(), company_id).await? > 0
        || vf::batch_in_flight(tx.conn(), company_id).await?.is_some()
    {
        return Ok(false);
    }
    if !store::jobs::release_dedupe_key(tx.conn(), &job.id, &job.worker_id).await? {
        return Err(anyhow::anyhow!("lost the job's lease before finishing").into());
    }
    tx.commit().await?;
    tracing::info!("every record of the issuer is answered");
    Ok(true)
}

/// Sends one batch and stores the answer. Failures leave it `sending` (to be
/// sent again) with the error kept on the batch.
async fn send_batch(ctx: &Context, client: &AeatClient, batch_id: &str) -> Result<(), JobError> {
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(batch) = vf::batch(&mut conn, batch_id).await? else {
        return Err(JobError::Permanent(format!("batch {batch_id} disappeared")));
    };
    let records = vf::batch_records(&mut conn, batch_id).await?;
    let docs: Vec<&str> = records.iter().map(|r| r.xml.as_str()).collect();
    let envelope = verifactu::peticion::sobre_soap_de_documentos(&docs).map_err(|e| {
        JobError::Permanent(format!(
            "batch {batch_id} cannot be assembled from the stored records: {e}"
        ))
    })?;
    let sent = verifactu::peticion::leer_peticion(&envelope)
        .map_err(|e| JobError::Permanent(format!("batch {batch_id} does not read back: {e}")))?;
    // Sent before: the AEAT may already hold these records.
    let resent = batch.attempts > 0;
    let now = store::now_micros();
    vf::batch_sending(&mut conn, batch_id, now).await?;
    tracing::info!(batch = %batch_id, records = records.len(), resent, endpoint = client.endpoint(), "sending to the AEAT");
    let body = match client.send(envelope).await {
        Ok(b) => b,
        Err(e) => return failed(&mut conn, batch_id, e.to_string()).await,
    };
    let answer = match parse_respuesta(&body) {
        Ok(RespuestaAeat::Procesada(r)) => r,
        Ok(RespuestaAeat::Fault(f)) => {
            return failed(
                &mut conn,
                batch_id,
                format!(
                    "the AEAT rejected the whole request (SOAP fault{}): {}",
                    if f.reenviar() { ", server side" } else { "" },
                    f.explicacion()
                ),
            )
            .await;
        }
        Err(e) => return failed(&mut conn, batch_id, e.to_string()).await,
    };
    drop(conn);

    // Match every record to its line before writing anything.
    let mut outcomes = Vec::with_capacity(records.len());
    for (record, leido) in records.iter().zip(&sent.registros) {
        let tipo = if leido.anulacion {
            TipoOperacion::Anulacion
        } else {
            TipoOperacion::Alta
        };
        let line = answer.lineas.iter().find(|l| {
            l.tipo_operacion == tipo
                && l.id_factura.num_serie_factura.trim() == leido.num_serie.trim()
                && l.id_factura.fecha_expedicion_factura == leido.fecha_expedicion
        });
        let Some(line) = line else {
            let mut conn = ctx.db.pool().acquire().await?;
            return failed(
                &mut conn,
                batch_id,
                format!(
                    "the AEAT's answer has no line for record {} ({}); the batch will be sent again",
                    record.seq, leido.num_serie
                ),
            )
            .await;
        };
        outcomes.push((record, outcome(line, resent)));
    }
    let csv = answer.csv.as_deref();
    let wait = answer
        .tiempo_espera_envio
        .map_or(DEFAULT_WAIT_SECONDS, i64::from);
    let now = store::now_micros();
    let mut tx = ctx.db.begin_write().await?;
    for (record, o) in &outcomes {
        vf::record_answered(
            tx.conn(),
            &record.id,
            o.status,
            o.code.as_deref(),
            o.description.as_deref(),
            (o.status != status::REJECTED).then_some(csv).flatten(),
            now,
        )
        .await?;
        crate::webhooks::emit_verifactu(
            tx.conn(),
            record,
            o.status,
            o.code.as_deref(),
            o.description.as_deref(),
        )
        .await?;
        if o.status == status::REJECTED {
            tracing::warn!(seq = record.seq, code = ?o.code, description = ?o.description, "the AEAT rejected a record");
        }
    }
    vf::batch_answered(
        tx.conn(),
        batch_id,
        &format!("{:?}", answer.estado_envio),
        csv,
        wait,
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(batch = %batch_id, estado = ?answer.estado_envio, wait, "the AEAT answered");
    Ok(())
}

/// Keeps the error on the batch (which stays `sending`) and fails the run, so it is retried with backoff.
async fn failed(
    conn: &mut sqlx::AnyConnection,
    batch_id: &str,
    error: String,
) -> Result<(), JobError> {
    vf::batch_failed(conn, batch_id, &error).await?;
    Err(anyhow::anyhow!(error).into())
}

struct Outcome {
    status: &'static str,
    code: Option<String>,
    description: Option<String>,
}

/// A record's state from its answer line.
fn outcome(line: &RespuestaLinea, resent: bool) -> Outcome {
    let code = line.codigo_error_registro.map(|c| c.to_string());
    let description = line.descripcion_error_registro.clone();
    match line.estado_registro {
        EstadoRegistro::Correcto => Outcome {
            status: status::ACCEPTED,
            code,
            description,
        },
        EstadoRegistro::AceptadoConErrores => Outcome {
            status: status::ACCEPTED_WITH_ERRORS,
            code,
            description,
        },
        EstadoRegistro::Incorrecto if resent && line.codigo_error_registro == Some(DUPLICATE) => {
            let with_errors = line
                .registro_duplicado
                .as_ref()
                .is_some_and(|d| d.estado == EstadoRegistroDuplicado::AceptadaConErrores);
            let held = line.registro_duplicado.as_ref();
            Outcome {
                status: if with_errors {
                    status::ACCEPTED_WITH_ERRORS
                } else {
                    status::ACCEPTED
                },
                code: held.and_then(|d| d.codigo_error.map(|c| c.to_string())),
                description: Some(format!(
                    "registered by an earlier request of the same batch (the AEAT answered {DUPLICATE}, duplicate{})",
                    held.and_then(|d| d.descripcion_error.as_deref())
                        .map(|d| format!("; held with: {d}"))
                        .unwrap_or_default()
                )),
            }
        }
        EstadoRegistro::Incorrecto => Outcome {
            status: status::REJECTED,
            description: Some(
                line.explicacion()
                    .or(description)
                    .unwrap_or_else(|| "rejected by the AEAT without an error code".to_owned()),
            ),
            code,
        },
    }
}

/// `verifactu.check_authorization` (daily): asks the configured checker
/// whether the AEAT confirms each declared power of attorney; confirmed ones
/// take effect (issuing is no longer blocked).
pub(crate) async fn check_authorization(ctx: Context, _job: Job) -> Result<(), JobError> {
    let mut conn = ctx.db.pool().acquire().await?;
    let waiting = vf::pending_powers_of_attorney(&mut conn).await?;
    drop(conn);
    if waiting.is_empty() {
        return Ok(());
    }
    let Some(checker) = ctx.poa_checker.clone() else {
        for (company_id, nif) in &waiting {
            tracing::warn!(
                company = %company_id, nif = %nif,
                "a power of attorney waits for confirmation and no checker is configured \
                 (INVOICING_AEAT_POA_CHECK_URL): check it at the AEAT and run \
                 `invoicing admin verifactu authorize --company {company_id} --method power_of_attorney`"
            );
        }
        return Ok(());
    };
    check_with(&ctx, checker, waiting).await
}

async fn check_with(
    ctx: &Context,
    checker: Arc<dyn crate::aeat::PowerOfAttorneyChecker>,
    waiting: Vec<(store::CompanyId, String)>,
) -> Result<(), JobError> {
    let mut errors = Vec::new();
    for (company_id, nif) in waiting {
        match checker.confirmed(&nif).await {
            Ok(true) => {
                let mut tx = ctx.db.begin_write().await?;
                let still = vf::authorization(tx.conn(), &company_id)
                    .await?
                    .is_some_and(|a| a.status == "pending_confirmation" && a.in_effect == 0);
                if still {
                    vf::set_authorization(
                        tx.conn(),
                        &company_id,
                        "in_effect",
                        true,
                        "power_of_attorney",
                        Some("power of attorney confirmed by the AEAT check"),
                        None,
                    )
                    .await?;
                    tx.commit().await?;
                    tracing::info!(company = %company_id, "power of attorney confirmed: authorization in effect");
                }
            }
            Ok(false) => {
                tracing::info!(company = %company_id, "power of attorney not confirmed yet");
            }
            Err(e) => errors.push(format!("{company_id}: {e:#}")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "the power-of-attorney check failed for {}",
            errors.join("; ")
        )
        .into())
    }
}
