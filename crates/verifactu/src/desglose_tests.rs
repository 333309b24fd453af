use super::*;
use crate::desglose::RecargoEquivalencia;
use crate::testutil::{importe, iva21};

fn ctx(tipo_factura: TipoFactura) -> Contexto {
    Contexto {
        tipo_factura,
        tipo_rectificativa: None,
        fecha_devengo: NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(),
    }
}

fn check(d: &DetalleDesglose) -> Result<(), ValidationError> {
    validar_detalle(d, 1, &ctx(TipoFactura::F1))
}

fn code(r: Result<(), ValidationError>) -> Option<u16> {
    match r {
        Err(ValidationError::Rule { aeat_code, .. }) => aeat_code,
        Err(e) => panic!("unexpected error {e}"),
        Ok(()) => panic!("expected a rule violation"),
    }
}

#[test]
fn typical_lines_pass() {
    check(&DetalleDesglose::sujeta(
        Clave::General,
        iva21(),
        importe(10000),
        importe(2100),
    ))
    .unwrap();
    check(&DetalleDesglose::exenta(
        Clave::Exportacion,
        OperacionExenta::E2,
        importe(10000),
    ))
    .unwrap();
    check(&DetalleDesglose::no_sujeta(
        Clave::General,
        Cal::N2,
        importe(10000),
    ))
    .unwrap();
    check(&DetalleDesglose::inversion_sujeto_pasivo(
        Clave::General,
        importe(10000),
    ))
    .unwrap();
    check(&DetalleDesglose::sujeta_calculada(Clave::General, iva21(), importe(104403)).unwrap())
        .unwrap();
}

#[test]
fn exempt_and_not_subject_lines_cannot_carry_tax() {
    let mut d = DetalleDesglose::exenta(Clave::General, OperacionExenta::E1, importe(100));
    d.tipo_impositivo = Some(iva21());
    assert_eq!(code(check(&d)), Some(1238));
    let mut d = DetalleDesglose::no_sujeta(Clave::General, Cal::N1, importe(100));
    d.cuota_repercutida = Some(importe(0));
    assert_eq!(code(check(&d)), Some(1237));
}

#[test]
fn s1_needs_rate_and_consistent_tax() {
    let mut d = DetalleDesglose::sujeta(Clave::General, iva21(), importe(10000), importe(2100));
    d.cuota_repercutida = None;
    assert_eq!(code(check(&d)), Some(1208));
    // 10.00 € of tolerance, as the AEAT.
    check(&DetalleDesglose::sujeta(
        Clave::General,
        iva21(),
        importe(10000),
        importe(3100),
    ))
    .unwrap();
    let d = DetalleDesglose::sujeta(Clave::General, iva21(), importe(10000), importe(3101));
    assert_eq!(code(check(&d)), Some(1142));
    let d = DetalleDesglose::sujeta(Clave::General, iva21(), importe(10000), importe(-2100));
    assert_eq!(code(check(&d)), Some(1143));
}

#[test]
fn corrective_by_differences_skips_the_tax_check() {
    let d = DetalleDesglose::sujeta(Clave::General, iva21(), importe(0), importe(-2100));
    let c = Contexto {
        tipo_rectificativa: Some(TipoRectificativa::Diferencias),
        ..ctx(TipoFactura::R1)
    };
    validar_detalle(&d, 1, &c).unwrap();
}

#[test]
fn iva_rates_in_force() {
    let line = |rate: &str| {
        let tipo: Porcentaje = rate.parse().unwrap();
        let base = importe(10000);
        DetalleDesglose::sujeta(Clave::General, tipo, base, tipo.cuota(base).unwrap())
    };
    for ok in ["0", "4", "10", "21"] {
        check(&line(ok)).unwrap();
    }
    assert_eq!(code(check(&line("5"))), Some(1124));
    assert_eq!(code(check(&line("7.5"))), Some(1124));
    assert_eq!(code(check(&line("16"))), Some(1124));
    let late_2024 = Contexto {
        fecha_devengo: NaiveDate::from_ymd_opt(2024, 11, 15).unwrap(),
        ..ctx(TipoFactura::F1)
    };
    validar_detalle(&line("7.5"), 1, &late_2024).unwrap();
    validar_detalle(&line("2"), 1, &late_2024).unwrap();
}

#[test]
fn equivalence_surcharge_must_match_the_rate() {
    let mut d = DetalleDesglose::sujeta(
        Clave::RecargoEquivalencia,
        iva21(),
        importe(10000),
        importe(2100),
    );
    d.recargo_equivalencia = Some(RecargoEquivalencia {
        tipo: "5.2".parse().unwrap(),
        cuota: importe(520),
    });
    check(&d).unwrap();
    d.recargo_equivalencia = Some(RecargoEquivalencia {
        tipo: "1.4".parse().unwrap(),
        cuota: importe(140),
    });
    assert_eq!(code(check(&d)), Some(1127));
    let mut n = DetalleDesglose::exenta(Clave::General, OperacionExenta::E1, importe(100));
    n.recargo_equivalencia = d.recargo_equivalencia;
    assert_eq!(code(check(&n)), Some(1238));
}

#[test]
fn reverse_charge_rules() {
    let mut d = DetalleDesglose::inversion_sujeto_pasivo(Clave::General, importe(10000));
    assert_eq!(
        code(validar_detalle(&d, 1, &ctx(TipoFactura::F2))),
        Some(1197)
    );
    d.cuota_repercutida = Some(importe(2100));
    assert_eq!(code(check(&d)), Some(1198));
}

#[test]
fn regime_key_rules() {
    let d = DetalleDesglose::exenta(Clave::General, OperacionExenta::E2, importe(100));
    assert_eq!(code(check(&d)), Some(1199));
    let d = DetalleDesglose::no_sujeta(Clave::Exportacion, Cal::N2, importe(100));
    assert_eq!(code(check(&d)), None);
    let d = DetalleDesglose::no_sujeta(Clave::IpsiIgic, Cal::N1, importe(100));
    assert_eq!(code(check(&d)), Some(1252));
    check(&DetalleDesglose::no_sujeta(
        Clave::IpsiIgic,
        Cal::N2,
        importe(100),
    ))
    .unwrap();
    let d = DetalleDesglose::no_sujeta(Clave::CriterioCaja, Cal::N2, importe(100));
    assert_eq!(code(check(&d)), Some(1203));
    let d = DetalleDesglose::sujeta(
        Clave::ArrendamientoLocalNegocio,
        "10".parse().unwrap(),
        importe(100),
        importe(10),
    );
    assert_eq!(code(check(&d)), Some(1206));
    let mut d = DetalleDesglose::no_sujeta(Clave::General, Cal::N1, importe(100));
    d.clave_regimen = None;
    assert_eq!(code(check(&d)), Some(1245));
    let d = DetalleDesglose::exenta(Clave::General, OperacionExenta::E7, importe(100));
    assert_eq!(code(check(&d)), Some(1182));
}

#[test]
fn totals_include_surcharge() {
    let mut d = DetalleDesglose::sujeta(
        Clave::RecargoEquivalencia,
        iva21(),
        importe(10000),
        importe(2100),
    );
    d.recargo_equivalencia = Some(RecargoEquivalencia {
        tipo: "5.2".parse().unwrap(),
        cuota: importe(520),
    });
    assert_eq!(d.cuota_cents(), 2620);
    assert_eq!(d.total_cents(), 12620);
}
