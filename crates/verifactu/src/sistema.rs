//! `SistemaInformatico`: the invoicing software and its installation.

use crate::codes::IdType;
use crate::error::{ValidationError, texto};
use crate::ids::{CodigoPais, Identificacion, PersonaFisicaJuridica};

/// The invoicing system that generated a record (`SistemaInformaticoType`).
///
/// The producer is the person or entity that makes the software (for this
/// service, whoever publishes it), not the invoice issuer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SistemaInformatico {
    /// Producer: `NombreRazon` plus `NIF` or `IDOtro`.
    pub productor: PersonaFisicaJuridica,
    /// `NombreSistemaInformatico`, 1–30 characters.
    pub nombre_sistema_informatico: String,
    /// `IdSistemaInformatico`: exactly two characters, each an upper-case
    /// letter other than Ñ or a digit (validation 3.1.5).
    pub id_sistema_informatico: String,
    /// `Version`, up to 50 characters.
    pub version: String,
    /// `NumeroInstalacion`, up to 100 characters; distinguishes this
    /// installation from any other used by the same issuer.
    pub numero_instalacion: String,
    /// `TipoUsoPosibleSoloVerifactu`: `true` if the software can only work as
    /// VERI*FACTU.
    pub tipo_uso_posible_solo_verifactu: bool,
    /// `TipoUsoPosibleMultiOT`: `true` if it can invoice for several taxpayers.
    pub tipo_uso_posible_multi_ot: bool,
    /// `IndicadorMultiplesOT`: `true` if, when the record is generated, it
    /// holds more than one taxpayer. Must be derived by the software, never
    /// typed by a user.
    pub indicador_multiples_ot: bool,
}

impl SistemaInformatico {
    /// Checks the AEAT rules for this block (validation 3.1.5, errors
    /// 1177, 1220, 1221 and 1232).
    pub fn validar(&self) -> Result<(), ValidationError> {
        self.productor.validar()?;
        if let Identificacion::IdOtro(o) = &self.productor.identificacion {
            if o.id_type == IdType::NoCensado {
                return Err(ValidationError::rule(
                    1221,
                    "the software producer cannot be identified with IDType 07 (not registered)",
                ));
            }
            if o.codigo_pais == Some(CodigoPais::ES) && o.id_type != IdType::Pasaporte {
                return Err(ValidationError::rule(
                    1232,
                    "a producer identified by IDOtro with CodigoPais ES must use IDType 03 (passport)",
                ));
            }
        }
        texto(
            "NombreSistemaInformatico",
            &self.nombre_sistema_informatico,
            30,
        )?;
        let id = self.id_sistema_informatico.as_str();
        if id.len() != 2
            || !id
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Err(ValidationError::rule(
                1177,
                format!(
                    "IdSistemaInformatico `{id}` must be two characters, each an upper-case letter or a digit"
                ),
            ));
        }
        texto("Version", &self.version, 50)?;
        texto("NumeroInstalacion", &self.numero_instalacion, 100)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::IdOtro;
    use crate::testutil::sistema;

    #[test]
    fn valid_system_passes() {
        sistema().validar().unwrap();
    }

    #[test]
    fn id_sistema_must_be_two_upper_alphanumerics() {
        for bad in ["F", "fa", "FAC", "Ñ1", "F-"] {
            let mut s = sistema();
            s.id_sistema_informatico = bad.into();
            assert!(s.validar().is_err(), "{bad}");
        }
        let mut s = sistema();
        s.id_sistema_informatico = "77".into();
        s.validar().unwrap();
    }

    #[test]
    fn producer_id_otro_rules() {
        let mut s = sistema();
        let es = CodigoPais::ES;
        s.productor = PersonaFisicaJuridica::con_id_otro(
            "X",
            IdOtro::new(Some(es), IdType::NoCensado, "1").unwrap(),
        )
        .unwrap();
        assert!(s.validar().unwrap_err().to_string().contains("1221"));
        s.productor = PersonaFisicaJuridica::con_id_otro(
            "X",
            IdOtro::new(Some(es), IdType::CertificadoResidencia, "1").unwrap(),
        )
        .unwrap();
        assert!(s.validar().unwrap_err().to_string().contains("1232"));
    }

    #[test]
    fn names_are_required_and_bounded() {
        let mut s = sistema();
        s.nombre_sistema_informatico = "x".repeat(31);
        assert!(s.validar().is_err());
        let mut s = sistema();
        s.numero_instalacion = " ".into();
        assert!(s.validar().is_err());
    }
}
