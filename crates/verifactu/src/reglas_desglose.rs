//! The AEAT rules for one `DetalleDesglose` line (section 15 of the
//! validation document "Validaciones y errores").

use chrono::NaiveDate;
use rust_decimal::Decimal;

use crate::amount::{Importe, Porcentaje};
use crate::codes::{
    CalificacionOperacion as Cal, ClaveRegimen as Clave, Impuesto, OperacionExenta, TipoFactura,
    TipoRectificativa,
};
use crate::desglose::{DetalleDesglose, Operacion};
use crate::error::ValidationError;

/// Invoice-level facts the line rules depend on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Contexto {
    pub tipo_factura: TipoFactura,
    pub tipo_rectificativa: Option<TipoRectificativa>,
    /// `FechaOperacion`, or `FechaExpedicionFactura` when absent.
    pub fecha_devengo: NaiveDate,
}

fn rule<T>(code: impl Into<Option<u16>>, message: impl Into<String>) -> Result<T, ValidationError> {
    Err(ValidationError::rule(code, message))
}

/// A percentage written as text in the tables below (`"7.5"`), for comparison.
fn pct(s: &str) -> Decimal {
    s.parse().unwrap_or(Decimal::MAX)
}

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
}

/// Validates one line (`n` is its 1-based position, for messages).
pub(crate) fn validar_detalle(
    d: &DetalleDesglose,
    n: usize,
    ctx: &Contexto,
) -> Result<(), ValidationError> {
    let at = |msg: &str| format!("Desglose line {n}: {msg}");
    let iva_o_igic = matches!(d.impuesto, Impuesto::Iva | Impuesto::Igic);
    let iva = d.impuesto == Impuesto::Iva;
    let cuota = d.cuota_repercutida.map_or(0, |c| c.cents());

    match (d.clave_regimen, d.impuesto) {
        (None, Impuesto::Iva | Impuesto::Igic) => {
            return rule(1245, at("ClaveRegimen is required for IVA and IGIC"));
        }
        (Some(_), Impuesto::Otros) => {
            return rule(
                1260,
                at("ClaveRegimen is only allowed for IVA, IPSI and IGIC"),
            );
        }
        (Some(Clave::Clave21), i) if i != Impuesto::Igic => {
            return rule(1246, at("ClaveRegimen 21 is only for IGIC"));
        }
        _ => {}
    }
    if d.base_imponible_a_coste.is_some()
        && d.clave_regimen != Some(Clave::GrupoEntidades)
        && !matches!(d.impuesto, Impuesto::Ipsi | Impuesto::Otros)
    {
        return rule(
            1257,
            at("BaseImponibleACoste needs ClaveRegimen 06, IPSI or other taxes"),
        );
    }

    match d.operacion {
        Operacion::Exenta(e) => {
            if matches!(e, OperacionExenta::E7 | OperacionExenta::E8)
                && d.impuesto != Impuesto::Igic
            {
                return rule(1182, at("OperacionExenta E7 and E8 exist only for IGIC"));
            }
            if d.tipo_impositivo.is_some()
                || d.cuota_repercutida.is_some()
                || d.recargo_equivalencia.is_some()
            {
                return rule(
                    1238,
                    at(
                        "an exempt line cannot carry TipoImpositivo, CuotaRepercutida or a surcharge",
                    ),
                );
            }
        }
        Operacion::Calificada(c @ (Cal::N1 | Cal::N2)) => {
            if iva
                && (d.tipo_impositivo.is_some()
                    || d.cuota_repercutida.is_some()
                    || d.recargo_equivalencia.is_some())
            {
                return rule(
                    1237,
                    at(&format!(
                        "a {c} line under IVA cannot carry a rate, a tax or a surcharge"
                    )),
                );
            }
        }
        Operacion::Calificada(Cal::S2) => {
            if !matches!(
                ctx.tipo_factura,
                TipoFactura::F1
                    | TipoFactura::F3
                    | TipoFactura::R1
                    | TipoFactura::R2
                    | TipoFactura::R3
                    | TipoFactura::R4
            ) {
                return rule(
                    1197,
                    at("reverse charge (S2) is only allowed on F1, F3 and R1–R4"),
                );
            }
            if !d.tipo_impositivo.is_some_and(Porcentaje::is_zero)
                || d.cuota_repercutida != Some(Importe::ZERO)
            {
                return rule(
                    1198,
                    at("with S2, TipoImpositivo and CuotaRepercutida must be present and 0"),
                );
            }
        }
        Operacion::Calificada(Cal::S1) => validar_s1(d, &at, ctx)?,
    }
    if cuota != 0 && d.operacion != Operacion::Calificada(Cal::S1) {
        return rule(
            1207,
            at("CuotaRepercutida can only be non-zero on S1 lines"),
        );
    }
    if d.recargo_equivalencia.is_some() && d.operacion != Operacion::Calificada(Cal::S1) {
        return rule(
            1281,
            at("an equivalence surcharge is only allowed on S1 lines"),
        );
    }
    if iva_o_igic {
        validar_clave(d, &at, ctx)?;
    }
    Ok(())
}

