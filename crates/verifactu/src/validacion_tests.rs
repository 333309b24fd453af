use super::*;
use crate::alta::{ImporteRectificacion, Rectificacion};
use crate::amount::Importe;
use crate::codes::ClaveRegimen;
use crate::desglose::DetalleDesglose;
use crate::ids::{IdOtro, Nif};
use crate::testutil::*;

fn code(r: Result<(), ValidationError>) -> Option<u16> {
    match r {
        Err(ValidationError::Rule { aeat_code, .. }) => aeat_code,
        Err(e) => panic!("unexpected error {e}"),
        Ok(()) => panic!("expected a rule violation"),
    }
}

#[test]
fn samples_are_valid() {
    validar_alta(&f1_nacional("A-1", "15-01-2025")).unwrap();
    validar_alta(&f1_exportacion("A-2", "15-01-2025")).unwrap();
    validar_alta(&f1_servicios_ue("A-3", "15-01-2025")).unwrap();
    validar_alta(&r1_diferencias(
        "R-1",
        "20-01-2025",
        id_factura("A-1", "15-01-2025"),
    ))
    .unwrap();
}

#[test]
fn issue_date_before_verifactu_is_rejected() {
    assert_eq!(
        code(validar_alta(&f1_nacional("A-1", "27-10-2024"))),
        Some(1152)
    );
    validar_alta(&f1_nacional("A-1", "28-10-2024")).unwrap();
}

#[test]
fn recipients_depend_on_invoice_type() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.destinatarios.clear();
    assert_eq!(code(validar_alta(&d)), Some(1189));
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.tipo_factura = TipoFactura::F2;
    assert_eq!(code(validar_alta(&d)), Some(1190));
    d.destinatarios.clear();
    validar_alta(&d).unwrap();
}

#[test]
fn spanish_idotro_must_be_passport_or_not_registered() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    let es = Some(CodigoPais::ES);
    d.destinatarios = vec![
        PersonaFisicaJuridica::con_id_otro(
            "X",
            IdOtro::new(es, IdType::CertificadoResidencia, "1").unwrap(),
        )
        .unwrap(),
    ];
    assert_eq!(code(validar_alta(&d)), Some(1234));
    d.destinatarios = vec![
        PersonaFisicaJuridica::con_id_otro(
            "X",
            IdOtro::new(es, IdType::NoCensado, "12345678Z").unwrap(),
        )
        .unwrap(),
    ];
    validar_alta(&d).unwrap();
}

#[test]
fn corrective_blocks() {
    let mut d = r1_diferencias("R-1", "20-01-2025", id_factura("A-1", "15-01-2025"));
    let rect = d.rectificacion.take();
    assert_eq!(code(validar_alta(&d)), Some(1114));
    d.rectificacion = rect;
    if let Some(r) = d.rectificacion.as_mut() {
        r.tipo = TipoRectificativa::Sustitucion;
    }
    assert_eq!(code(validar_alta(&d)), Some(1118));
    let mut f1 = f1_nacional("A-1", "15-01-2025");
    f1.rectificacion = Some(Rectificacion {
        tipo: TipoRectificativa::Diferencias,
        facturas_rectificadas: vec![],
        importe_rectificacion: None,
    });
    assert_eq!(code(validar_alta(&f1)), Some(1115));
    let mut r = r1_diferencias("R-1", "20-01-2025", id_factura("A-1", "15-01-2025"));
    r.rectificacion = Some(Rectificacion {
        tipo: TipoRectificativa::Diferencias,
        facturas_rectificadas: vec![],
        importe_rectificacion: Some(ImporteRectificacion {
            base_rectificada: importe(1),
            cuota_rectificada: importe(1),
            cuota_recargo_rectificado: None,
        }),
    });
    assert_eq!(code(validar_alta(&r)), Some(1119));
}

#[test]
fn flags_are_limited_to_their_invoice_types() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.cupon = true;
    assert_eq!(code(validar_alta(&d)), Some(1157));
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.factura_sin_identif_destinatario_art_61d = true;
    assert_eq!(code(validar_alta(&d)), Some(1185));
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.facturas_sustituidas.push(id_factura("S-1", "01-01-2025"));
    assert_eq!(code(validar_alta(&d)), Some(1116));
}

#[test]
fn totals_must_add_up_within_ten_euros() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.importe_total = importe(12100 + 1001);
    assert_eq!(code(validar_alta(&d)), Some(2005));
    d.importe_total = importe(12100 + 1000);
    validar_alta(&d).unwrap();
    d.cuota_total = Importe::ZERO;
    assert_eq!(code(validar_alta(&d)), Some(2006));
}

#[test]
fn simplified_invoice_limit() {
    let mut d = f1_nacional("T-1", "15-01-2025");
    d.tipo_factura = TipoFactura::F2;
    d.destinatarios.clear();
    d.desglose = vec![DetalleDesglose::sujeta(
        ClaveRegimen::General,
        iva21(),
        importe(250000),
        importe(52500),
    )];
    d.cuota_total = importe(52500);
    d.importe_total = importe(302500);
    assert_eq!(code(validar_alta(&d)), Some(1150));
    d.factura_sin_identif_destinatario_art_61d = true;
    validar_alta(&d).unwrap();
}

#[test]
fn operation_date_after_issue_needs_pending_accrual() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.fecha_operacion = Some("20-01-2025".parse().unwrap());
    assert_eq!(code(validar_alta(&d)), Some(1146));
    d.fecha_operacion = Some("10-01-2025".parse().unwrap());
    validar_alta(&d).unwrap();
}

#[test]
fn third_party_must_differ_from_issuer() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.emitida_por = Some(EmitidaPor::Tercero(
        PersonaFisicaJuridica::con_nif("YO MISMO", Nif::new(EMISOR).unwrap()).unwrap(),
    ));
    assert_eq!(code(validar_alta(&d)), Some(1188));
}

#[test]
fn lines_count_and_text_lengths() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.desglose.clear();
    assert!(validar_alta(&d).is_err());
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.descripcion_operacion = "x".repeat(501);
    assert!(matches!(
        validar_alta(&d),
        Err(ValidationError::TooLong { max: 500, .. })
    ));
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.nombre_razon_emisor = "  ".into();
    assert!(matches!(
        validar_alta(&d),
        Err(ValidationError::Empty { .. })
    ));
}

#[test]
fn intra_eu_exempt_supply_needs_foreign_recipient() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.desglose = vec![DetalleDesglose::exenta(
        ClaveRegimen::General,
        OperacionExenta::E5,
        importe(10000),
    )];
    d.cuota_total = Importe::ZERO;
    d.importe_total = importe(10000);
    assert_eq!(code(validar_alta(&d)), None);
    d.destinatarios = f1_servicios_ue("X", "15-01-2025").destinatarios;
    validar_alta(&d).unwrap();
}

#[test]
fn macrodato_threshold() {
    let mut d = f1_nacional("A-1", "15-01-2025");
    d.importe_total = importe(9_999_999_999);
    assert!(!d.macrodato());
    d.importe_total = importe(-10_000_000_000);
    assert!(d.macrodato());
}
