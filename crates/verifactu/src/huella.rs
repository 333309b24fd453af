//! The huella (hash) of a billing record, exactly as in the AEAT document
//! "Detalle de las especificaciones técnicas para generación de la huella o
//! hash de los registros de facturación" (v0.1.2, 27/08/2024):
//!
//! * algorithm SHA-256 (list L12, `TipoHuella` `01`);
//! * input: `nombreCampo1=valorCampo1&nombreCampo2=valorCampo2&...` with the
//!   fields of section 3 in that order, each value with the spaces at both
//!   ends removed, and a field that is absent or empty written as `name=`;
//! * the string is encoded as UTF-8;
//! * output: hexadecimal, upper case, 64 characters.

use core::fmt;
use core::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::ValidationError;

/// A SHA-256 huella: 64 upper-case hexadecimal characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Huella(String);

impl Huella {
    /// Validates a stored huella. Lower case is rejected rather than fixed:
    /// the AEAT requires upper case, and silently changing a stored value
    /// would hide a bug elsewhere.
    pub fn parse(value: &str) -> Result<Self, ValidationError> {
        let t = value.trim();
        if t.len() != 64
            || !t
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
        {
            return Err(ValidationError::format(
                "Huella",
                t,
                "a huella is 64 upper-case hexadecimal characters",
            ));
        }
        Ok(Self(t.to_owned()))
    }

    /// The huella text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Huella {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Huella {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The values, as written in the XML, that enter the huella of a
/// `RegistroAlta` (section 3.a of the hash document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HuellaAltaInput<'a> {
    /// `IDFactura/IDEmisorFactura`.
    pub id_emisor_factura: &'a str,
    /// `IDFactura/NumSerieFactura`.
    pub num_serie_factura: &'a str,
    /// `IDFactura/FechaExpedicionFactura` (`dd-mm-yyyy`).
    pub fecha_expedicion_factura: &'a str,
    /// `TipoFactura`.
    pub tipo_factura: &'a str,
    /// `CuotaTotal`.
    pub cuota_total: &'a str,
    /// `ImporteTotal`.
    pub importe_total: &'a str,
    /// `Encadenamiento/RegistroAnterior/Huella`; empty for the first record.
    pub huella_anterior: &'a str,
    /// `FechaHoraHusoGenRegistro`.
    pub fecha_hora_huso_gen_registro: &'a str,
}

/// The values, as written in the XML, that enter the huella of a
/// `RegistroAnulacion` (section 3.b of the hash document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HuellaAnulacionInput<'a> {
    /// `IDFactura/IDEmisorFacturaAnulada`.
    pub id_emisor_factura_anulada: &'a str,
    /// `IDFactura/NumSerieFacturaAnulada`.
    pub num_serie_factura_anulada: &'a str,
    /// `IDFactura/FechaExpedicionFacturaAnulada`.
    pub fecha_expedicion_factura_anulada: &'a str,
    /// `Encadenamiento/RegistroAnterior/Huella`; empty for the first record.
    pub huella_anterior: &'a str,
    /// `FechaHoraHusoGenRegistro`.
    pub fecha_hora_huso_gen_registro: &'a str,
}

/// Removes the spaces at both ends of a value. Like Java's `String.trim()`,
/// which the AEAT's own example uses, every character up to U+0020 counts.
fn recortar(value: &str) -> &str {
    value.trim_matches(|c: char| c <= ' ')
}

fn concatenar(campos: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(256);
    for (i, (nombre, valor)) in campos.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(nombre);
        out.push('=');
        out.push_str(recortar(valor));
    }
    out
}

/// The exact string hashed for a `RegistroAlta`.
pub fn cadena_alta(input: &HuellaAltaInput<'_>) -> String {
    concatenar(&[
        ("IDEmisorFactura", input.id_emisor_factura),
        ("NumSerieFactura", input.num_serie_factura),
        ("FechaExpedicionFactura", input.fecha_expedicion_factura),
        ("TipoFactura", input.tipo_factura),
        ("CuotaTotal", input.cuota_total),
        ("ImporteTotal", input.importe_total),
        ("Huella", input.huella_anterior),
        (
            "FechaHoraHusoGenRegistro",
            input.fecha_hora_huso_gen_registro,
        ),
    ])
}

/// The exact string hashed for a `RegistroAnulacion`.
pub fn cadena_anulacion(input: &HuellaAnulacionInput<'_>) -> String {
    concatenar(&[
        ("IDEmisorFacturaAnulada", input.id_emisor_factura_anulada),
        ("NumSerieFacturaAnulada", input.num_serie_factura_anulada),
        (
            "FechaExpedicionFacturaAnulada",
            input.fecha_expedicion_factura_anulada,
        ),
        ("Huella", input.huella_anterior),
        (
            "FechaHoraHusoGenRegistro",
            input.fecha_hora_huso_gen_registro,
        ),
    ])
}