/// Rules for S1 lines: rate and tax present, allowed IVA rates and
/// surcharges, tax consistent with base × rate within ±10.00 €.
fn validar_s1(
    d: &DetalleDesglose,
    at: &dyn Fn(&str) -> String,
    ctx: &Contexto,
) -> Result<(), ValidationError> {
    let (Some(tipo), Some(cuota)) = (d.tipo_impositivo, d.cuota_repercutida) else {
        return rule(
            1208,
            at("an S1 line needs TipoImpositivo and CuotaRepercutida"),
        );
    };
    if d.impuesto == Impuesto::Iva {
        let t = tipo.value();
        let f = ctx.fecha_devengo;
        let allowed = if t == pct("5") {
            (date(2022, 7, 1)..=date(2024, 9, 30)).contains(&f)
        } else if t == pct("2") || t == pct("7.5") {
            (date(2024, 10, 1)..=date(2024, 12, 31)).contains(&f)
        } else {
            ["0", "4", "10", "21"].iter().any(|v| t == pct(v))
        };
        if !allowed {
            return rule(
                1124,
                at(&format!(
                    "TipoImpositivo {tipo} is not an IVA rate in force on {}",
                    f.format("%d-%m-%Y")
                )),
            );
        }
        if d.clave_regimen == Some(Clave::ArrendamientoLocalNegocio) && t != pct("21") {
            return rule(
                1206,
                at("ClaveRegimen 11 (business premises rental) requires TipoImpositivo 21"),
            );
        }
        if let Some(r) = d.recargo_equivalencia {
            let pairs: &[(&str, &[&str])] = &[
                ("21", &["5.2", "1.75"]),
                ("10", &["1.4"]),
                ("7.5", &["1"]),
                ("5", &["0.5", "0.62"]),
                ("4", &["0.5"]),
                ("2", &["0.26"]),
                ("0", &["0", "0.26"]),
            ];
            let ok = pairs.iter().any(|(rate, surcharges)| {
                t == pct(rate) && surcharges.iter().any(|s| r.tipo.value() == pct(s))
            });
            if !ok {
                return rule(
                    1127,
                    at(&format!(
                        "TipoRecargoEquivalencia {} does not go with TipoImpositivo {tipo}",
                        r.tipo
                    )),
                );
            }
        }
    }
    let exento_de_cuadre = ctx.tipo_rectificativa == Some(TipoRectificativa::Diferencias)
        || matches!(ctx.tipo_factura, TipoFactura::R2 | TipoFactura::R3);
    if !exento_de_cuadre {
        let base = d
            .base_imponible_a_coste
            .unwrap_or(d.base_imponible_o_importe_no_sujeto);
        if cuota.cents() != 0 && base.cents() != 0 && cuota.is_negative() != base.is_negative() {
            return rule(
                1143,
                at("CuotaRepercutida and its base must have the same sign"),
            );
        }
        let expected = base.to_decimal() * tipo.value() / Decimal::ONE_HUNDRED;
        if (cuota.to_decimal() - expected).abs() > Decimal::TEN {
            return rule(
                1142,
                at(&format!(
                    "CuotaRepercutida {cuota} is more than 10.00 away from {base} × {tipo} %"
                )),
            );
        }
    }
    Ok(())
}

