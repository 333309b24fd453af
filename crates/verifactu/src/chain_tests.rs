use super::*;
use crate::huella::huella_de_cadena;
use crate::testutil::*;

/// Alta (first record), alta, anulación of the second invoice.
pub(crate) fn cadena_de_tres() -> (Vec<RegistroFactura>, RegistroPrevio) {
    let mut cadena = Cadena::new(None);
    let a1 = cadena
        .alta(
            f1_nacional("2025/0001", "15-01-2025"),
            madrid(2025, 1, 15, 9, 0, 0),
        )
        .unwrap();
    let a2 = cadena
        .alta(
            f1_nacional("2025/0002", "15-01-2025"),
            madrid(2025, 1, 15, 9, 5, 0),
        )
        .unwrap();
    let an = cadena
        .anulacion(
            anulacion(id_factura("2025/0002", "15-01-2025")),
            madrid(2025, 1, 15, 9, 10, 0),
        )
        .unwrap();
    let cabeza = cadena.cabeza().cloned().unwrap();
    (vec![a1.into(), a2.into(), an.into()], cabeza)
}

#[test]
fn first_record_has_empty_previous_huella() {
    let (r, cabeza) = encadenar_alta(
        f1_nacional("2025/0001", "15-01-2025"),
        None,
        madrid(2025, 1, 15, 9, 0, 0),
    )
    .unwrap();
    assert_eq!(r.encadenamiento(), &Encadenamiento::PrimerRegistro);
    let esperado = "IDEmisorFactura=89890001K&NumSerieFactura=2025/0001&FechaExpedicionFactura=15-01-2025\
                    &TipoFactura=F1&CuotaTotal=21.00&ImporteTotal=121.00&Huella=\
                    &FechaHoraHusoGenRegistro=2025-01-15T10:00:00+01:00";
    assert_eq!(r.cadena_huella(), esperado);
    assert_eq!(r.huella(), &huella_de_cadena(esperado));
    assert_eq!(cabeza.huella, *r.huella());
    assert_eq!(cabeza.num_serie_factura.as_str(), "2025/0001");
}

#[test]
fn three_records_chain_on_each_other() {
    let (registros, cabeza) = cadena_de_tres();
    verificar_cadena(None, &registros).unwrap();
    let [a1, a2, an] = &registros[..] else {
        panic!("three records")
    };
    assert_eq!(
        a2.encadenamiento().registro_anterior(),
        Some(&a1.como_registro_previo())
    );
    assert_eq!(an.encadenamiento().huella_anterior(), Some(a2.huella()));
    // The cancellation's head names the cancelled invoice and its own huella.
    assert_eq!(cabeza.num_serie_factura.as_str(), "2025/0002");
    assert_eq!(&cabeza.huella, an.huella());
    let RegistroFactura::Anulacion(anul) = an else {
        panic!("cancellation")
    };
    let esperado = format!(
        "IDEmisorFacturaAnulada=89890001K&NumSerieFacturaAnulada=2025/0002\
         &FechaExpedicionFacturaAnulada=15-01-2025&Huella={}&FechaHoraHusoGenRegistro=2025-01-15T10:10:00+01:00",
        a2.huella()
    );
    assert_eq!(anul.cadena_huella(), esperado);
    assert_eq!(anul.huella(), &huella_de_cadena(&esperado));
}

#[test]
fn chain_continues_from_a_stored_head() {
    let (registros, cabeza) = cadena_de_tres();
    let guardada = RegistroPrevio::parse(
        cabeza.id_emisor_factura.as_str(),
        cabeza.num_serie_factura.as_str(),
        &cabeza.fecha_expedicion_factura.to_string(),
        cabeza.huella.as_str(),
    )
    .unwrap();
    let (siguiente, _) = encadenar_alta(
        f1_nacional("2025/0003", "16-01-2025"),
        Some(&guardada),
        madrid(2025, 1, 16, 8, 0, 0),
    )
    .unwrap();
    let mut todos = registros;
    todos.push(siguiente.into());
    verificar_cadena(None, &todos).unwrap();
    verificar_cadena(Some(&guardada), &todos[3..]).unwrap();
}

#[test]
fn broken_links_and_time_travel_are_reported() {
    let (mut registros, _) = cadena_de_tres();
    registros.swap(1, 2);
    assert!(matches!(
        verificar_cadena(None, &registros),
        Err(ChainError::EnlaceRoto { posicion: 2, .. })
    ));
    let (registros, _) = cadena_de_tres();
    let previo = registros[0].como_registro_previo();
    assert!(matches!(
        verificar_cadena(Some(&previo), &registros),
        Err(ChainError::EnlaceRoto { posicion: 1, .. })
    ));

    let mut cadena = Cadena::new(None);
    let a = cadena
        .alta(
            f1_nacional("A-1", "15-01-2025"),
            madrid(2025, 1, 15, 9, 0, 0),
        )
        .unwrap();
    let b = cadena
        .alta(
            f1_nacional("A-2", "15-01-2025"),
            madrid(2025, 1, 15, 8, 0, 0),
        )
        .unwrap();
    let err = verificar_cadena(None, &[a.into(), b.into()]).unwrap_err();
    assert!(matches!(err, ChainError::FechaAnterior { posicion: 2, .. }));
    assert!(err.to_string().contains("2025-01-15T09:00:00+01:00"));
}

#[test]
fn a_failed_record_does_not_advance_the_head() {
    let mut cadena = Cadena::new(None);
    cadena
        .alta(
            f1_nacional("A-1", "15-01-2025"),
            madrid(2025, 1, 15, 9, 0, 0),
        )
        .unwrap();
    let antes = cadena.cabeza().cloned();
    let mut malo = f1_nacional("A-2", "15-01-2025");
    malo.destinatarios.clear();
    assert!(cadena.alta(malo, madrid(2025, 1, 15, 9, 1, 0)).is_err());
    assert_eq!(cadena.cabeza().cloned(), antes);
}

#[test]
fn stored_heads_are_validated() {
    assert!(RegistroPrevio::parse("89890001K", "A-1", "15-01-2025", "abc").is_err());
    assert!(RegistroPrevio::parse("89890001K", "A-1", "2025-01-15", &"A".repeat(64)).is_err());
    assert!(RegistroPrevio::parse("89890001K", "A-1", "15-01-2025", &"A".repeat(64)).is_ok());
}
