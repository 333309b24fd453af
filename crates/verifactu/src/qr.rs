//! The tax QR code ("QR tributario") and its verification URL, per the AEAT
//! document "Detalle de las especificaciones técnicas del código «QR» de la
//! factura" (v0.4.7):
//!
//! * URL `https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQR`
//!   (production) or `https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR`
//!   (external test portal), `ValidarQRNoVerifactu` for non-VERI*FACTU
//!   systems (section 5);
//! * exactly four parameters `nif`, `numserie`, `fecha` (`DD-MM-AAAA`) and
//!   `importe` (dot as decimal separator, at most 12 integer digits and 2
//!   decimals) (section 6), URL-encoded as UTF-8 (section 4);
//! * ISO/IEC 18004:2015 with error correction level M (art. 21 of the order).

use core::fmt::Write as _;

use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};
use rust_decimal::Decimal;

use crate::alta::RegistroAlta;
use crate::fecha::Fecha;
use crate::ids::{Nif, NumSerie};

/// Why a QR code or its URL could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QrError {
    /// The amount does not fit the `importe` parameter.
    #[error("importe {0} does not fit the QR format (at most 12 integer digits and 2 decimals)")]
    Importe(String),
    /// The data does not fit in a QR code.
    #[error("the QR code cannot be generated: {0}")]
    Codificacion(String),
}

/// Which AEAT environment the URL points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entorno {
    /// `https://www2.agenciatributaria.gob.es`.
    Produccion,
    /// External test portal, `https://prewww2.aeat.es`.
    Pruebas,
}

/// Whether the invoicing system sends its records to the AEAT (VERI*FACTU,
/// "facturas verificables") or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Modalidad {
    /// `ValidarQR`.
    #[default]
    Verifactu,
    /// `ValidarQRNoVerifactu`.
    NoVerifactu,
}

/// Base URL (up to and including `?`) for an environment and mode.
pub fn url_base(entorno: Entorno, modalidad: Modalidad) -> &'static str {
    match (entorno, modalidad) {
        (Entorno::Produccion, Modalidad::Verifactu) => {
            "https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQR?"
        }
        (Entorno::Produccion, Modalidad::NoVerifactu) => {
            "https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQRNoVerifactu?"
        }
        (Entorno::Pruebas, Modalidad::Verifactu) => {
            "https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR?"
        }
        (Entorno::Pruebas, Modalidad::NoVerifactu) => {
            "https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQRNoVerifactu?"
        }
    }
}

/// Percent-encodes a query value as UTF-8, leaving only the RFC 3986
/// unreserved characters (`A–Z a–z 0–9 - . _ ~`) as they are; a space becomes
/// `%20`.
pub fn codificar_parametro(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Checks and writes the `importe` parameter. The number keeps the scale it
/// was given: `241.4` is written `241.4` (as in the AEAT examples) and the
/// `Decimal` from [`crate::Importe::to_decimal`] is written with two
/// decimals (`241.40`); the AEAT treats both alike.
fn texto_importe(importe: Decimal) -> Result<String, QrError> {
    let bad = || QrError::Importe(importe.to_string());
    if importe.scale() > 2 {
        return Err(bad());
    }
    if importe.abs().trunc() >= Decimal::from(1_000_000_000_000_i64) {
        return Err(bad());
    }
    Ok(importe.to_string())
}

/// The verification URL for an invoice.
///
/// ```
/// # use verifactu::qr::{url_cotejo, Entorno, Modalidad};
/// # use rust_decimal::Decimal;
/// let url = url_cotejo(
///     Entorno::Pruebas,
///     Modalidad::Verifactu,
///     &"89890001K".parse().unwrap(),
///     &"12345678&G33".parse().unwrap(),
///     "01-01-2024".parse().unwrap(),
///     Decimal::new(2414, 1),
/// ).unwrap();
/// assert_eq!(url, "https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR?nif=89890001K&numserie=12345678%26G33&fecha=01-01-2024&importe=241.4");
/// ```
pub fn url_cotejo(
    entorno: Entorno,
    modalidad: Modalidad,
    nif: &Nif,
    num_serie: &NumSerie,
    fecha: Fecha,
    importe: Decimal,
) -> Result<String, QrError> {
    Ok(format!(
        "{}nif={}&numserie={}&fecha={}&importe={}",
        url_base(entorno, modalidad),
        codificar_parametro(nif.as_str()),
        codificar_parametro(num_serie.as_str()),
        codificar_parametro(&fecha.to_string()),
        codificar_parametro(&texto_importe(importe)?),
    ))
}

/// The VERI*FACTU verification URL of a registration record: issuer NIF,
/// invoice number, issue date and `ImporteTotal` (two decimals).
pub fn url_cotejo_registro(registro: &RegistroAlta, entorno: Entorno) -> Result<String, QrError> {
    let id = registro.id_factura();
    url_cotejo(
        entorno,
        Modalidad::Verifactu,
        &id.emisor,
        &id.num_serie,
        id.fecha_expedicion,
        registro.datos().importe_total.to_decimal(),
    )
}

/// Encodes `url` as a QR code with error correction level M.
pub fn codigo_qr(url: &str) -> Result<QrCode, QrError> {
    QrCode::with_error_correction_level(url.as_bytes(), EcLevel::M)
        .map_err(|e| QrError::Codificacion(e.to_string()))
}

/// An SVG image of the QR code for `url` (level M, with the standard
/// four-module quiet zone), at least `min_px` pixels wide. Print it at 30–40
/// mm, under the text «QR tributario:» (section 3 of the QR document).
pub fn qr_svg(url: &str, min_px: u32) -> Result<String, QrError> {
    let code = codigo_qr(url)?;
    Ok(code
        .render::<svg::Color<'_>>()
        .quiet_zone(true)
        .min_dimensions(min_px, min_px)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build())
}

#[cfg(test)]
#[path = "qr_tests.rs"]
mod tests;
