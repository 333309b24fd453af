//! Sample responses in `testdata/` were written from `RespuestaSuministro.xsd`
//! (and are validated against it in `xsd_tests`); the client fault is the
//! example printed in the AEAT web-service description (section 6.2.6).

use super::*;

const CORRECTA: &str = include_str!("../testdata/respuesta_correcta.xml");
const PARCIAL: &str = include_str!("../testdata/respuesta_parcial.xml");
const INCORRECTA: &str = include_str!("../testdata/respuesta_incorrecta.xml");
const FAULT_CLIENTE: &str = include_str!("../testdata/fault_cliente.xml");
const FAULT_SERVIDOR: &str = include_str!("../testdata/fault_servidor.xml");

fn procesada(xml: &str) -> RespuestaRegFactu {
    match parse_respuesta(xml).unwrap() {
        RespuestaAeat::Procesada(r) => r,
        RespuestaAeat::Fault(f) => panic!("unexpected fault {f:?}"),
    }
}

fn fault(xml: &str) -> SoapFault {
    match parse_respuesta(xml).unwrap() {
        RespuestaAeat::Fault(f) => f,
        RespuestaAeat::Procesada(r) => panic!("unexpected response {r:?}"),
    }
}

#[test]
fn correct_submission() {
    let r = procesada(CORRECTA);
    assert_eq!(r.estado_envio, EstadoEnvio::Correcto);
    assert_eq!(r.csv.as_deref(), Some("A-YDSW8NLFLANWPM"));
    assert_eq!(r.tiempo_espera_envio, Some(60));
    assert_eq!(r.nif_obligado_emision, "89890001K");
    let dp = r.datos_presentacion.as_ref().unwrap();
    assert_eq!(dp.timestamp_presentacion, "2025-01-15T10:00:05+01:00");
    assert_eq!(r.lineas.len(), 1);
    let l = &r.lineas[0];
    assert_eq!(l.id_factura.num_serie_factura, "2025/0001");
    assert_eq!(l.tipo_operacion, TipoOperacion::Alta);
    assert_eq!(l.estado_registro, EstadoRegistro::Correcto);
    assert_eq!(l.codigo_error_registro, None);
    assert_eq!(l.explicacion(), None);
}

#[test]
fn partially_correct_submission() {
    let r = procesada(PARCIAL);
    assert_eq!(r.estado_envio, EstadoEnvio::ParcialmenteCorrecto);
    assert_eq!(r.tiempo_espera_envio, Some(120));
    let [con_errores, rechazada, duplicada, anulada] = &r.lineas[..] else {
        panic!("four lines expected")
    };

    assert_eq!(
        con_errores.estado_registro,
        EstadoRegistro::AceptadoConErrores
    );
    assert_eq!(con_errores.codigo_error_registro, Some(2000));
    assert_eq!(con_errores.ref_externa.as_deref(), Some("pedido-77"));
    assert!(con_errores.explicacion().unwrap().contains("huella"));

    assert_eq!(rechazada.estado_registro, EstadoRegistro::Incorrecto);
    assert_eq!(rechazada.codigo_error_registro, Some(1189));
    assert_eq!(rechazada.subsanacion.as_deref(), Some("S"));
    assert_eq!(rechazada.rechazo_previo.as_deref(), Some("X"));
    assert!(
        rechazada
            .descripcion_error_registro
            .as_deref()
            .unwrap()
            .starts_with("Si TipoFactura es F1")
    );

    let dup = duplicada.registro_duplicado.as_ref().unwrap();
    assert_eq!(dup.id_peticion, "20250115093302123456");
    assert_eq!(dup.estado, EstadoRegistroDuplicado::Correcta);
    assert_eq!(dup.codigo_error, None);

    assert_eq!(anulada.tipo_operacion, TipoOperacion::Anulacion);
    assert_eq!(anulada.sin_registro_previo.as_deref(), Some("S"));
    assert_eq!(anulada.estado_registro, EstadoRegistro::Correcto);
}

#[test]
fn rejected_submission_has_no_csv() {
    let r = procesada(INCORRECTA);
    assert_eq!(r.estado_envio, EstadoEnvio::Incorrecto);
    assert_eq!(r.csv, None);
    assert_eq!(r.datos_presentacion, None);
    assert_eq!(r.lineas[0].codigo_error_registro, Some(3002));
    assert!(
        r.lineas[0]
            .explicacion()
            .unwrap()
            .contains("SinRegistroPrevio")
    );
}

#[test]
fn client_fault_from_the_aeat_example() {
    let f = fault(FAULT_CLIENTE);
    assert_eq!(f.tipo, TipoFault::Cliente);
    assert_eq!(f.codigo_error, Some(4104));
    assert!(f.faultstring.starts_with("Codigo[4104].El NIF del titular"));
    assert!(!f.reenviar());
    assert!(f.explicacion().contains("NIF"));
}

#[test]
fn server_fault_asks_to_resend() {
    let f = fault(FAULT_SERVIDOR);
    assert_eq!(f.tipo, TipoFault::Servidor);
    assert_eq!(f.codigo_error, None);
    assert!(f.reenviar());
    assert_eq!(f.explicacion(), "Error técnico. Inténtelo más tarde.");
}

#[test]
fn bare_response_without_envelope() {
    let start = CORRECTA
        .find("<tikR:RespuestaRegFactuSistemaFacturacion")
        .unwrap();
    let end = CORRECTA.find("</env:Body>").unwrap();
    let r = procesada(&CORRECTA[start..end]);
    assert_eq!(r.estado_envio, EstadoEnvio::Correcto);
}

#[test]
fn malformed_or_unexpected_responses_are_errors() {
    assert!(matches!(
        parse_respuesta("<html>Service unavailable"),
        Err(ResponseError::Xml(_))
    ));
    assert!(matches!(
        parse_respuesta("<html><body>502</body></html>"),
        Err(ResponseError::UnexpectedElement(_))
    ));
    let otro_estado = CORRECTA.replace(
        ">Correcto</tikR:EstadoEnvio>",
        ">Aceptado</tikR:EstadoEnvio>",
    );
    assert_eq!(
        parse_respuesta(&otro_estado),
        Err(ResponseError::InvalidValue {
            element: "EstadoEnvio",
            value: "Aceptado".into()
        })
    );
    let sin_estado = CORRECTA.replace("<tikR:EstadoEnvio>Correcto</tikR:EstadoEnvio>", "");
    assert!(matches!(
        parse_respuesta(&sin_estado),
        Err(ResponseError::Missing {
            element: "EstadoEnvio",
            ..
        })
    ));
    let codigo_raro = PARCIAL.replace(">1189<", ">11x9<");
    assert!(matches!(
        parse_respuesta(&codigo_raro),
        Err(ResponseError::InvalidValue {
            element: "CodigoErrorRegistro",
            ..
        })
    ));
    let vacio = "<env:Envelope xmlns:env=\"http://schemas.xmlsoap.org/soap/envelope/\"><env:Body/></env:Envelope>";
    assert!(matches!(
        parse_respuesta(vacio),
        Err(ResponseError::Missing { .. })
    ));
}

#[test]
fn fault_code_extraction() {
    assert_eq!(
        codigo_en_faultstring("Codigo[4102].El XML no cumple"),
        Some(4102)
    );
    assert_eq!(codigo_en_faultstring("sin código"), None);
    assert_eq!(codigo_en_faultstring("Codigo[abc]"), None);
    assert_eq!(codigo_en_faultstring("Codigo[12"), None);
}
