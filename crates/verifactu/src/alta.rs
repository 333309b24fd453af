//! `RegistroAlta`: the registration record of an issued invoice.

use crate::amount::Importe;
use crate::chain::{Encadenamiento, RegistroPrevio};
use crate::codes::{TipoFactura, TipoRectificativa};
use crate::desglose::DetalleDesglose;
use crate::error::ValidationError;
use crate::fecha::FechaHoraHuso;
use crate::huella::{Huella, HuellaAltaInput, cadena_alta, huella_de_cadena};
use crate::ids::{IdFactura, PersonaFisicaJuridica};
use crate::sistema::SistemaInformatico;
use crate::validacion::validar_alta;

/// Which kind of registration this is (`Subsanacion` and `RechazoPrevio`,
/// sheet "A) Cuadro Operativa Alta" of the record design).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OperativaAlta {
    /// Normal first registration: neither field is written.
    #[default]
    Alta,
    /// Correction of a record already generated and sent:
    /// `Subsanacion=S`.
    Subsanacion,
    /// Registration again after the AEAT rejected the first one, or
    /// correction of a record that never reached the AEAT:
    /// `Subsanacion=S`, `RechazoPrevio=X`.
    AltaTrasRechazo,
    /// Correction again after the AEAT rejected a correction:
    /// `Subsanacion=S`, `RechazoPrevio=S`.
    SubsanacionTrasRechazo,
}

impl OperativaAlta {
    /// Value of `Subsanacion`, when written.
    pub const fn subsanacion(self) -> Option<&'static str> {
        match self {
            Self::Alta => None,
            _ => Some("S"),
        }
    }

    /// Value of `RechazoPrevio`, when written.
    pub const fn rechazo_previo(self) -> Option<&'static str> {
        match self {
            Self::AltaTrasRechazo => Some("X"),
            Self::SubsanacionTrasRechazo => Some("S"),
            _ => None,
        }
    }
}

/// Amounts of the replaced invoice in a corrective by substitution
/// (`ImporteRectificacion`, required when `TipoRectificativa` is `S`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImporteRectificacion {
    /// `BaseRectificada`.
    pub base_rectificada: Importe,
    /// `CuotaRectificada`.
    pub cuota_rectificada: Importe,
    /// `CuotaRecargoRectificado`.
    pub cuota_recargo_rectificado: Option<Importe>,
}

/// The corrective part of an R1–R5 invoice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rectificacion {
    /// `TipoRectificativa`: by substitution (`S`) or by differences (`I`).
    pub tipo: TipoRectificativa,
    /// `FacturasRectificadas/IDFacturaRectificada` (optional for the AEAT,
    /// at most 1000).
    pub facturas_rectificadas: Vec<IdFactura>,
    /// `ImporteRectificacion`: required with `S`, forbidden with `I`.
    pub importe_rectificacion: Option<ImporteRectificacion>,
}

/// Who materially issued the invoice (`EmitidaPorTerceroODestinatario`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EmitidaPor {
    /// `T`, with the `Tercero` block.
    Tercero(PersonaFisicaJuridica),
    /// `D`: the recipient issued it; `Destinatarios` is then required.
    Destinatario,
}

/// Everything the invoicing service decides about an invoice registration.
/// The chain link, the generation time and the huella are added by
/// [`RegistroAlta::new`] (or by [`crate::chain::Cadena`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatosAlta {
    /// `IDFactura`.
    pub id_factura: IdFactura,
    /// `RefExterna`: free internal reference, up to 60 characters.
    pub ref_externa: Option<String>,
    /// `NombreRazonEmisor`, up to 120 characters.
    pub nombre_razon_emisor: String,
    /// `Subsanacion` / `RechazoPrevio`.
    pub operativa: OperativaAlta,
    /// `TipoFactura`.
    pub tipo_factura: TipoFactura,
    /// Required exactly for R1–R5.
    pub rectificacion: Option<Rectificacion>,
    /// `FacturasSustituidas` (only for F3), at most 1000.
    pub facturas_sustituidas: Vec<IdFactura>,
    /// `FechaOperacion`, when different from the issue date.
    pub fecha_operacion: Option<crate::fecha::Fecha>,
    /// `DescripcionOperacion`, up to 500 characters.
    pub descripcion_operacion: String,
    /// `FacturaSimplificadaArt7273` = `S` (only F1, F3, R1–R4).
    pub factura_simplificada_art_7273: bool,
    /// `FacturaSinIdentifDestinatarioArt61d` = `S` (only F2, R5).
    pub factura_sin_identif_destinatario_art_61d: bool,
    /// `EmitidaPorTerceroODestinatario` and `Tercero`.
    pub emitida_por: Option<EmitidaPor>,
    /// `Destinatarios/IDDestinatario`: required for F1, F3, R1–R4 and
    /// forbidden for F2 and R5; at most 1000.
    pub destinatarios: Vec<PersonaFisicaJuridica>,
    /// `Cupon` = `S` (only R1 and R5).
    pub cupon: bool,
    /// `Desglose/DetalleDesglose`, 1 to 12 lines.
    pub desglose: Vec<DetalleDesglose>,
    /// `CuotaTotal`: sum of `CuotaRepercutida` and `CuotaRecargoEquivalencia`.
    pub cuota_total: Importe,
    /// `ImporteTotal`: total of the invoice.
    pub importe_total: Importe,
    /// `SistemaInformatico`.
    pub sistema_informatico: SistemaInformatico,
    /// `NumRegistroAcuerdoFacturacion`, up to 15 characters.
    pub num_registro_acuerdo_facturacion: Option<String>,
    /// `IdAcuerdoSistemaInformatico`, up to 16 characters.
    pub id_acuerdo_sistema_informatico: Option<String>,
}

