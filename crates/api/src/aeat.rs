//! Glue between issuing and the `verifactu` crate: a Spanish issuer's invoice
//! gets its registration record, chained to the issuer's previous record, in
//! the same transaction as its number.

use chrono::{DateTime, SubsecRound, Utc};
use verifactu::{
    Cabecera, CalificacionOperacion, ClaveRegimen, CodigoPais, DatosAlta, DatosAnulacion,
    DetalleDesglose, Fecha, FechaHoraHuso, HusoHorario, IdFactura, IdOtro, IdType, Importe, Nif,
    OperacionExenta, OperativaAnulacion, PersonaFisicaJuridica, PersonaNif, Porcentaje,
    Rectificacion, RegFactuSistemaFacturacion, RegistroFactura, RegistroPrevio, SistemaInformatico,
    TipoFactura, TipoRectificativa,
};

use crate::workflows::{AppError, AppResult};

/// Where records go: not sent, the AEAT's test service, or production.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Records are built and chained but never sent.
    #[default]
    Disabled,
    Test,
    Production,
}

impl Mode {
    /// From `INVOICING_AEAT_MODE`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "" | "disabled" => Ok(Self::Disabled),
            "test" => Ok(Self::Test),
            "production" => Ok(Self::Production),
            other => Err(format!(
                "INVOICING_AEAT_MODE must be disabled, test or production, not `{other}`"
            )),
        }
    }

    fn entorno(self) -> verifactu::qr::Entorno {
        match self {
            Self::Production => verifactu::qr::Entorno::Produccion,
            _ => verifactu::qr::Entorno::Pruebas,
        }
    }
}

fn bad(context: &str) -> impl Fn(verifactu::ValidationError) -> AppError + '_ {
    move |e| {
        AppError::invalid(format!(
            "VERI*FACTU: {context}: {e}. The invoice stays a draft."
        ))
    }
}

/// The Madrid-time generation stamp, whole seconds.
fn madrid(now: DateTime<Utc>) -> AppResult<FechaHoraHuso> {
    FechaHoraHuso::from_utc(now.trunc_subsecs(0), HusoHorario::Peninsula).map_err(bad("timestamp"))
}

/// The invoice date as the AEAT sees it: the Spanish date of the issue instant.
pub fn fecha_expedicion(issued_at: DateTime<Utc>) -> AppResult<Fecha> {
    madrid(issued_at)?.fecha().map_err(bad("issue date"))
}

fn recipient(p: &document::Party) -> AppResult<PersonaFisicaJuridica> {
    let name = p.name.chars().take(120).collect::<String>();
    if p.country == "ES" {
        let id = p.tax_id.as_deref().ok_or_else(|| {
            AppError::invalid(
                "VERI*FACTU: a Spanish recipient needs its NIF (`fiscal_id` of the entity) on an F1 invoice. \
                 The invoice stays a draft.",
            )
        })?;
        return PersonaFisicaJuridica::con_nif(&name, Nif::new(id).map_err(bad("recipient NIF"))?)
            .map_err(bad("recipient"));
    }
    let country = CodigoPais::new(&p.country).map_err(bad("recipient country"))?;
    let configured_type = p
        .settings
        .as_ref()
        .and_then(|s| s.aeat_id_type.as_deref())
        .and_then(|t| IdType::from_code(t).ok());
    let (id_type, id) = match (&p.vat_id, &p.tax_id) {
        (Some(vat), _) => (configured_type.unwrap_or(IdType::NifIva), vat.clone()),
        (None, Some(fid)) => (
            configured_type.unwrap_or(IdType::DocumentoOficialPaisResidencia),
            fid.clone(),
        ),
        (None, None) => {
            return Err(AppError::invalid(
                "VERI*FACTU: the recipient needs a tax id (`fiscal_id` or `vies_vat_id`) on an F1 invoice. \
                 The invoice stays a draft.",
            ));
        }
    };
    let otro = IdOtro::new(Some(country), id_type, &id).map_err(bad("recipient id"))?;
    PersonaFisicaJuridica::con_id_otro(&name, otro).map_err(bad("recipient"))
}

