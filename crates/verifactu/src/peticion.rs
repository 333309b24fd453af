//! Reading a submission back (`RegFactuSistemaFacturacion`, bare or in a SOAP
//! envelope) and checking it as the AEAT does: every huella recomputed from
//! the record's own fields, and every record chained to the one before it.
//!
//! This is what a stand-in for the AEAT needs in tests, and what an operator
//! tool needs to audit stored records; the invoicing service itself never
//! parses its own XML to send it.

use crate::huella::{
    HuellaAltaInput, HuellaAnulacionInput, cadena_alta, cadena_anulacion, huella_de_cadena,
};
use crate::respuesta::ResponseError;
use crate::xml::{NS_SOAP_ENVELOPE, NS_SUMINISTRO_LR};
use crate::xml_tree::{Element, parse};

/// One record of a submission, as the text of the fields the AEAT checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistroLeido {
    /// `true` for `RegistroAnulacion`, `false` for `RegistroAlta`.
    pub anulacion: bool,
    /// Issuer NIF (`IDEmisorFactura` / `IDEmisorFacturaAnulada`).
    pub id_emisor: String,
    /// Invoice number (`NumSerieFactura` / `NumSerieFacturaAnulada`).
    pub num_serie: String,
    /// Invoice date `dd-mm-yyyy`.
    pub fecha_expedicion: String,
    /// `TipoFactura` (empty for a cancellation).
    pub tipo_factura: String,
    /// `CuotaTotal` (empty for a cancellation).
    pub cuota_total: String,
    /// `ImporteTotal` (empty for a cancellation).
    pub importe_total: String,
    /// `Encadenamiento/RegistroAnterior`: issuer, number, date and huella of
    /// the previous record; `None` for `PrimerRegistro=S`.
    pub anterior: Option<[String; 4]>,
    /// `FechaHoraHusoGenRegistro`.
    pub fecha_hora_huso_gen_registro: String,
    /// `Huella` as sent.
    pub huella: String,
}

impl RegistroLeido {
    /// The huella recomputed from the record's fields (hash document, section 3).
    pub fn huella_calculada(&self) -> String {
        let anterior = self.anterior.as_ref().map_or("", |a| a[3].as_str());
        let cadena = if self.anulacion {
            cadena_anulacion(&HuellaAnulacionInput {
                id_emisor_factura_anulada: &self.id_emisor,
                num_serie_factura_anulada: &self.num_serie,
                fecha_expedicion_factura_anulada: &self.fecha_expedicion,
                huella_anterior: anterior,
                fecha_hora_huso_gen_registro: &self.fecha_hora_huso_gen_registro,
            })
        } else {
            cadena_alta(&HuellaAltaInput {
                id_emisor_factura: &self.id_emisor,
                num_serie_factura: &self.num_serie,
                fecha_expedicion_factura: &self.fecha_expedicion,
                tipo_factura: &self.tipo_factura,
                cuota_total: &self.cuota_total,
                importe_total: &self.importe_total,
                huella_anterior: anterior,
                fecha_hora_huso_gen_registro: &self.fecha_hora_huso_gen_registro,
            })
        };
        huella_de_cadena(&cadena).to_string()
    }

    /// This record as the next record's `RegistroAnterior`.
    pub fn como_anterior(&self) -> [String; 4] {
        [
            self.id_emisor.clone(),
            self.num_serie.clone(),
            self.fecha_expedicion.clone(),
            self.huella.clone(),
        ]
    }
}

/// A submission read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeticionLeida {
    /// `Cabecera/ObligadoEmision/NIF`.
    pub nif_obligado_emision: String,
    /// `Cabecera/ObligadoEmision/NombreRazon`.
    pub nombre_obligado_emision: String,
    /// The records, in order.
    pub registros: Vec<RegistroLeido>,
}

/// Reads a `RegFactuSistemaFacturacion`, bare or inside a SOAP envelope.
pub fn leer_peticion(xml: &str) -> Result<PeticionLeida, ResponseError> {
    let root = parse(xml)?;
    let doc = if root.is(NS_SOAP_ENVELOPE, "Envelope") {
        let body = root.child("Body").ok_or(ResponseError::Missing {
            element: "Body",
            parent: "Envelope",
        })?;
        body.children.first().ok_or(ResponseError::Missing {
            element: "RegFactuSistemaFacturacion",
            parent: "Body",
        })?
    } else {
        &root
    };
    if !doc.is(NS_SUMINISTRO_LR, "RegFactuSistemaFacturacion") {
        return Err(ResponseError::UnexpectedElement(doc.name.clone()));
    }
    let obligado = req(
        req(doc, "Cabecera", "RegFactuSistemaFacturacion")?,
        "ObligadoEmision",
        "Cabecera",
    )?;
    let registros = doc
        .children_named("RegistroFactura")
        .map(leer_registro)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PeticionLeida {
        nif_obligado_emision: texto(obligado, "NIF", "ObligadoEmision")?,
        nombre_obligado_emision: texto(obligado, "NombreRazon", "ObligadoEmision")?,
        registros,
    })
}