/// SHA-256 of the UTF-8 bytes of `cadena`, in upper-case hexadecimal.
pub fn huella_de_cadena(cadena: &str) -> Huella {
    let digest = Sha256::digest(cadena.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(b"0123456789ABCDEF"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789ABCDEF"[usize::from(byte & 0x0f)]));
    }
    Huella(hex)
}

/// Huella of a `RegistroAlta`.
pub fn huella_alta(input: &HuellaAltaInput<'_>) -> Huella {
    huella_de_cadena(&cadena_alta(input))
}

/// Huella of a `RegistroAnulacion`.
pub fn huella_anulacion(input: &HuellaAnulacionInput<'_>) -> Huella {
    huella_de_cadena(&cadena_anulacion(input))
}

#[cfg(test)]
mod tests {
    //! The three worked examples of section 6 of the AEAT hash document
    //! (v0.1.2: "Recodificación ejemplo generación huella"). Each case gives
    //! the field values and the expected huella; case 2 chains on case 1 and
    //! case 3 (a cancellation) on case 2.

    use super::*;

    const CASO_1: &str = "3C464DAF61ACB827C65FDA19F352A4E3BDC2C640E9E9FC4CC058073F38F12F60";
    const CASO_2: &str = "F7B94CFD8924EDFF273501B01EE5153E4CE8F259766F88CF6ACB8935802A2B97";
    const CASO_3: &str = "177547C0D57AC74748561D054A9CEC14B4C4EA23D1BEFD6F2E69E3A388F90C68";

    #[test]
    fn aeat_caso_1_primer_registro_alta() {
        let input = HuellaAltaInput {
            id_emisor_factura: "89890001K",
            num_serie_factura: "12345678/G33",
            fecha_expedicion_factura: "01-01-2024",
            tipo_factura: "F1",
            cuota_total: "12.35",
            importe_total: "123.45",
            huella_anterior: "",
            fecha_hora_huso_gen_registro: "2024-01-01T19:20:30+01:00",
        };
        assert_eq!(
            cadena_alta(&input),
            "IDEmisorFactura=89890001K&NumSerieFactura=12345678/G33&FechaExpedicionFactura=01-01-2024\
             &TipoFactura=F1&CuotaTotal=12.35&ImporteTotal=123.45&Huella=\
             &FechaHoraHusoGenRegistro=2024-01-01T19:20:30+01:00"
        );
        assert_eq!(huella_alta(&input).as_str(), CASO_1);
    }

    #[test]
    fn aeat_caso_2_alta_con_registro_anterior() {
        let input = HuellaAltaInput {
            id_emisor_factura: "89890001K",
            num_serie_factura: "12345679/G34",
            fecha_expedicion_factura: "01-01-2024",
            tipo_factura: "F1",
            cuota_total: "12.35",
            importe_total: "123.45",
            huella_anterior: CASO_1,
            fecha_hora_huso_gen_registro: "2024-01-01T19:20:35+01:00",
        };
        assert_eq!(huella_alta(&input).as_str(), CASO_2);
    }

    #[test]
    fn aeat_caso_3_anulacion_con_registro_anterior() {
        let input = HuellaAnulacionInput {
            id_emisor_factura_anulada: "89890001K",
            num_serie_factura_anulada: "12345679/G34",
            fecha_expedicion_factura_anulada: "01-01-2024",
            huella_anterior: CASO_2,
            fecha_hora_huso_gen_registro: "2024-01-01T19:20:40+01:00",
        };
        assert_eq!(
            cadena_anulacion(&input),
            "IDEmisorFacturaAnulada=89890001K&NumSerieFacturaAnulada=12345679/G34\
             &FechaExpedicionFacturaAnulada=01-01-2024&Huella="
                .to_owned()
                + CASO_2
                + "&FechaHoraHusoGenRegistro=2024-01-01T19:20:40+01:00"
        );
        assert_eq!(huella_anulacion(&input).as_str(), CASO_3);
    }

    #[test]
    fn values_are_trimmed_before_hashing() {
        // Section 3: "<NumSerieFactura>    12345678 / G33  </NumSerieFactura>"
        // contributes "12345678 / G33".
        let padded = HuellaAltaInput {
            id_emisor_factura: " 89890001K ",
            num_serie_factura: "    12345678/G33  ",
            fecha_expedicion_factura: "01-01-2024\n",
            tipo_factura: "F1",
            cuota_total: " 12.35",
            importe_total: "123.45 ",
            huella_anterior: "  ",
            fecha_hora_huso_gen_registro: "\t2024-01-01T19:20:30+01:00",
        };
        assert_eq!(huella_alta(&padded).as_str(), CASO_1);
    }

    #[test]
    fn huella_parse() {
        assert!(Huella::parse(CASO_1).is_ok());
        assert!(Huella::parse(&CASO_1.to_lowercase()).is_err());
        assert!(Huella::parse(&CASO_1[..63]).is_err());
        assert!(Huella::parse("HuellaRegistroAnterior").is_err());
    }
}
