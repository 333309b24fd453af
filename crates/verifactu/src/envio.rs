//! The submission message `RegFactuSistemaFacturacion` (`SuministroLR.xsd`):
//! a `Cabecera` and 1 to 1000 `RegistroFactura`.

use crate::chain::RegistroFactura;
use crate::error::{ValidationError, texto};
use crate::fecha::Fecha;
use crate::ids::PersonaNif;
use crate::xml::{NS_SOAP_ENVELOPE, NS_SUMINISTRO_INFORMACION, NS_SUMINISTRO_LR, XmlWriter};
use crate::xml_registro::{escribir_alta, escribir_anulacion};

/// `RemisionVoluntaria` (only for VERI*FACTU systems).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RemisionVoluntaria {
    /// `FechaFinVeriFactu`: last day the system will work as VERI*FACTU
    /// (31-12 of the current or previous year, AEAT error 4120).
    pub fecha_fin_verifactu: Option<Fecha>,
    /// `Incidencia` = `S`: the submission was delayed by a technical incident.
    pub incidencia: bool,
}

/// `RemisionRequerimiento` (only for non-VERI*FACTU systems answering an
/// AEAT request).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemisionRequerimiento {
    /// `RefRequerimiento`, up to 18 characters.
    pub ref_requerimiento: String,
    /// `FinRequerimiento` = `S` on the last submission.
    pub fin_requerimiento: bool,
}

/// `Cabecera` of the submission.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cabecera {
    /// `ObligadoEmision`: the taxpayer whose invoices are sent.
    pub obligado_emision: PersonaNif,
    /// `Representante`: the adviser that generated the records, if any.
    pub representante: Option<PersonaNif>,
    /// `RemisionVoluntaria`.
    pub remision_voluntaria: Option<RemisionVoluntaria>,
    /// `RemisionRequerimiento`.
    pub remision_requerimiento: Option<RemisionRequerimiento>,
}

impl Cabecera {
    /// A header with just the taxpayer (the usual VERI*FACTU case).
    pub fn new(obligado_emision: PersonaNif) -> Self {
        Self {
            obligado_emision,
            representante: None,
            remision_voluntaria: None,
            remision_requerimiento: None,
        }
    }
}

/// A validated submission, ready to be written as XML.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegFactuSistemaFacturacion {
    cabecera: Cabecera,
    registros: Vec<RegistroFactura>,
}

impl RegFactuSistemaFacturacion {
    /// At most 1000 records per submission (`maxOccurs="1000"`).
    pub const MAX_REGISTROS: usize = 1000;

    /// Validates the submission: 1 to 1000 records, every invoice issued by
    /// the header's taxpayer (AEAT error 1108), and voluntary and on-request
    /// blocks not mixed (errors 4126/4127).
    pub fn new(
        cabecera: Cabecera,
        registros: Vec<RegistroFactura>,
    ) -> Result<Self, ValidationError> {
        texto("NombreRazon", &cabecera.obligado_emision.nombre_razon, 120)?;
        if let Some(r) = &cabecera.representante {
            texto("NombreRazon", &r.nombre_razon, 120)?;
        }
        if let Some(r) = &cabecera.remision_requerimiento {
            texto("RefRequerimiento", &r.ref_requerimiento, 18)?;
            if cabecera.remision_voluntaria.is_some() {
                return Err(ValidationError::rule(
                    4127,
                    "RemisionVoluntaria (VERI*FACTU) and RemisionRequerimiento cannot both be present",
                ));
            }
        }
        if registros.is_empty() || registros.len() > Self::MAX_REGISTROS {
            return Err(ValidationError::rule(
                4113,
                format!(
                    "a submission carries 1 to 1000 records, not {}",
                    registros.len()
                ),
            ));
        }
        let nif = &cabecera.obligado_emision.nif;
        if let Some(r) = registros.iter().find(|r| r.id_factura().emisor != *nif) {
            return Err(ValidationError::rule(
                1108,
                format!(
                    "invoice {} is issued by {}, not by the header's ObligadoEmision {nif}",
                    r.id_factura().num_serie,
                    r.id_factura().emisor
                ),
            ));
        }
        Ok(Self {
            cabecera,
            registros,
        })
    }