fn req<'a>(
    e: &'a Element,
    element: &'static str,
    parent: &'static str,
) -> Result<&'a Element, ResponseError> {
    e.child(element)
        .ok_or(ResponseError::Missing { element, parent })
}

fn texto(
    e: &Element,
    element: &'static str,
    parent: &'static str,
) -> Result<String, ResponseError> {
    req(e, element, parent).map(|c| c.text().to_owned())
}

fn leer_registro(rf: &Element) -> Result<RegistroLeido, ResponseError> {
    let (r, anulacion, parent) = match (rf.child("RegistroAlta"), rf.child("RegistroAnulacion")) {
        (Some(a), None) => (a, false, "RegistroAlta"),
        (None, Some(a)) => (a, true, "RegistroAnulacion"),
        _ => {
            return Err(ResponseError::Missing {
                element: "RegistroAlta or RegistroAnulacion",
                parent: "RegistroFactura",
            });
        }
    };
    let id = req(r, "IDFactura", parent)?;
    let (emisor, num, fecha) = if anulacion {
        (
            texto(id, "IDEmisorFacturaAnulada", "IDFactura")?,
            texto(id, "NumSerieFacturaAnulada", "IDFactura")?,
            texto(id, "FechaExpedicionFacturaAnulada", "IDFactura")?,
        )
    } else {
        (
            texto(id, "IDEmisorFactura", "IDFactura")?,
            texto(id, "NumSerieFactura", "IDFactura")?,
            texto(id, "FechaExpedicionFactura", "IDFactura")?,
        )
    };
    let enc = req(r, "Encadenamiento", parent)?;
    let anterior = match enc.child("RegistroAnterior") {
        None => None,
        Some(a) => Some([
            texto(a, "IDEmisorFactura", "RegistroAnterior")?,
            texto(a, "NumSerieFactura", "RegistroAnterior")?,
            texto(a, "FechaExpedicionFactura", "RegistroAnterior")?,
            texto(a, "Huella", "RegistroAnterior")?,
        ]),
    };
    let opt = |name: &str| r.child_text(name).unwrap_or_default().to_owned();
    Ok(RegistroLeido {
        anulacion,
        id_emisor: emisor,
        num_serie: num,
        fecha_expedicion: fecha,
        tipo_factura: opt("TipoFactura"),
        cuota_total: opt("CuotaTotal"),
        importe_total: opt("ImporteTotal"),
        anterior,
        fecha_hora_huso_gen_registro: texto(r, "FechaHoraHusoGenRegistro", parent)?,
        huella: texto(r, "Huella", parent)?,
    })
}

/// Why a record of a submission does not hold (AEAT error code and text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FalloRegistro {
    /// 0-based position in the submission.
    pub posicion: usize,
    /// The AEAT error code the real service would answer.
    pub codigo: u32,
    /// What is wrong.
    pub descripcion: String,
}

/// Checks every record's huella and its link to `previo` (the issuer's last
/// record before this submission, as issuer/number/date/huella; `None` when
/// no record was received yet): a wrong huella is AEAT error 2000, a link to
/// another record than the one before it is reported with code 2000 too
/// (the AEAT does not reject broken chains, it flags them).
pub fn verificar_peticion(
    peticion: &PeticionLeida,
    previo: Option<[String; 4]>,
) -> Vec<FalloRegistro> {
    let mut fallos = Vec::new();
    let mut esperado = previo;
    for (posicion, r) in peticion.registros.iter().enumerate() {
        let calculada = r.huella_calculada();
        if calculada != r.huella {
            fallos.push(FalloRegistro {
                posicion,
                codigo: 2000,
                descripcion: format!(
                    "El cálculo de la huella suministrada es incorrecta: se esperaba {calculada}"
                ),
            });
        }
        if r.anterior != esperado {
            fallos.push(FalloRegistro {
                posicion,
                codigo: 2000,
                descripcion: format!(
                    "Encadenamiento roto: el registro anterior es {:?}, no {:?}",
                    esperado, r.anterior
                ),
            });
        }
        esperado = Some(r.como_anterior());
    }
    fallos
}

