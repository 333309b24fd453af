//! VERI*FACTU for an invoicing service: the pure part of Spain's Real
//! Decreto 1007/2023 and Orden HAC/1177/2024 — no database, no network.
//!
//! * Records: [`DatosAlta`] → [`RegistroAlta`] (invoice registration) and
//!   [`DatosAnulacion`] → [`RegistroAnulacion`] (cancellation), validated
//!   against the AEAT rules that do not need its census or clock.
//! * [`huella`]: the SHA-256 chain hash exactly as the AEAT hash document.
//! * [`chain`]: `Encadenamiento` from the previous record's head; the caller
//!   stores the new head in the same transaction as the record.
//! * [`RegFactuSistemaFacturacion`]: the submission XML (`SuministroLR.xsd`),
//!   bare or in a SOAP envelope.
//! * [`respuesta`]: the AEAT answer, including SOAP faults, and [`errores`]:
//!   plain explanations of its error codes.
//! * [`qr`]: the verification URL and an SVG of the tax QR code.
//!
//! Amounts are integer cents ([`Importe`]); rates are [`Porcentaje`].
//! Timestamps are [`FechaHoraHuso`] in Spanish time with the right CET/CEST
//! offset.
//!
//! Out of scope: sending (HTTPS with a client certificate), the XAdES
//! signature (not required for VERI*FACTU submissions), event records
//! (`RegistroEvento`, only for non-VERI*FACTU systems), the query service,
//! and the AEAT checks that need its census or its clock.

#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

mod alta;
mod amount;
mod anulacion;
pub mod chain;
mod codes;
mod desglose;
mod envio;
mod error;
pub mod errores;
mod fecha;
pub mod huella;
mod ids;
pub mod peticion;
pub mod qr;
mod reglas_desglose;
pub mod respuesta;
mod sistema;
mod validacion;
mod xml;
mod xml_registro;
mod xml_tree;

#[cfg(test)]
mod testutil;
#[cfg(test)]
mod xsd_tests;

pub use alta::{
    DatosAlta, EmitidaPor, ImporteRectificacion, OperativaAlta, Rectificacion, RegistroAlta,
};
pub use amount::{Importe, Porcentaje};
pub use anulacion::{DatosAnulacion, Generador, OperativaAnulacion, RegistroAnulacion};
pub use chain::{Cadena, ChainError, Encadenamiento, RegistroFactura, RegistroPrevio};
pub use codes::{
    CalificacionOperacion, ClaveRegimen, GeneradoPor, IdType, Impuesto, OperacionExenta,
    TipoFactura, TipoRectificativa,
};
pub use desglose::{DetalleDesglose, Operacion, RecargoEquivalencia};
pub use envio::{Cabecera, RegFactuSistemaFacturacion, RemisionRequerimiento, RemisionVoluntaria};
pub use error::ValidationError;
pub use fecha::{Fecha, FechaHoraHuso, HusoHorario};
pub use huella::Huella;
pub use ids::{
    CodigoPais, IdFactura, IdOtro, Identificacion, Nif, NumSerie, PersonaFisicaJuridica, PersonaNif,
};
pub use sistema::SistemaInformatico;
/// The AEAT XSDs bundled with this crate (verbatim copies), for validating
/// generated XML in tests with `xmllint`.
pub const XSD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/xsd");

pub use xml::{
    NS_RESPUESTA_SUMINISTRO, NS_SOAP_ENVELOPE, NS_SUMINISTRO_INFORMACION, NS_SUMINISTRO_LR,
};