    /// The header.
    pub fn cabecera(&self) -> &Cabecera {
        &self.cabecera
    }

    /// The records, in submission order.
    pub fn registros(&self) -> &[RegistroFactura] {
        &self.registros
    }

    /// The `RegFactuSistemaFacturacion` document on its own (root element
    /// with the `sum` and `sum1` namespace declarations), as validated by
    /// `SuministroLR.xsd`.
    pub fn to_xml(&self) -> String {
        let mut w = XmlWriter::new();
        self.escribir(&mut w, true);
        w.finish()
    }

    /// The SOAP 1.1 request body sent to the AEAT web service
    /// (`soapenv:Envelope` / `soapenv:Body` / `sum:RegFactuSistemaFacturacion`).
    pub fn to_soap_envelope(&self) -> String {
        let mut w = XmlWriter::new();
        w.open_with_ns(
            "soapenv:Envelope",
            &[
                ("soapenv", NS_SOAP_ENVELOPE),
                ("sum", NS_SUMINISTRO_LR),
                ("sum1", NS_SUMINISTRO_INFORMACION),
            ],
        );
        w.empty("soapenv:Header");
        w.open("soapenv:Body");
        self.escribir(&mut w, false);
        w.close("soapenv:Body");
        w.close("soapenv:Envelope");
        w.finish()
    }

    fn escribir(&self, w: &mut XmlWriter, declarar_ns: bool) {
        let ns: &[(&str, &str)] = if declarar_ns {
            &[
                ("sum", NS_SUMINISTRO_LR),
                ("sum1", NS_SUMINISTRO_INFORMACION),
            ]
        } else {
            &[]
        };
        w.open_with_ns("sum:RegFactuSistemaFacturacion", ns);
        escribir_cabecera(w, &self.cabecera);
        for r in &self.registros {
            w.open("sum:RegistroFactura");
            match r {
                RegistroFactura::Alta(a) => escribir_alta(w, a),
                RegistroFactura::Anulacion(a) => escribir_anulacion(w, a),
            }
            w.close("sum:RegistroFactura");
        }
        w.close("sum:RegFactuSistemaFacturacion");
    }
}

fn escribir_persona_nif(w: &mut XmlWriter, tag: &str, p: &PersonaNif) {
    w.open(tag);
    w.leaf("sum1:NombreRazon", p.nombre_razon.trim());
    w.leaf("sum1:NIF", p.nif.as_str());
    w.close(tag);
}

