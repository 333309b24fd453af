//! AEAT error codes: the AEAT's own list (`errores.properties`, bundled in
//! `data/`) and plain-words explanations of the frequent ones.

use std::sync::LazyLock;

/// What an error code does to a submission, per the three sections of the
/// AEAT list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CategoriaError {
    /// The whole submission is rejected (a SOAP fault or every line).
    RechazoEnvio,
    /// The record is rejected (or the whole submission, when the error is
    /// in the header).
    RechazoRegistro,
    /// The record is accepted "with errors" and must be corrected later.
    AceptadoConErrores,
    /// Not in the AEAT list bundled with this crate.
    Desconocida,
}

struct Entrada {
    codigo: u32,
    descripcion: &'static str,
    categoria: CategoriaError,
}

const CATALOGO_AEAT: &str = include_str!("../data/errores.properties.utf8.txt");

static CATALOGO: LazyLock<Vec<Entrada>> = LazyLock::new(|| {
    let mut categoria = CategoriaError::Desconocida;
    let mut entradas = Vec::new();
    for linea in CATALOGO_AEAT.lines() {
        if linea.starts_with("*****") {
            categoria = if linea.contains("envío completo") {
                CategoriaError::RechazoEnvio
            } else if linea.contains("rechazo de la factura") {
                CategoriaError::RechazoRegistro
            } else {
                CategoriaError::AceptadoConErrores
            };
        } else if let Some((codigo, descripcion)) = linea.split_once('=')
            && let Ok(codigo) = codigo.trim().parse()
        {
            entradas.push(Entrada {
                codigo,
                descripcion: descripcion.trim(),
                categoria,
            });
        }
    }
    entradas
});

fn entrada(codigo: u32) -> Option<&'static Entrada> {
    CATALOGO.iter().find(|e| e.codigo == codigo)
}

/// The AEAT's own description of `codigo` (Spanish), if it is in its list.
pub fn descripcion_aeat(codigo: u32) -> Option<&'static str> {
    entrada(codigo).map(|e| e.descripcion)
}

/// The effect of `codigo` on the submission.
pub fn categoria_error(codigo: u32) -> CategoriaError {
    entrada(codigo).map_or(CategoriaError::Desconocida, |e| e.categoria)
}