/// The `Desglose` from the invoice's computed VAT lines, grouped by treatment and rate.
fn desglose(lines: &[domain::invoice::Line]) -> AppResult<(Vec<DetalleDesglose>, i64)> {
    if lines.iter().any(|l| l.is_tax) {
        return Err(AppError::invalid(
            "VERI*FACTU: Spanish invoices need their VAT computed by the service (no explicit `is_tax` lines), \
             so the AEAT breakdown can name each rate. The invoice stays a draft.",
        ));
    }
    let mut groups: Vec<(String, rust_decimal::Decimal, i64, i64)> = Vec::new();
    for t in lines
        .iter()
        .flat_map(|l| &l.tax_lines)
        .filter(|t| t.kind == "vat")
    {
        match groups
            .iter_mut()
            .find(|g| g.0 == t.treatment && g.1 == t.rate)
        {
            Some(g) => {
                g.2 += t.base;
                g.3 += t.amount;
            }
            None => groups.push((t.treatment.clone(), t.rate, t.base, t.amount)),
        }
    }
    let importe = |c: i64| Importe::from_cents(c).map_err(bad("amount"));
    let mut out = Vec::new();
    let mut cuota_total = 0;
    for (treatment, rate, base, amount) in groups {
        let detalle = match treatment.as_str() {
            "domestic" | "intra_eu_b2c" | "outside_eu_b2c" => {
                cuota_total += amount;
                DetalleDesglose::sujeta(
                    ClaveRegimen::General,
                    Porcentaje::new(rate).map_err(bad("rate"))?,
                    importe(base)?,
                    importe(amount)?,
                )
            }
            // Services taxed where the customer is: not subject in Spain (AEAT FAQ: N2).
            "reverse_charge" | "not_subject" => DetalleDesglose::no_sujeta(
                ClaveRegimen::General,
                CalificacionOperacion::N2,
                importe(base)?,
            ),
            "intra_eu_exempt" => {
                DetalleDesglose::exenta(ClaveRegimen::General, OperacionExenta::E5, importe(base)?)
            }
            "export_exempt" => DetalleDesglose::exenta(
                ClaveRegimen::Exportacion,
                OperacionExenta::E2,
                importe(base)?,
            ),
            other => {
                return Err(AppError::invalid(format!(
                    "VERI*FACTU: the tax treatment `{other}` cannot be reported to the AEAT. The invoice stays a draft."
                )));
            }
        };
        out.push(detalle);
    }
    if out.is_empty() || out.len() > 12 {
        return Err(AppError::invalid(
            "VERI*FACTU: an invoice needs 1 to 12 distinct VAT breakdown lines. The invoice stays a draft.",
        ));
    }
    Ok((out, cuota_total))
}