impl DatosAlta {
    /// A normal registration with the required fields; the optional ones
    /// start empty and can be set on the returned value.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id_factura: IdFactura,
        nombre_razon_emisor: &str,
        tipo_factura: TipoFactura,
        descripcion_operacion: &str,
        destinatarios: Vec<PersonaFisicaJuridica>,
        desglose: Vec<DetalleDesglose>,
        cuota_total: Importe,
        importe_total: Importe,
        sistema_informatico: SistemaInformatico,
    ) -> Self {
        Self {
            id_factura,
            ref_externa: None,
            nombre_razon_emisor: nombre_razon_emisor.to_owned(),
            operativa: OperativaAlta::Alta,
            tipo_factura,
            rectificacion: None,
            facturas_sustituidas: Vec::new(),
            fecha_operacion: None,
            descripcion_operacion: descripcion_operacion.to_owned(),
            factura_simplificada_art_7273: false,
            factura_sin_identif_destinatario_art_61d: false,
            emitida_por: None,
            destinatarios,
            cupon: false,
            desglose,
            cuota_total,
            importe_total,
            sistema_informatico,
            num_registro_acuerdo_facturacion: None,
            id_acuerdo_sistema_informatico: None,
        }
    }

    /// `Macrodato` = `S`: required exactly when |`ImporteTotal`| ≥ 100 000 000.00
    /// (AEAT errors 1138/1139), so it is derived rather than set.
    pub fn macrodato(&self) -> bool {
        self.importe_total.cents().unsigned_abs() >= 10_000_000_000
    }
}

/// A validated, chained and hashed registration record.
///
/// Fields are private so the huella always matches the content; build it
/// with [`RegistroAlta::new`] or [`crate::chain::Cadena::alta`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistroAlta {
    datos: DatosAlta,
    encadenamiento: Encadenamiento,
    fecha_hora_huso_gen_registro: FechaHoraHuso,
    huella: Huella,
}

impl RegistroAlta {
    /// Validates `datos` against the AEAT rules, links the record to the
    /// previous one and computes its huella.
    pub fn new(
        datos: DatosAlta,
        encadenamiento: Encadenamiento,
        fecha_hora_huso_gen_registro: FechaHoraHuso,
    ) -> Result<Self, ValidationError> {
        validar_alta(&datos)?;
        let cadena = cadena_para(&datos, &encadenamiento, &fecha_hora_huso_gen_registro);
        let huella = huella_de_cadena(&cadena);
        if encadenamiento.huella_anterior() == Some(&huella) {
            return Err(ValidationError::rule(
                1278,
                "the huella equals the previous record's huella",
            ));
        }
        Ok(Self {
            datos,
            encadenamiento,
            fecha_hora_huso_gen_registro,
            huella,
        })
    }

    /// The invoice data.
    pub fn datos(&self) -> &DatosAlta {
        &self.datos
    }

    /// `IDFactura`.
    pub fn id_factura(&self) -> &IdFactura {
        &self.datos.id_factura
    }

    /// `Encadenamiento`.
    pub fn encadenamiento(&self) -> &Encadenamiento {
        &self.encadenamiento
    }

    /// `FechaHoraHusoGenRegistro`.
    pub fn fecha_hora_huso_gen_registro(&self) -> &FechaHoraHuso {
        &self.fecha_hora_huso_gen_registro
    }

    /// `Huella` of this record.
    pub fn huella(&self) -> &Huella {
        &self.huella
    }

    /// The exact string that was hashed (useful for audits and support).
    pub fn cadena_huella(&self) -> String {
        cadena_para(
            &self.datos,
            &self.encadenamiento,
            &self.fecha_hora_huso_gen_registro,
        )
    }

    /// This record as the "previous record" of the next one in the chain.
    pub fn como_registro_previo(&self) -> RegistroPrevio {
        RegistroPrevio {
            id_emisor_factura: self.datos.id_factura.emisor.clone(),
            num_serie_factura: self.datos.id_factura.num_serie.clone(),
            fecha_expedicion_factura: self.datos.id_factura.fecha_expedicion,
            huella: self.huella.clone(),
        }
    }
}

fn cadena_para(datos: &DatosAlta, enc: &Encadenamiento, generado: &FechaHoraHuso) -> String {
    let fecha = datos.id_factura.fecha_expedicion.to_string();
    let cuota = datos.cuota_total.to_string();
    let importe = datos.importe_total.to_string();
    let generado = generado.to_string();
    cadena_alta(&HuellaAltaInput {
        id_emisor_factura: datos.id_factura.emisor.as_str(),
        num_serie_factura: datos.id_factura.num_serie.as_str(),
        fecha_expedicion_factura: &fecha,
        tipo_factura: datos.tipo_factura.code(),
        cuota_total: &cuota,
        importe_total: &importe,
        huella_anterior: enc.huella_anterior().map_or("", Huella::as_str),
        fecha_hora_huso_gen_registro: &generado,
    })
}