/// Plain-words explanations of the errors an invoicing service meets most.
const EXPLICACIONES: &[(u32, &str)] = &[
    (
        4102,
        "The XML does not follow the AEAT schema: a required field is missing. This is a software bug; nothing in the submission was registered.",
    ),
    (
        4104,
        "The issuer's NIF in the header is not known to the AEAT. Check the company's NIF.",
    ),
    (
        4107,
        "A NIF in the submission is not registered in the AEAT census.",
    ),
    (4109, "A NIF has a wrong format. Check it for typos."),
    (
        4112,
        "The certificate used to send is not the issuer's, nor that of a registered social collaborator, proxy or successor.",
    ),
    (4113, "Too many records in one block of the submission."),
    (4114, "More than 1000 records in one submission; split it."),
    (
        4119,
        "The message contains characters that are not valid UTF-8.",
    ),
    (1100, "A field has a wrong value or type."),
    (1104, "The invoice number (NumSerieFactura) is not valid."),
    (
        1105,
        "The issue date (FechaExpedicionFactura) is not valid.",
    ),
    (
        1108,
        "The invoice's issuer NIF differs from the NIF in the submission header; send each company's invoices separately.",
    ),
    (1109, "A NIF is not registered in the AEAT census."),
    (1110, "A NIF is not registered in the AEAT census."),
    (1112, "The issue date is in the future."),
    (
        1114,
        "A corrective invoice (R1–R5) must say whether it corrects by substitution (S) or by differences (I).",
    ),
    (
        1118,
        "A corrective invoice by substitution must include the corrected base and tax (ImporteRectificacion).",
    ),
    (
        1130,
        "The invoice number contains characters the AEAT does not accept (\" ' < > =).",
    ),
    (
        1142,
        "A line's tax does not match its base times its rate (more than 10 € off).",
    ),
    (
        1152,
        "The issue date is before 28 October 2024, when VERI*FACTU started; such invoices cannot be sent.",
    ),
    (
        1189,
        "A full invoice (F1, F3, R1–R4) must identify at least one customer.",
    ),
    (
        1190,
        "A simplified invoice (F2, R5) cannot identify customers; issue a full invoice instead.",
    ),
    (
        1193,
        "A customer's NIF is not registered in the AEAT census.",
    ),
    (
        1237,
        "A not-subject line (N1/N2) cannot carry a VAT rate or tax amount.",
    ),
    (
        1238,
        "An exempt line cannot carry a VAT rate or tax amount.",
    ),
    (
        1244,
        "The record generation time (FechaHoraHusoGenRegistro) has a wrong format.",
    ),
    (
        3000,
        "The AEAT already has a record for this invoice: it was sent before. Check the stored result instead of resending; to change it, send a correction (Subsanacion).",
    ),
    (3001, "This invoice's record was already cancelled."),
    (
        3002,
        "The AEAT has no record for this invoice. To cancel an invoice that was never registered, send the cancellation with SinRegistroPrevio.",
    ),
    (
        2000,
        "Accepted, but the huella does not match the AEAT's own calculation. The record must be corrected.",
    ),
    (
        2001,
        "Accepted, but the customer's NIF is not in the AEAT census. Correct it, or identify the customer as not registered (IDOtro with IDType 07).",
    ),
    (
        2004,
        "Accepted, but the generation time is later than the AEAT's clock. Check the server clock; no correction is needed.",
    ),
    (
        2005,
        "Accepted, but the invoice total does not add up from the lines. The record must be corrected.",
    ),
    (
        2006,
        "Accepted, but the total tax does not add up from the lines. The record must be corrected.",
    ),
    (
        2007,
        "Accepted, but it was marked as the first record although the AEAT already has records from this system and issuer. The chain head was probably lost.",
    ),
];

/// A plain explanation of an AEAT error code: this crate's own words for the
/// frequent codes, else the AEAT's description from its list, else the
/// description the response carried, else a generic sentence.
pub fn explicar_error(codigo: u32, descripcion_respuesta: Option<&str>) -> String {
    if let Some((_, texto)) = EXPLICACIONES.iter().find(|(c, _)| *c == codigo) {
        return (*texto).to_owned();
    }
    if let Some(d) = descripcion_aeat(codigo) {
        return format!("AEAT: {d}");
    }
    match descripcion_respuesta
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        Some(d) => format!("AEAT: {d}"),
        None => format!("AEAT error {codigo}, which is not in the AEAT's published list."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_list_is_read_with_its_categories() {
        assert_eq!(CATALOGO.len(), 239);
        assert_eq!(categoria_error(4102), CategoriaError::RechazoEnvio);
        assert_eq!(categoria_error(3501), CategoriaError::RechazoEnvio);
        assert_eq!(categoria_error(1189), CategoriaError::RechazoRegistro);
        assert_eq!(categoria_error(3000), CategoriaError::RechazoRegistro);
        assert_eq!(categoria_error(2000), CategoriaError::AceptadoConErrores);
        assert_eq!(categoria_error(9999), CategoriaError::Desconocida);
        assert_eq!(
            descripcion_aeat(1108),
            Some("El NIF del IDEmisorFactura debe ser el mismo que el NIF del ObligadoEmision.")
        );
    }

    #[test]
    fn explanations_fall_back_in_order() {
        assert!(explicar_error(3000, None).starts_with("The AEAT already has a record"));
        assert_eq!(
            explicar_error(1106, Some("ignored")),
            "AEAT: El valor del campo TipoFactura no está incluido en la lista de valores permitidos."
        );
        assert_eq!(
            explicar_error(9999, Some(" Algo nuevo ")),
            "AEAT: Algo nuevo"
        );
        assert!(explicar_error(9999, None).contains("9999"));
    }

    #[test]
    fn every_plain_explanation_is_a_listed_code() {
        for (codigo, _) in EXPLICACIONES {
            assert!(descripcion_aeat(*codigo).is_some(), "{codigo}");
        }
    }
}