/// `ClaveRegimen` rules (section 15.6) for IVA and IGIC lines.
fn validar_clave(
    d: &DetalleDesglose,
    at: &dyn Fn(&str) -> String,
    ctx: &Contexto,
) -> Result<(), ValidationError> {
    use OperacionExenta::{E2, E3, E4, E5};
    let op = d.operacion;
    match d.clave_regimen {
        Some(Clave::General) if matches!(op, Operacion::Exenta(E2 | E3)) => rule(
            1199,
            at(
                "with ClaveRegimen 01, OperacionExenta cannot be E2 or E3 (use ClaveRegimen 02 for exports)",
            ),
        ),
        Some(Clave::Exportacion) if !matches!(op, Operacion::Exenta(_)) => rule(
            None,
            at("ClaveRegimen 02 (export) only admits OperacionExenta (validation 15.6.1)"),
        ),
        Some(Clave::Rebu) if matches!(op, Operacion::Calificada(c) if c != Cal::S1) => rule(
            1200,
            at("with ClaveRegimen 03, CalificacionOperacion can only be S1"),
        ),
        Some(Clave::OroInversion) if matches!(op, Operacion::Calificada(c) if c != Cal::S2) => {
            rule(
                1201,
                at("with ClaveRegimen 04, the line must be S2 or exempt"),
            )
        }
        Some(Clave::GrupoEntidades)
            if d.base_imponible_a_coste.is_none()
                || matches!(
                    ctx.tipo_factura,
                    TipoFactura::F2 | TipoFactura::F3 | TipoFactura::R5
                ) =>
        {
            rule(
                1202,
                at("ClaveRegimen 06 needs BaseImponibleACoste and cannot be used on F2, F3 or R5"),
            )
        }
        Some(Clave::CriterioCaja)
            if matches!(
                op,
                Operacion::Calificada(Cal::S2 | Cal::N1 | Cal::N2)
                    | Operacion::Exenta(E2 | E3 | E4 | E5)
            ) =>
        {
            rule(
                1203,
                at("with ClaveRegimen 07, the line cannot be S2, N1, N2, E2, E3, E4 or E5"),
            )
        }
        Some(Clave::IpsiIgic) if op != Operacion::Calificada(Cal::N2) => rule(
            1252,
            at("with ClaveRegimen 08, CalificacionOperacion must be N2"),
        ),
        Some(Clave::CobrosPorCuentaDeTerceros)
            if op != Operacion::Calificada(Cal::N1) || ctx.tipo_factura != TipoFactura::F1 =>
        {
            rule(
                1205,
                at("with ClaveRegimen 10, the line must be N1 on an F1 invoice"),
            )
        }
        Some(Clave::PendienteDevengoObraAapp)
            if !matches!(
                ctx.tipo_factura,
                TipoFactura::F1
                    | TipoFactura::R1
                    | TipoFactura::R2
                    | TipoFactura::R3
                    | TipoFactura::R4
            ) =>
        {
            rule(
                1148,
                at("with ClaveRegimen 14, TipoFactura must be F1, R1, R2, R3 or R4"),
            )
        }
        Some(Clave::RegimenSimplificado)
            if d.impuesto == Impuesto::Igic && op != Operacion::Calificada(Cal::N2) =>
        {
            rule(
                None,
                at(
                    "with IGIC and ClaveRegimen 20 (subject to IPSI), CalificacionOperacion must be N2",
                ),
            )
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "desglose_tests.rs"]
mod tests;
