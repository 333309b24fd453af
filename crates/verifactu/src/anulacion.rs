//! `RegistroAnulacion`: the cancellation record of an invoice.

use crate::chain::{Encadenamiento, RegistroPrevio};
use crate::codes::{GeneradoPor, IdType};
use crate::error::{ValidationError, texto_opcional};
use crate::fecha::FechaHoraHuso;
use crate::huella::{Huella, HuellaAnulacionInput, cadena_anulacion, huella_de_cadena};
use crate::ids::{CodigoPais, IdFactura, Identificacion, PersonaFisicaJuridica};
use crate::sistema::SistemaInformatico;

/// Which kind of cancellation this is (`SinRegistroPrevio` and
/// `RechazoPrevio`, sheet "B) Cuadro Operativa Anulación").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OperativaAnulacion {
    /// Normal cancellation of a record that exists: neither field is written.
    #[default]
    Anulacion,
    /// Again after the AEAT rejected the previous cancellation:
    /// `RechazoPrevio=S`.
    AnulacionTrasRechazo,
    /// Cancellation of an invoice whose registration never reached the AEAT:
    /// `SinRegistroPrevio=S`.
    SinRegistroPrevio,
    /// Same, again after a rejection: `SinRegistroPrevio=S`, `RechazoPrevio=S`.
    SinRegistroPrevioTrasRechazo,
}

impl OperativaAnulacion {
    /// Value of `SinRegistroPrevio`, when written.
    pub const fn sin_registro_previo(self) -> Option<&'static str> {
        match self {
            Self::SinRegistroPrevio | Self::SinRegistroPrevioTrasRechazo => Some("S"),
            _ => None,
        }
    }

    /// Value of `RechazoPrevio`, when written.
    pub const fn rechazo_previo(self) -> Option<&'static str> {
        match self {
            Self::AnulacionTrasRechazo | Self::SinRegistroPrevioTrasRechazo => Some("S"),
            _ => None,
        }
    }
}

/// Who generated the cancellation when it is not the issuer itself
/// (`GeneradoPor` plus `Generador`, always together, AEAT error 1224).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Generador {
    /// `GeneradoPor`.
    pub generado_por: GeneradoPor,
    /// `Generador`.
    pub persona: PersonaFisicaJuridica,
}

/// Everything the invoicing service decides about a cancellation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatosAnulacion {
    /// The cancelled invoice (`IDEmisorFacturaAnulada`,
    /// `NumSerieFacturaAnulada`, `FechaExpedicionFacturaAnulada`).
    pub id_factura: IdFactura,
    /// `RefExterna`, up to 60 characters.
    pub ref_externa: Option<String>,
    /// `SinRegistroPrevio` / `RechazoPrevio`.
    pub operativa: OperativaAnulacion,
    /// `GeneradoPor` / `Generador`.
    pub generador: Option<Generador>,
    /// `SistemaInformatico`.
    pub sistema_informatico: SistemaInformatico,
}

impl DatosAnulacion {
    /// A normal cancellation of `id_factura`.
    pub fn new(id_factura: IdFactura, sistema_informatico: SistemaInformatico) -> Self {
        Self {
            id_factura,
            ref_externa: None,
            operativa: OperativaAnulacion::Anulacion,
            generador: None,
            sistema_informatico,
        }
    }

    /// Checks the rules of section 3.1.4 of the AEAT validation document.
    fn validar(&self) -> Result<(), ValidationError> {
        texto_opcional("RefExterna", self.ref_externa.as_deref(), 60)?;
        self.sistema_informatico.validar()?;
        let Some(g) = &self.generador else {
            return Ok(());
        };
        g.persona.validar()?;
        let err = |code, msg: &str| Err(ValidationError::rule(code, msg));
        match (&g.persona.identificacion, g.generado_por) {
            (Identificacion::Nif(n), _) if *n == self.id_factura.emisor => {
                err(1259, "the Generador's NIF must differ from the issuer's")
            }
            (Identificacion::IdOtro(_), GeneradoPor::Expedidor) => err(
                1227,
                "with GeneradoPor E, the Generador must be identified by NIF",
            ),
            (Identificacion::IdOtro(o), GeneradoPor::Tercero) if o.id_type == IdType::NoCensado => {
                err(
                    1229,
                    "with GeneradoPor T, the Generador cannot use IDType 07",
                )
            }
            (Identificacion::IdOtro(o), GeneradoPor::Tercero)
                if o.codigo_pais == Some(CodigoPais::ES) && o.id_type != IdType::Pasaporte =>
            {
                err(
                    1232,
                    "with GeneradoPor T and CodigoPais ES, IDType must be 03",
                )
            }
            (Identificacion::IdOtro(o), GeneradoPor::Destinatario)
                if o.codigo_pais == Some(CodigoPais::ES)
                    && !matches!(o.id_type, IdType::Pasaporte | IdType::NoCensado) =>
            {
                err(
                    1230,
                    "with GeneradoPor D and CodigoPais ES, IDType must be 03 or 07",
                )
            }
            _ => Ok(()),
        }
    }
}

/// A validated, chained and hashed cancellation record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistroAnulacion {
    datos: DatosAnulacion,
    encadenamiento: Encadenamiento,
    fecha_hora_huso_gen_registro: FechaHoraHuso,
    huella: Huella,
}

impl RegistroAnulacion {
    /// Validates `datos`, links the record to the previous one and computes
    /// its huella.
    pub fn new(
        datos: DatosAnulacion,
        encadenamiento: Encadenamiento,
        fecha_hora_huso_gen_registro: FechaHoraHuso,
    ) -> Result<Self, ValidationError> {
        datos.validar()?;
        let huella = huella_de_cadena(&cadena_para(
            &datos,
            &encadenamiento,
            &fecha_hora_huso_gen_registro,
        ));
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

    /// The cancellation data.
    pub fn datos(&self) -> &DatosAnulacion {
        &self.datos
    }

    /// The cancelled invoice.
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

    /// The exact string that was hashed.
    pub fn cadena_huella(&self) -> String {
        cadena_para(
            &self.datos,
            &self.encadenamiento,
            &self.fecha_hora_huso_gen_registro,
        )
    }

    /// This record as the "previous record" of the next one: the chain
    /// refers to the cancelled invoice's identifier and this record's huella.
    pub fn como_registro_previo(&self) -> RegistroPrevio {
        RegistroPrevio {
            id_emisor_factura: self.datos.id_factura.emisor.clone(),
            num_serie_factura: self.datos.id_factura.num_serie.clone(),
            fecha_expedicion_factura: self.datos.id_factura.fecha_expedicion,
            huella: self.huella.clone(),
        }
    }
}

fn cadena_para(datos: &DatosAnulacion, enc: &Encadenamiento, generado: &FechaHoraHuso) -> String {
    let fecha = datos.id_factura.fecha_expedicion.to_string();
    let generado = generado.to_string();
    cadena_anulacion(&HuellaAnulacionInput {
        id_emisor_factura_anulada: datos.id_factura.emisor.as_str(),
        num_serie_factura_anulada: datos.id_factura.num_serie.as_str(),
        fecha_expedicion_factura_anulada: &fecha,
        huella_anterior: enc.huella_anterior().map_or("", Huella::as_str),
        fecha_hora_huso_gen_registro: &generado,
    })
}