/// Builds, chains and stores the registration record of a just-issued invoice, from its
/// document.
pub async fn register_issue(
    conn: &mut sqlx::AnyConnection,
    mode: Mode,
    company: &store::companies::CompanyRow,
    invoice: &document::Invoice,
    now: DateTime<Utc>,
) -> AppResult<()> {
    let nif = Nif::new(&company.fiscal_id).map_err(bad("issuer NIF"))?;
    let reference = invoice.number.as_str();
    let generated = madrid(now)?;
    let fecha = generated.fecha().map_err(bad("issue date"))?;
    let id_factura =
        IdFactura::parse(nif.as_str(), reference, &fecha.to_string()).map_err(bad("invoice id"))?;
    let lines: Vec<domain::invoice::Line> = invoice
        .lines
        .iter()
        .map(document::Line::to_domain)
        .collect();
    let (desglose, cuota_total) = desglose(&lines)?;
    let tipo = match &invoice.preceding {
        Some(p) => TipoFactura::from_code(p.reason.code()).map_err(bad("corrective reason"))?,
        None => TipoFactura::F1,
    };
    let name: String = company.name.chars().take(120).collect();
    let sistema = sistema(conn, company, &nif, &name).await?;
    let description: String = lines
        .iter()
        .map(|l| l.concept.as_str())
        .collect::<Vec<_>>()
        .join("; ")
        .chars()
        .take(500)
        .collect();
    let mut datos = DatosAlta::new(
        id_factura,
        &name,
        tipo,
        &description,
        vec![recipient(&invoice.buyer)?],
        desglose,
        Importe::from_cents(cuota_total).map_err(bad("CuotaTotal"))?,
        Importe::from_cents(invoice.totals.line_net + cuota_total).map_err(bad("ImporteTotal"))?,
        sistema,
    );
    if let Some(original) = &invoice.preceding {
        let original_id = IdFactura::parse(
            nif.as_str(),
            &original.number,
            &fecha_expedicion(original.issued_at)?.to_string(),
        )
        .map_err(bad("corrected invoice id"))?;
        datos.rectificacion = Some(Rectificacion {
            tipo: TipoRectificativa::Diferencias,
            facturas_rectificadas: vec![original_id],
            importe_rectificacion: None,
        });
    }

    let (head, previo) = locked_head(conn, &company.id).await?;
    let (registro, _) = verifactu::chain::encadenar_alta(datos, previo.as_ref(), generated)
        .map_err(bad("record"))?;
    let qr_url = verifactu::qr::url_cotejo_registro(&registro, mode.entorno()).ok();
    let tipo_factura = Some(tipo.code().to_owned());
    store_record(
        conn,
        mode,
        company,
        &invoice.id,
        &head,
        previo.as_ref(),
        registro.into(),
        NewRecord {
            tipo_factura,
            qr_url,
            reason: None,
            generated,
            now,
        },
    )
    .await?;
    Ok(())
}

/// The `SistemaInformatico` block: this software, installed per company.
async fn sistema(
    conn: &mut sqlx::AnyConnection,
    company: &store::companies::CompanyRow,
    nif: &Nif,
    name: &str,
) -> AppResult<SistemaInformatico> {
    let companies: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM companies")
        .fetch_one(&mut *conn)
        .await?;
    Ok(SistemaInformatico {
        productor: PersonaFisicaJuridica::con_nif(name, nif.clone())
            .map_err(bad("software producer"))?,
        nombre_sistema_informatico: "invoicing".into(),
        id_sistema_informatico: "IV".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        numero_instalacion: company.id.to_string(),
        tipo_uso_posible_solo_verifactu: true,
        tipo_uso_posible_multi_ot: true,
        indicador_multiples_ot: companies > 1,
    })
}

/// Locks the issuer's chain head (held until the transaction ends) and reads its last record.
async fn locked_head(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
) -> AppResult<(store::verifactu::ChainHead, Option<RegistroPrevio>)> {
    let head = store::verifactu::lock_head(conn, company_id).await?;
    let previo = match (&head.nif, &head.num_serie, &head.fecha, &head.huella) {
        (Some(n), Some(s), Some(f), Some(h)) => {
            Some(RegistroPrevio::parse(n, s, f, h).map_err(bad("previous record"))?)
        }
        _ => None,
    };
    Ok((head, previo))
}

/// What a stored record carries besides the chained record itself.
struct NewRecord {
    tipo_factura: Option<String>,
    qr_url: Option<String>,
    reason: Option<String>,
    generated: FechaHoraHuso,
    now: DateTime<Utc>,
}

