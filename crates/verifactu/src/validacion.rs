//! Invoice-level rules for `RegistroAlta` from the AEAT document
//! "Validaciones y errores" (section 3.1.3). Line rules live in
//! [`crate::desglose`]. Rules that need the AEAT census or the AEAT's clock
//! (NIF registered, date not in the future) cannot be checked here.

use chrono::NaiveDate;

use crate::alta::{DatosAlta, EmitidaPor};
use crate::codes::{
    ClaveRegimen as Clave, IdType, Impuesto, OperacionExenta, TipoFactura, TipoRectificativa,
};
use crate::desglose::Operacion;
use crate::error::{ValidationError, texto, texto_opcional};
use crate::ids::{CodigoPais, Identificacion, PersonaFisicaJuridica};
use crate::reglas_desglose::{Contexto, validar_detalle};

fn rule(code: impl Into<Option<u16>>, message: impl Into<String>) -> Result<(), ValidationError> {
    Err(ValidationError::rule(code, message))
}

/// First issue date the AEAT accepts: 28-10-2024, entry into force of the
/// Orden HAC/1177/2024 (AEAT error 1152).
fn primera_fecha_admitida() -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 10, 28).unwrap_or(NaiveDate::MIN)
}

/// Validates a registration before it is hashed.
pub(crate) fn validar_alta(d: &DatosAlta) -> Result<(), ValidationError> {
    texto("NombreRazonEmisor", &d.nombre_razon_emisor, 120)?;
    texto("DescripcionOperacion", &d.descripcion_operacion, 500)?;
    texto_opcional("RefExterna", d.ref_externa.as_deref(), 60)?;
    texto_opcional(
        "NumRegistroAcuerdoFacturacion",
        d.num_registro_acuerdo_facturacion.as_deref(),
        15,
    )?;
    texto_opcional(
        "IdAcuerdoSistemaInformatico",
        d.id_acuerdo_sistema_informatico.as_deref(),
        16,
    )?;
    d.sistema_informatico.validar()?;

    let expedicion = d.id_factura.fecha_expedicion.naive();
    if expedicion < primera_fecha_admitida() {
        return rule(
            1152,
            "FechaExpedicionFactura cannot be earlier than 28-10-2024",
        );
    }
    validar_tipo(d)?;
    validar_destinatarios(d)?;

    if d.desglose.is_empty() || d.desglose.len() > 12 {
        return rule(
            None,
            format!("Desglose must have 1 to 12 lines, not {}", d.desglose.len()),
        );
    }
    let ctx = Contexto {
        tipo_factura: d.tipo_factura,
        tipo_rectificativa: d.rectificacion.as_ref().map(|r| r.tipo),
        fecha_devengo: d.fecha_operacion.map_or(expedicion, |f| f.naive()),
    };
    for (i, linea) in d.desglose.iter().enumerate() {
        validar_detalle(linea, i + 1, &ctx)?;
    }
    validar_claves_de_factura(d)?;
    validar_totales(d)
}

