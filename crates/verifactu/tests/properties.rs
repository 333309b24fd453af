//! Property tests of the huella (the SHA-256 chain value of each record):
//! always 64 upper-case hex digits, the same for the same values, blind to the
//! spaces the AEAT trims, and changed by any change of an amount or a link.

use proptest::prelude::*;
use verifactu::huella::{HuellaAltaInput, cadena_alta, huella_alta};

fn value() -> impl Strategy<Value = String> {
    "[A-Za-z0-9./:+-]{0,30}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn huella_is_hex_deterministic_and_trims(
        emisor in value(), serie in value(), fecha in value(), tipo in value(),
        cuota in value(), importe in value(), anterior in value(), generado in value(),
        pad in "[ \t]{0,3}",
    ) {
        let input = HuellaAltaInput {
            id_emisor_factura: &emisor,
            num_serie_factura: &serie,
            fecha_expedicion_factura: &fecha,
            tipo_factura: &tipo,
            cuota_total: &cuota,
            importe_total: &importe,
            huella_anterior: &anterior,
            fecha_hora_huso_gen_registro: &generado,
        };
        let h = huella_alta(&input);
        prop_assert_eq!(h.as_str().len(), 64);
        prop_assert!(h.as_str().chars().all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c)));
        prop_assert_eq!(&h, &huella_alta(&input));
        let padded = format!("{pad}{serie}{pad}");
        let spaced = HuellaAltaInput { num_serie_factura: &padded, ..input };
        prop_assert_eq!(&h, &huella_alta(&spaced));
        prop_assert!(cadena_alta(&input).starts_with("IDEmisorFactura="));
    }

    #[test]
    fn a_changed_amount_or_link_changes_the_huella(
        serie in "[A-Z0-9-]{1,20}",
        importe in 0u64..1_000_000_000,
        delta in 1u64..1000,
        anterior in "[0-9A-F]{64}",
        other in "[0-9A-F]{64}",
    ) {
        let a = format!("{}.{:02}", importe / 100, importe % 100);
        let b_amount = importe + delta;
        let b = format!("{}.{:02}", b_amount / 100, b_amount % 100);
        let base = HuellaAltaInput {
            id_emisor_factura: "B12345674",
            num_serie_factura: &serie,
            fecha_expedicion_factura: "02-01-2026",
            tipo_factura: "F1",
            cuota_total: "21.00",
            importe_total: &a,
            huella_anterior: &anterior,
            fecha_hora_huso_gen_registro: "2026-01-02T10:00:00+01:00",
        };
        let changed_amount = HuellaAltaInput { importe_total: &b, ..base };
        prop_assert_ne!(huella_alta(&base), huella_alta(&changed_amount));
        if other != anterior {
            let relinked = HuellaAltaInput { huella_anterior: &other, ..base };
            prop_assert_ne!(huella_alta(&base), huella_alta(&relinked));
        }
    }
}