/// Joins stored single-record submissions (each a `RegFactuSistemaFacturacion`
/// as written by [`crate::RegFactuSistemaFacturacion::to_xml`]) into one SOAP
/// request with the first document's `Cabecera` and every `RegistroFactura`
/// in the given order, byte for byte as stored.
///
/// Every document must carry the same `Cabecera` and exactly one record; 1 to
/// 1000 documents.
pub fn sobre_soap_de_documentos(documentos: &[&str]) -> Result<String, String> {
    const CAB: (&str, &str) = ("<sum:Cabecera>", "</sum:Cabecera>");
    const REG: (&str, &str) = ("<sum:RegistroFactura>", "</sum:RegistroFactura>");
    if documentos.is_empty() || documentos.len() > crate::RegFactuSistemaFacturacion::MAX_REGISTROS
    {
        return Err(format!(
            "a submission carries 1 to 1000 records, not {}",
            documentos.len()
        ));
    }
    let entre = |doc: &str, open: &str, close: &str| -> Option<(usize, usize)> {
        let start = doc.find(open)?;
        let end = doc[start..].find(close)? + start + close.len();
        Some((start, end))
    };
    let mut cabecera: Option<&str> = None;
    let mut cuerpo = String::new();
    for (i, doc) in documentos.iter().enumerate() {
        let (cs, ce) = entre(doc, CAB.0, CAB.1)
            .ok_or_else(|| format!("stored document {} has no sum:Cabecera", i + 1))?;
        let cab = &doc[cs..ce];
        match cabecera {
            None => cabecera = Some(cab),
            Some(c) if c != cab => {
                return Err(format!(
                    "stored document {} has another Cabecera than the first",
                    i + 1
                ));
            }
            Some(_) => {}
        }
        let (rs, re) = entre(doc, REG.0, REG.1)
            .ok_or_else(|| format!("stored document {} has no sum:RegistroFactura", i + 1))?;
        if doc[re..].contains(REG.0) {
            return Err(format!(
                "stored document {} carries more than one record",
                i + 1
            ));
        }
        cuerpo.push_str(&doc[rs..re]);
    }
    let cabecera = cabecera.unwrap_or_default();
    Ok(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soapenv:Envelope xmlns:soapenv=\"{NS_SOAP_ENVELOPE}\" \
         xmlns:sum=\"{NS_SUMINISTRO_LR}\" xmlns:sum1=\"{}\"><soapenv:Header/><soapenv:Body>\
         <sum:RegFactuSistemaFacturacion>{cabecera}{cuerpo}</sum:RegFactuSistemaFacturacion>\
         </soapenv:Body></soapenv:Envelope>",
        crate::xml::NS_SUMINISTRO_INFORMACION
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Cadena;
    use crate::envio::{Cabecera, RegFactuSistemaFacturacion};
    use crate::testutil::*;

    fn documentos() -> Vec<String> {
        let mut c = Cadena::new(None);
        let a = c
            .alta(
                f1_nacional("2025/0001", "15-01-2025"),
                madrid(2025, 1, 15, 9, 0, 0),
            )
            .unwrap();
        let b = c
            .alta(
                f1_nacional("2025/0002", "15-01-2025"),
                madrid(2025, 1, 15, 9, 1, 0),
            )
            .unwrap();
        let an = c
            .anulacion(
                anulacion(a.id_factura().clone()),
                madrid(2025, 1, 15, 9, 2, 0),
            )
            .unwrap();
        [a.into(), b.into(), an.into()]
            .into_iter()
            .map(|r| {
                RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), vec![r])
                    .unwrap()
                    .to_xml()
            })
            .collect()
    }

    #[test]
    fn joined_documents_read_back_as_one_unbroken_chain() {
        let docs = documentos();
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let soap = sobre_soap_de_documentos(&refs).unwrap();
        let p = leer_peticion(&soap).unwrap();
        assert_eq!(p.registros.len(), 3);
        assert!(p.registros[2].anulacion);
        assert_eq!(p.registros[0].anterior, None);
        assert_eq!(verificar_peticion(&p, None), vec![]);
        // Sent again after the chain moved on, the first record's link is wrong.
        let otra = Some(p.registros[2].como_anterior());
        let fallos = verificar_peticion(&p, otra);
        assert_eq!(fallos.len(), 1);
        assert_eq!(fallos[0].posicion, 0);
    }

    #[test]
    fn a_tampered_amount_breaks_the_huella() {
        let docs = documentos();
        let tampered = docs[1].replace(
            "<sum1:ImporteTotal>121.00</sum1:ImporteTotal>",
            "<sum1:ImporteTotal>12.10</sum1:ImporteTotal>",
        );
        assert_ne!(tampered, docs[1]);
        let soap = sobre_soap_de_documentos(&[&docs[0], &tampered]).unwrap();
        let fallos = verificar_peticion(&leer_peticion(&soap).unwrap(), None);
        assert_eq!(fallos.len(), 1);
        assert_eq!((fallos[0].posicion, fallos[0].codigo), (1, 2000));
    }

    #[test]
    fn documents_must_share_the_header_and_hold_one_record() {
        let docs = documentos();
        assert!(sobre_soap_de_documentos(&[]).is_err());
        let otra = docs[0].replace("<sum1:NombreRazon>", "<sum1:NombreRazon>OTRA ");
        assert_ne!(otra, docs[0]);
        assert!(sobre_soap_de_documentos(&[&docs[0], &otra]).is_err());
        let dos = docs[0].replace(
            "</sum:RegFactuSistemaFacturacion>",
            "<sum:RegistroFactura></sum:RegistroFactura></sum:RegFactuSistemaFacturacion>",
        );
        assert!(sobre_soap_de_documentos(&[&dos]).is_err());
    }
}