/// `TipoFactura`-dependent blocks (errors 1114–1119, 1157, 1183, 1185).
fn validar_tipo(d: &DatosAlta) -> Result<(), ValidationError> {
    let t = d.tipo_factura;
    match (&d.rectificacion, t.es_rectificativa()) {
        (None, true) => {
            return rule(
                1114,
                format!("a {t} corrective invoice needs TipoRectificativa"),
            );
        }
        (Some(_), false) => {
            return rule(
                1115,
                format!("a {t} invoice cannot carry TipoRectificativa or FacturasRectificadas"),
            );
        }
        (Some(r), true) => {
            match (r.tipo, r.importe_rectificacion.is_some()) {
                (TipoRectificativa::Sustitucion, false) => {
                    return rule(
                        1118,
                        "a corrective by substitution (S) needs ImporteRectificacion",
                    );
                }
                (TipoRectificativa::Diferencias, true) => {
                    return rule(
                        1119,
                        "ImporteRectificacion is only allowed on correctives by substitution (S)",
                    );
                }
                _ => {}
            }
            if r.facturas_rectificadas.len() > 1000 {
                return rule(None, "FacturasRectificadas holds at most 1000 invoices");
            }
        }
        (None, false) => {}
    }
    if !d.facturas_sustituidas.is_empty() && t != TipoFactura::F3 {
        return rule(1116, "FacturasSustituidas is only allowed on F3 invoices");
    }
    if d.facturas_sustituidas.len() > 1000 {
        return rule(None, "FacturasSustituidas holds at most 1000 invoices");
    }
    if d.factura_simplificada_art_7273 && matches!(t, TipoFactura::F2 | TipoFactura::R5) {
        return rule(
            1183,
            "FacturaSimplificadaArt7273 can only be S on F1, F3 and R1–R4",
        );
    }
    if d.factura_sin_identif_destinatario_art_61d && !matches!(t, TipoFactura::F2 | TipoFactura::R5)
    {
        return rule(
            1185,
            "FacturaSinIdentifDestinatarioArt61d can only be S on F2 and R5",
        );
    }
    if d.cupon && !matches!(t, TipoFactura::R1 | TipoFactura::R5) {
        return rule(1157, "Cupon can only be S on R1 and R5");
    }
    if let Some(f) = d.fecha_operacion {
        let con_devengo_pendiente = d.desglose.iter().any(|l| {
            matches!(l.impuesto, Impuesto::Iva | Impuesto::Igic)
                && matches!(
                    l.clave_regimen,
                    Some(Clave::PendienteDevengoObraAapp | Clave::PendienteDevengoTractoSucesivo)
                )
        });
        if f > d.id_factura.fecha_expedicion && !con_devengo_pendiente {
            return rule(
                1146,
                "FechaOperacion can only be after the issue date with ClaveRegimen 14 or 15",
            );
        }
    }
    Ok(())
}

/// `Destinatarios`, `Tercero` and their identifications (3.1.3 points 11–13).
fn validar_destinatarios(d: &DatosAlta) -> Result<(), ValidationError> {
    let t = d.tipo_factura;
    if t.requiere_destinatarios() && d.destinatarios.is_empty() {
        return rule(
            1189,
            format!("a {t} invoice needs at least one recipient (Destinatarios)"),
        );
    }
    if !t.requiere_destinatarios() && !d.destinatarios.is_empty() {
        return rule(1190, format!("a {t} invoice cannot carry Destinatarios"));
    }
    if d.destinatarios.len() > 1000 {
        return rule(None, "Destinatarios holds at most 1000 recipients");
    }
    for p in &d.destinatarios {
        p.validar()?;
        let Some(o) = p.id_otro() else { continue };
        if o.codigo_pais == Some(CodigoPais::ES)
            && !matches!(o.id_type, IdType::Pasaporte | IdType::NoCensado)
        {
            return rule(
                1234,
                "a recipient identified by IDOtro with CodigoPais ES must use IDType 03 or 07",
            );
        }
        if o.id_type == IdType::NifIva && !t.requiere_destinatarios() {
            return rule(
                1156,
                format!("a recipient with IDType 02 (NIF-IVA) is not allowed on a {t} invoice"),
            );
        }
        if t == TipoFactura::R3 && o.id_type != IdType::NoCensado {
            return rule(
                1191,
                "on R3 invoices recipients must be identified by NIF or IDType 07",
            );
        }
        if t == TipoFactura::R2 && !matches!(o.id_type, IdType::NoCensado | IdType::NifIva) {
            return rule(
                1192,
                "on R2 invoices recipients must be identified by NIF, IDType 07 or 02",
            );
        }
    }
    match &d.emitida_por {
        Some(EmitidaPor::Tercero(tercero)) => validar_tercero(d, tercero),
        Some(EmitidaPor::Destinatario) if d.destinatarios.is_empty() => rule(
            1158,
            "EmitidaPorTerceroODestinatario D needs the Destinatarios block",
        ),
        _ => Ok(()),
    }
}

fn validar_tercero(d: &DatosAlta, tercero: &PersonaFisicaJuridica) -> Result<(), ValidationError> {
    tercero.validar()?;
    match &tercero.identificacion {
        Identificacion::Nif(nif) if *nif == d.id_factura.emisor => rule(
            1188,
            "the third party (Tercero) must have a NIF different from the issuer's",
        ),
        Identificacion::IdOtro(o) if o.id_type == IdType::NoCensado => rule(
            1211,
            "the third party (Tercero) cannot use IDType 07 (not registered)",
        ),
        Identificacion::IdOtro(o)
            if o.codigo_pais == Some(CodigoPais::ES) && o.id_type != IdType::Pasaporte =>
        {
            rule(
                1232,
                "a third party identified by IDOtro with CodigoPais ES must use IDType 03",
            )
        }
        _ => Ok(()),
    }
}

