//! Reading the AEAT's answer to a submission: either a
//! `RespuestaRegFactuSistemaFacturacion` (`RespuestaSuministro.xsd`) or a
//! SOAP `Fault` (whole submission rejected: malformed XML or header error).
//!
//! The root element is matched by namespace and name; below it elements are
//! matched by local name, which is unambiguous within each parent.

use crate::errores;
use crate::xml::{NS_RESPUESTA_SUMINISTRO, NS_SOAP_ENVELOPE};
use crate::xml_tree::{Element, parse};

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    /// The text is not well-formed XML.
    #[error("the AEAT response is not well-formed XML: {0}")]
    Xml(String),
    /// The document is neither a SOAP envelope nor an AEAT response.
    #[error("the AEAT response has an unexpected element `{0}` where the answer should be")]
    UnexpectedElement(String),
    /// A required element is missing.
    #[error("the AEAT response lacks {element} inside {parent}")]
    Missing {
        /// Element name.
        element: &'static str,
        /// Parent element name.
        parent: &'static str,
    },
    /// An element has a value outside its list or type.
    #[error("the AEAT response has {element} = `{value}`, which is not a known value")]
    InvalidValue {
        /// Element name.
        element: &'static str,
        /// The value found.
        value: String,
    },
}

macro_rules! estado_enum {
    ($(#[$m:meta])* $name:ident, $element:literal { $($(#[$vm:meta])* $v:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $v),+ }

        impl $name {
            fn parse(value: &str) -> Result<Self, ResponseError> {
                match value {
                    $(stringify!($v) => Ok(Self::$v),)+
                    other => Err(ResponseError::InvalidValue { element: $element, value: other.to_owned() }),
                }
            }
        }
    };
}

estado_enum! {
    /// `EstadoEnvio` (list L18): result of the whole submission.
    EstadoEnvio, "EstadoEnvio" {
        /// Every record accepted without errors.
        Correcto,
        /// Some records rejected or accepted with errors.
        ParcialmenteCorrecto,
        /// Every record rejected.
        Incorrecto,
    }
}

estado_enum! {
    /// `EstadoRegistro` (list L19): result of one record.
    EstadoRegistro, "EstadoRegistro" {
        /// Accepted and registered.
        Correcto,
        /// Registered, but with admissible errors that must be corrected
        /// (`Subsanacion`).
        AceptadoConErrores,
        /// Rejected: not registered.
        Incorrecto,
    }
}

estado_enum! {
    /// `TipoOperacion` (list L22).
    TipoOperacion, "TipoOperacion" {
        /// A `RegistroAlta`.
        Alta,
        /// A `RegistroAnulacion`.
        Anulacion,
    }
}

estado_enum! {
    /// `EstadoRegistroDuplicado` (list L21): state of the record already held
    /// by the AEAT when a submitted one is rejected as a duplicate.
    EstadoRegistroDuplicado, "EstadoRegistroDuplicado" {
        /// Stored without errors.
        Correcta,
        /// Stored with errors.
        AceptadaConErrores,
        /// Cancelled.
        Anulada,
    }
}

/// `DatosPresentacion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatosPresentacion {
    /// `NIFPresentador`.
    pub nif_presentador: String,
    /// `TimestampPresentacion`, as sent by the AEAT.
    pub timestamp_presentacion: String,
}

/// `IDFactura` echoed in a response line (kept as text, as sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdFacturaRespuesta {
    /// `IDEmisorFactura`.
    pub id_emisor_factura: String,
    /// `NumSerieFactura`.
    pub num_serie_factura: String,
    /// `FechaExpedicionFactura`.
    pub fecha_expedicion_factura: String,
}

/// `RegistroDuplicado`: the record the AEAT already had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistroDuplicado {
    /// `IdPeticionRegistroDuplicado`.
    pub id_peticion: String,
    /// `EstadoRegistroDuplicado`.
    pub estado: EstadoRegistroDuplicado,
    /// `CodigoErrorRegistro` of the stored record.
    pub codigo_error: Option<u32>,
    /// `DescripcionErrorRegistro` of the stored record.
    pub descripcion_error: Option<String>,
}