/// Stores a chained record, moves the head to it and, when records are sent,
/// makes sure the issuer's submission job is queued (same transaction).
#[allow(clippy::too_many_arguments)]
async fn store_record(
    conn: &mut sqlx::AnyConnection,
    mode: Mode,
    company: &store::companies::CompanyRow,
    invoice_id: &str,
    head: &store::verifactu::ChainHead,
    previo: Option<&RegistroPrevio>,
    registro: RegistroFactura,
    extra: NewRecord,
) -> AppResult<store::verifactu::RecordRow> {
    let nif = Nif::new(&company.fiscal_id).map_err(bad("issuer NIF"))?;
    let name: String = company.name.chars().take(120).collect();
    let cabecera = Cabecera::new(PersonaNif::new(&name, nif).map_err(bad("issuer"))?);
    let (kind, hash_input) = match &registro {
        RegistroFactura::Alta(a) => ("alta", a.cadena_huella()),
        RegistroFactura::Anulacion(a) => ("anulacion", a.cadena_huella()),
    };
    let huella = registro.huella().to_string();
    let cabeza = registro.como_registro_previo();
    let xml = RegFactuSistemaFacturacion::new(cabecera, vec![registro])
        .map_err(bad("submission"))?
        .to_xml();
    let seq = head.seq + 1;
    let row = store::verifactu::RecordRow {
        id: store::new_id(),
        company_id: company.id.clone(),
        invoice_id: invoice_id.to_owned(),
        seq,
        kind: kind.into(),
        tipo_factura: extra.tipo_factura,
        huella,
        previous_huella: previo.map(|p| p.huella.to_string()),
        hash_input,
        generated_at: extra.generated.to_string(),
        xml,
        qr_url: extra.qr_url,
        status: if mode == Mode::Disabled {
            store::verifactu::status::NOT_SENT
        } else {
            store::verifactu::status::PENDING
        }
        .into(),
        aeat_code: None,
        aeat_description: None,
        csv: None,
        attempts: 0,
        submitted_at: None,
        created_at: extra.now.timestamp_micros(),
        batch_id: None,
        answered_at: None,
        reason: extra.reason,
    };
    store::verifactu::insert(conn, &row).await?;
    store::verifactu::set_head(
        conn,
        &company.id,
        &store::verifactu::ChainHead {
            seq,
            nif: Some(cabeza.id_emisor_factura.as_str().to_owned()),
            num_serie: Some(cabeza.num_serie_factura.as_str().to_owned()),
            fecha: Some(cabeza.fecha_expedicion_factura.to_string()),
            huella: Some(cabeza.huella.to_string()),
        },
    )
    .await?;
    if mode != Mode::Disabled {
        store::jobs::enqueue(conn, &store::jobs::verifactu_submit(&company.id)).await?;
    }
    Ok(row)
}

/// Appends a `RegistroAnulacion` for an issued invoice to the issuer's chain
/// (the invoice was issued in error). The caller checked that the invoice has
/// an alta record and no cancellation yet.
pub async fn register_annulment(
    conn: &mut sqlx::AnyConnection,
    mode: Mode,
    company: &store::companies::CompanyRow,
    invoice: &store::invoices::InvoiceRow,
    alta: &store::verifactu::RecordRow,
    reason: Option<String>,
    now: DateTime<Utc>,
) -> AppResult<store::verifactu::RecordRow> {
    let nif = Nif::new(&company.fiscal_id).map_err(bad("issuer NIF"))?;
    let name: String = company.name.chars().take(120).collect();
    let issued = invoice
        .issued()
        .map_err(|e| crate::documents::corrupt(format!("invoice {}", invoice.id), e))?;
    let id_factura = IdFactura::parse(
        nif.as_str(),
        issued.reference,
        &fecha_expedicion(issued.issued_at)?.to_string(),
    )
    .map_err(bad("invoice id"))?;
    let mut datos = DatosAnulacion::new(id_factura, sistema(conn, company, &nif, &name).await?);
    // The AEAT never registered a rejected alta: cancel it "without previous record".
    if alta.status == store::verifactu::status::REJECTED {
        datos.operativa = OperativaAnulacion::SinRegistroPrevio;
    }
    let generated = madrid(now)?;
    let (head, previo) = locked_head(conn, &company.id).await?;
    let (registro, _) = verifactu::chain::encadenar_anulacion(datos, previo.as_ref(), generated)
        .map_err(bad("cancellation record"))?;
    store_record(
        conn,
        mode,
        company,
        &invoice.id,
        &head,
        previo.as_ref(),
        registro.into(),
        NewRecord {
            tipo_factura: None,
            qr_url: None,
            reason,
            generated,
            now,
        },
    )
    .await
}