/// Rules that tie a `ClaveRegimen` or exemption to the whole invoice.
fn validar_claves_de_factura(d: &DatosAlta) -> Result<(), ValidationError> {
    let claves = || {
        d.desglose
            .iter()
            .filter(|l| matches!(l.impuesto, Impuesto::Iva | Impuesto::Igic))
            .filter_map(|l| l.clave_regimen)
    };
    let todos_con_nif = d
        .destinatarios
        .iter()
        .all(|p| matches!(p.identificacion, Identificacion::Nif(_)));
    if claves().any(|c| c == Clave::CobrosPorCuentaDeTerceros) && !todos_con_nif {
        return rule(
            1205,
            "with ClaveRegimen 10 every recipient must be identified by NIF",
        );
    }
    if claves().any(|c| c == Clave::PendienteDevengoObraAapp) {
        if d.fecha_operacion
            .is_none_or(|f| f <= d.id_factura.fecha_expedicion)
        {
            return rule(
                1147,
                "with ClaveRegimen 14, FechaOperacion is required and must be after the issue date",
            );
        }
        let administracion = d.destinatarios.iter().all(|p| {
            matches!(&p.identificacion, Identificacion::Nif(n) if n.as_str().starts_with(['P', 'Q', 'S', 'V']))
        });
        if !administracion {
            return rule(
                1149,
                "with ClaveRegimen 14, recipients must be public bodies (NIF starting P, Q, S or V)",
            );
        }
    }
    let e5_iva = d.desglose.iter().any(|l| {
        l.impuesto == Impuesto::Iva && l.operacion == Operacion::Exenta(OperacionExenta::E5)
    });
    if e5_iva && d.destinatarios.iter().any(|p| p.id_otro().is_none()) {
        return rule(
            None,
            "an intra-EU supply exempt under E5 needs recipients identified by IDOtro (validation 15.5.1)",
        );
    }
    Ok(())
}

/// `CuotaTotal` and `ImporteTotal` against the lines (points 16–17, ±10.00 €;
/// not applied with `ClaveRegimen` 03, 05, 06, 08 or 09), and the F2 limit
/// of 3 000 € (+10 €) (point 15.8, error 1150).
fn validar_totales(d: &DatosAlta) -> Result<(), ValidationError> {
    let cuota: i128 = d.desglose.iter().map(|l| l.cuota_cents()).sum();
    let total: i128 = d.desglose.iter().map(|l| l.total_cents()).sum();
    let excluida = d.desglose.iter().any(|l| {
        matches!(
            l.clave_regimen,
            Some(
                Clave::Rebu
                    | Clave::AgenciasViajes
                    | Clave::GrupoEntidades
                    | Clave::IpsiIgic
                    | Clave::AgenciasViajesMediadoras
            )
        )
    });
    const MARGEN: i128 = 1000;
    if !excluida {
        if (i128::from(d.cuota_total.cents()) - cuota).abs() > MARGEN {
            return rule(
                2006,
                format!(
                    "CuotaTotal {} does not match the lines' taxes",
                    d.cuota_total
                ),
            );
        }
        if (i128::from(d.importe_total.cents()) - total).abs() > MARGEN {
            return rule(
                2005,
                format!(
                    "ImporteTotal {} does not match the lines' bases plus taxes",
                    d.importe_total
                ),
            );
        }
    }
    let limite_f2 = d.tipo_factura == TipoFactura::F2
        && d.num_registro_acuerdo_facturacion.is_none()
        && !d.factura_sin_identif_destinatario_art_61d;
    let base_mas_cuota: i128 = d
        .desglose
        .iter()
        .map(|l| {
            i128::from(l.base_imponible_o_importe_no_sujeto.cents())
                + i128::from(l.cuota_repercutida.map_or(0, |c| c.cents()))
        })
        .sum();
    if limite_f2 && base_mas_cuota > 300_000 + MARGEN {
        return rule(
            1150,
            "a simplified invoice (F2) cannot exceed 3000.00 € of base plus tax",
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "validacion_tests.rs"]
mod tests;