fn escribir_cabecera(w: &mut XmlWriter, c: &Cabecera) {
    w.open("sum:Cabecera");
    escribir_persona_nif(w, "sum1:ObligadoEmision", &c.obligado_emision);
    if let Some(r) = &c.representante {
        escribir_persona_nif(w, "sum1:Representante", r);
    }
    if let Some(v) = &c.remision_voluntaria {
        w.open("sum1:RemisionVoluntaria");
        w.leaf_opt(
            "sum1:FechaFinVeriFactu",
            v.fecha_fin_verifactu.map(|f| f.to_string()).as_deref(),
        );
        w.leaf_opt("sum1:Incidencia", v.incidencia.then_some("S"));
        w.close("sum1:RemisionVoluntaria");
    }
    if let Some(r) = &c.remision_requerimiento {
        w.open("sum1:RemisionRequerimiento");
        w.leaf("sum1:RefRequerimiento", r.ref_requerimiento.trim());
        w.leaf_opt("sum1:FinRequerimiento", r.fin_requerimiento.then_some("S"));
        w.close("sum1:RemisionRequerimiento");
    }
    w.close("sum:Cabecera");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Cadena;
    use crate::ids::Nif;
    use crate::testutil::*;
    use crate::xml_tree::parse;

    fn uno() -> Vec<RegistroFactura> {
        let mut c = Cadena::new(None);
        vec![
            c.alta(
                f1_nacional("2025/0001", "15-01-2025"),
                madrid(2025, 1, 15, 9, 0, 0),
            )
            .unwrap()
            .into(),
        ]
    }

    #[test]
    fn xml_has_aeat_prefixes_and_escaped_text() {
        let xml = RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), uno())
            .unwrap()
            .to_xml();
        assert!(xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sum:RegFactuSistemaFacturacion"
        ));
        assert!(xml.contains(&format!("xmlns:sum=\"{NS_SUMINISTRO_LR}\"")));
        assert!(xml.contains(&format!("xmlns:sum1=\"{NS_SUMINISTRO_INFORMACION}\"")));
        assert!(
            xml.contains(
                "<sum1:NombreRazon>EMPRESA DE PRUEBAS &amp; HIJOS, S.L.</sum1:NombreRazon>"
            )
        );
        assert!(xml.contains("<sum1:DescripcionOperacion>Servicios de consultoría &lt;enero&gt;</sum1:DescripcionOperacion>"));
        assert!(xml.contains("<sum1:PrimerRegistro>S</sum1:PrimerRegistro>"));
        assert!(xml.contains("<sum1:CuotaTotal>21.00</sum1:CuotaTotal>"));
        assert!(xml.contains("<sum1:ImporteTotal>121.00</sum1:ImporteTotal>"));
        assert!(xml.contains("<sum1:TipoImpositivo>21.00</sum1:TipoImpositivo>"));
        assert!(xml.contains("<sum1:FechaHoraHusoGenRegistro>2025-01-15T10:00:00+01:00</sum1:FechaHoraHusoGenRegistro>"));
        assert!(xml.contains("<sum1:TipoHuella>01</sum1:TipoHuella>"));
        assert!(!xml.contains("Macrodato"));
    }

    #[test]
    fn soap_envelope_wraps_the_same_document() {
        let envio = RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), uno()).unwrap();
        let bare = parse(&envio.to_xml()).unwrap();
        let soap = parse(&envio.to_soap_envelope()).unwrap();
        assert!(soap.is(NS_SOAP_ENVELOPE, "Envelope"));
        let body = soap.child("Body").unwrap();
        assert_eq!(body.children.len(), 1);
        assert_eq!(body.children[0], bare);
        assert!(bare.is(NS_SUMINISTRO_LR, "RegFactuSistemaFacturacion"));
        let alta = bare
            .child("RegistroFactura")
            .unwrap()
            .child("RegistroAlta")
            .unwrap();
        assert_eq!(alta.ns.as_deref(), Some(NS_SUMINISTRO_INFORMACION));
    }

    #[test]
    fn invoices_must_belong_to_the_header_taxpayer() {
        let otro = PersonaNif::new("OTRA SL", Nif::new("B87654321").unwrap()).unwrap();
        let err = RegFactuSistemaFacturacion::new(Cabecera::new(otro), uno()).unwrap_err();
        assert!(err.to_string().contains("1108"), "{err}");
    }

    #[test]
    fn record_count_limits() {
        assert!(RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), vec![]).is_err());
        let uno = uno();
        let mil: Vec<_> = std::iter::repeat_n(uno[0].clone(), 1000).collect();
        assert!(RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), mil.clone()).is_ok());
        let mut mil_uno = mil;
        mil_uno.push(uno[0].clone());
        assert!(RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), mil_uno).is_err());
    }

    #[test]
    fn voluntary_and_on_request_blocks_do_not_mix() {
        let mut c = Cabecera::new(obligado());
        c.remision_voluntaria = Some(RemisionVoluntaria::default());
        c.remision_requerimiento = Some(RemisionRequerimiento {
            ref_requerimiento: "REQ-1".into(),
            fin_requerimiento: true,
        });
        assert!(RegFactuSistemaFacturacion::new(c, uno()).is_err());
    }
}