/// One `RespuestaLinea`: the outcome of one submitted record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespuestaLinea {
    /// `IDFactura`.
    pub id_factura: IdFacturaRespuesta,
    /// `Operacion/TipoOperacion`.
    pub tipo_operacion: TipoOperacion,
    /// `Operacion/Subsanacion`, `RechazoPrevio` and `SinRegistroPrevio` as echoed.
    pub subsanacion: Option<String>,
    /// `Operacion/RechazoPrevio`.
    pub rechazo_previo: Option<String>,
    /// `Operacion/SinRegistroPrevio`.
    pub sin_registro_previo: Option<String>,
    /// `RefExterna`.
    pub ref_externa: Option<String>,
    /// `EstadoRegistro`.
    pub estado_registro: EstadoRegistro,
    /// `CodigoErrorRegistro`.
    pub codigo_error_registro: Option<u32>,
    /// `DescripcionErrorRegistro` (the AEAT's own words).
    pub descripcion_error_registro: Option<String>,
    /// `RegistroDuplicado`.
    pub registro_duplicado: Option<RegistroDuplicado>,
}

impl RespuestaLinea {
    /// A plain explanation of the line's error, if it has one.
    pub fn explicacion(&self) -> Option<String> {
        self.codigo_error_registro
            .map(|c| errores::explicar_error(c, self.descripcion_error_registro.as_deref()))
    }
}

/// `RespuestaRegFactuSistemaFacturacion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespuestaRegFactu {
    /// `CSV`: secure verification code of the submission. Store it: the AEAT
    /// does not return it again. Absent when everything was rejected.
    pub csv: Option<String>,
    /// `DatosPresentacion`.
    pub datos_presentacion: Option<DatosPresentacion>,
    /// `Cabecera/ObligadoEmision/NIF` as echoed.
    pub nif_obligado_emision: String,
    /// `TiempoEsperaEnvio`: seconds to wait before the next submission.
    pub tiempo_espera_envio: Option<u32>,
    /// `EstadoEnvio`.
    pub estado_envio: EstadoEnvio,
    /// `RespuestaLinea`, one per record.
    pub lineas: Vec<RespuestaLinea>,
}

/// The kind of SOAP fault (`faultcode`), which tells whether to resend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TipoFault {
    /// `...:Client`: the message is malformed or wrong; fix it first.
    Cliente,
    /// `...:Server`: an AEAT-side problem; resend the same message.
    Servidor,
    /// Any other code, as sent.
    Otro(String),
}

/// A SOAP `Fault`: the whole submission was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoapFault {
    /// `faultcode` classified.
    pub tipo: TipoFault,
    /// `faultstring`, e.g. `Codigo[4104].El NIF del titular ...`.
    pub faultstring: String,
    /// The AEAT error code found as `Codigo[NNNN]` in `faultstring`.
    pub codigo_error: Option<u32>,
}

impl SoapFault {
    /// `true` when the AEAT asks to resend the same message (server fault).
    pub fn reenviar(&self) -> bool {
        self.tipo == TipoFault::Servidor
    }

    /// A plain explanation of the fault.
    pub fn explicacion(&self) -> String {
        match self.codigo_error {
            Some(c) => errores::explicar_error(c, Some(&self.faultstring)),
            None => self.faultstring.clone(),
        }
    }
}

/// What the AEAT answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RespuestaAeat {
    /// The submission was processed (records may still be rejected).
    Procesada(RespuestaRegFactu),
    /// The whole submission was rejected with a SOAP fault.
    Fault(SoapFault),
}

/// Parses the AEAT's answer: a SOAP envelope (or a bare
/// `RespuestaRegFactuSistemaFacturacion` document).
pub fn parse_respuesta(xml: &str) -> Result<RespuestaAeat, ResponseError> {
    let root = parse(xml)?;
    let answer = if root.is(NS_SOAP_ENVELOPE, "Envelope") {
        let body = root.child("Body").ok_or(ResponseError::Missing {
            element: "Body",
            parent: "Envelope",
        })?;
        body.children.first().ok_or(ResponseError::Missing {
            element: "RespuestaRegFactuSistemaFacturacion or Fault",
            parent: "Body",
        })?
    } else {
        &root
    };
    if answer.is(NS_SOAP_ENVELOPE, "Fault") {
        return Ok(RespuestaAeat::Fault(leer_fault(answer)));
    }
    if !answer.is(
        NS_RESPUESTA_SUMINISTRO,
        "RespuestaRegFactuSistemaFacturacion",
    ) {
        return Err(ResponseError::UnexpectedElement(answer.name.clone()));
    }
    leer_respuesta(answer).map(RespuestaAeat::Procesada)
}

fn requerido<'a>(
    e: &'a Element,
    element: &'static str,
    parent: &'static str,
) -> Result<&'a Element, ResponseError> {
    e.child(element)
        .ok_or(ResponseError::Missing { element, parent })
}

