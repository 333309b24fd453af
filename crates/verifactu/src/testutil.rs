//! Sample data shared by the unit tests.

use chrono::{TimeZone, Utc};

use crate::alta::{DatosAlta, Rectificacion};
use crate::amount::{Importe, Porcentaje};
use crate::anulacion::DatosAnulacion;
use crate::codes::CalificacionOperacion;
use crate::codes::{ClaveRegimen, IdType, OperacionExenta, TipoFactura, TipoRectificativa};
use crate::desglose::DetalleDesglose;
use crate::fecha::{FechaHoraHuso, HusoHorario};
use crate::ids::{CodigoPais, IdFactura, IdOtro, Nif, PersonaFisicaJuridica, PersonaNif};
use crate::sistema::SistemaInformatico;

/// The AEAT's test NIF, used as issuer.
pub const EMISOR: &str = "89890001K";
pub const NOMBRE_EMISOR: &str = "EMPRESA DE PRUEBAS & HIJOS, S.L.";

pub fn importe(cents: i64) -> Importe {
    Importe::from_cents(cents).unwrap()
}

pub fn iva21() -> Porcentaje {
    Porcentaje::from_basis_points(2100).unwrap()
}

pub fn madrid(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> FechaHoraHuso {
    FechaHoraHuso::from_utc(
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap(),
        HusoHorario::Peninsula,
    )
    .unwrap()
}

pub fn id_factura(num: &str, fecha: &str) -> IdFactura {
    IdFactura::parse(EMISOR, num, fecha).unwrap()
}

pub fn obligado() -> PersonaNif {
    PersonaNif::new(NOMBRE_EMISOR, Nif::new(EMISOR).unwrap()).unwrap()
}

pub fn sistema() -> SistemaInformatico {
    SistemaInformatico {
        productor: PersonaFisicaJuridica::con_nif(
            "SOFTWARE FACTURAS SL",
            Nif::new("B12345674").unwrap(),
        )
        .unwrap(),
        nombre_sistema_informatico: "Facturas".into(),
        id_sistema_informatico: "FA".into(),
        version: "0.1.0".into(),
        numero_instalacion: "INST-0001".into(),
        tipo_uso_posible_solo_verifactu: true,
        tipo_uso_posible_multi_ot: true,
        indicador_multiples_ot: false,
    }
}

pub fn cliente_nacional() -> PersonaFisicaJuridica {
    PersonaFisicaJuridica::con_nif("CLIENTE NACIONAL SA", Nif::new("A84532509").unwrap()).unwrap()
}

/// F1, domestic, one line at 21 %: 100.00 + 21.00 = 121.00.
pub fn f1_nacional(num: &str, fecha: &str) -> DatosAlta {
    DatosAlta::new(
        id_factura(num, fecha),
        NOMBRE_EMISOR,
        TipoFactura::F1,
        "Servicios de consultoría <enero>",
        vec![cliente_nacional()],
        vec![DetalleDesglose::sujeta(
            ClaveRegimen::General,
            iva21(),
            importe(10000),
            importe(2100),
        )],
        importe(2100),
        importe(12100),
        sistema(),
    )
}

/// F1, export of goods to the United States, exempt under art. 21 LIVA (E2)
/// with ClaveRegimen 02.
pub fn f1_exportacion(num: &str, fecha: &str) -> DatosAlta {
    let us = CodigoPais::new("US").unwrap();
    let cliente = PersonaFisicaJuridica::con_id_otro(
        "ACME IMPORTS INC",
        IdOtro::new(
            Some(us),
            IdType::DocumentoOficialPaisResidencia,
            "98-7654321",
        )
        .unwrap(),
    )
    .unwrap();
    DatosAlta::new(
        id_factura(num, fecha),
        NOMBRE_EMISOR,
        TipoFactura::F1,
        "Exportación de maquinaria",
        vec![cliente],
        vec![DetalleDesglose::exenta(
            ClaveRegimen::Exportacion,
            OperacionExenta::E2,
            importe(100000),
        )],
        Importe::ZERO,
        importe(100000),
        sistema(),
    )
}

/// F1, B2B services to a French VAT-registered company: not subject in
/// Spain by place-of-supply rules (N2), the customer reverse-charges in France.
pub fn f1_servicios_ue(num: &str, fecha: &str) -> DatosAlta {
    let fr = CodigoPais::new("FR").unwrap();
    let cliente = PersonaFisicaJuridica::con_id_otro(
        "CLIENT FRANCE SARL",
        IdOtro::nif_iva(fr, "FR12345678901").unwrap(),
    )
    .unwrap();
    DatosAlta::new(
        id_factura(num, fecha),
        NOMBRE_EMISOR,
        TipoFactura::F1,
        "Desarrollo de software para cliente UE",
        vec![cliente],
        vec![DetalleDesglose::no_sujeta(
            ClaveRegimen::General,
            CalificacionOperacion::N2,
            importe(50000),
        )],
        Importe::ZERO,
        importe(50000),
        sistema(),
    )
}

/// R1 by differences (I) correcting `original`: −20.00 base, −4.20 tax.
pub fn r1_diferencias(num: &str, fecha: &str, original: IdFactura) -> DatosAlta {
    let mut d = DatosAlta::new(
        id_factura(num, fecha),
        NOMBRE_EMISOR,
        TipoFactura::R1,
        "Descuento posterior sobre factura original",
        vec![cliente_nacional()],
        vec![DetalleDesglose::sujeta(
            ClaveRegimen::General,
            iva21(),
            importe(-2000),
            importe(-420),
        )],
        importe(-420),
        importe(-2420),
        sistema(),
    );
    d.rectificacion = Some(Rectificacion {
        tipo: TipoRectificativa::Diferencias,
        facturas_rectificadas: vec![original],
        importe_rectificacion: None,
    });
    d
}

pub fn anulacion(id: IdFactura) -> DatosAnulacion {
    DatosAnulacion::new(id, sistema())
}