fn opcional(e: &Element, name: &str) -> Option<String> {
    e.child_text(name)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

fn numero(e: &Element, element: &'static str) -> Result<Option<u32>, ResponseError> {
    match e.child_text(element).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| ResponseError::InvalidValue {
                element,
                value: t.to_owned(),
            }),
    }
}

fn leer_respuesta(r: &Element) -> Result<RespuestaRegFactu, ResponseError> {
    const P: &str = "RespuestaRegFactuSistemaFacturacion";
    let datos_presentacion = r.child("DatosPresentacion").map(|d| DatosPresentacion {
        nif_presentador: d
            .child_text("NIFPresentador")
            .unwrap_or_default()
            .to_owned(),
        timestamp_presentacion: d
            .child_text("TimestampPresentacion")
            .unwrap_or_default()
            .to_owned(),
    });
    let cabecera = requerido(r, "Cabecera", P)?;
    let obligado = requerido(cabecera, "ObligadoEmision", "Cabecera")?;
    let lineas = r
        .children_named("RespuestaLinea")
        .map(leer_linea)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RespuestaRegFactu {
        csv: opcional(r, "CSV"),
        datos_presentacion,
        nif_obligado_emision: requerido(obligado, "NIF", "ObligadoEmision")?
            .text()
            .to_owned(),
        tiempo_espera_envio: numero(r, "TiempoEsperaEnvio")?,
        estado_envio: EstadoEnvio::parse(requerido(r, "EstadoEnvio", P)?.text())?,
        lineas,
    })
}

fn leer_linea(l: &Element) -> Result<RespuestaLinea, ResponseError> {
    const P: &str = "RespuestaLinea";
    let id = requerido(l, "IDFactura", P)?;
    let texto = |name: &'static str| requerido(id, name, "IDFactura").map(|e| e.text().to_owned());
    let operacion = requerido(l, "Operacion", P)?;
    let registro_duplicado = match l.child("RegistroDuplicado") {
        None => None,
        Some(d) => Some(RegistroDuplicado {
            id_peticion: requerido(d, "IdPeticionRegistroDuplicado", "RegistroDuplicado")?
                .text()
                .to_owned(),
            estado: EstadoRegistroDuplicado::parse(
                requerido(d, "EstadoRegistroDuplicado", "RegistroDuplicado")?.text(),
            )?,
            codigo_error: numero(d, "CodigoErrorRegistro")?,
            descripcion_error: opcional(d, "DescripcionErrorRegistro"),
        }),
    };
    Ok(RespuestaLinea {
        id_factura: IdFacturaRespuesta {
            id_emisor_factura: texto("IDEmisorFactura")?,
            num_serie_factura: texto("NumSerieFactura")?,
            fecha_expedicion_factura: texto("FechaExpedicionFactura")?,
        },
        tipo_operacion: TipoOperacion::parse(
            requerido(operacion, "TipoOperacion", "Operacion")?.text(),
        )?,
        subsanacion: opcional(operacion, "Subsanacion"),
        rechazo_previo: opcional(operacion, "RechazoPrevio"),
        sin_registro_previo: opcional(operacion, "SinRegistroPrevio"),
        ref_externa: opcional(l, "RefExterna"),
        estado_registro: EstadoRegistro::parse(requerido(l, "EstadoRegistro", P)?.text())?,
        codigo_error_registro: numero(l, "CodigoErrorRegistro")?,
        descripcion_error_registro: opcional(l, "DescripcionErrorRegistro"),
        registro_duplicado,
    })
}

fn leer_fault(f: &Element) -> SoapFault {
    let code = f.child_text("faultcode").unwrap_or_default();
    let local = code.rsplit(':').next().unwrap_or(code);
    let tipo = match local {
        "Client" => TipoFault::Cliente,
        "Server" => TipoFault::Servidor,
        _ => TipoFault::Otro(code.to_owned()),
    };
    let faultstring = f.child_text("faultstring").unwrap_or_default().to_owned();
    SoapFault {
        tipo,
        codigo_error: codigo_en_faultstring(&faultstring),
        faultstring,
    }
}

/// Extracts `NNNN` from `Codigo[NNNN]`.
fn codigo_en_faultstring(s: &str) -> Option<u32> {
    let start = s.find("Codigo[")? + "Codigo[".len();
    let len = s[start..].find(']')?;
    s[start..start + len].trim().parse().ok()
}

#[cfg(test)]
#[path = "respuesta_tests.rs"]
mod tests;
