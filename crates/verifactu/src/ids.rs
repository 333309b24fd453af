//! Identifiers: NIF, invoice number, invoice id, foreign ids (`IDOtro`) and
//! the persons that appear in a record.

use core::fmt;
use core::str::FromStr;

use crate::codes::IdType;
use crate::error::{ValidationError, texto};
use crate::fecha::Fecha;

/// A Spanish tax id (`FormatoNIF(9)`): exactly nine ASCII letters or digits,
/// stored in upper case. The control character is not checked here; the AEAT
/// checks NIFs against its census.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nif(String);

impl Nif {
    /// Validates and normalises (trim, upper case) a NIF.
    pub fn new(value: &str) -> Result<Self, ValidationError> {
        let t = value.trim().to_ascii_uppercase();
        if t.len() != 9 || !t.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ValidationError::format(
                "NIF",
                &t,
                "a NIF has exactly 9 letters or digits",
            ));
        }
        Ok(Self(t))
    }

    /// The NIF text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Nif {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Nif {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// `NumSerieFactura`: series plus number, 1–60 characters, trimmed.
///
/// The AEAT validation document (3.1.3, point 1) accepts only printable ASCII
/// (32–126) and forbids `"`, `'`, `<`, `>` and `=`; the QR document also
/// limits `numserie` to ASCII 32–126.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NumSerie(String);

impl NumSerie {
    /// Validates an invoice number.
    pub fn new(value: &str) -> Result<Self, ValidationError> {
        let t = texto("NumSerieFactura", value, 60)?;
        if let Some(ch) = t
            .chars()
            .find(|c| !(' '..='~').contains(c) || matches!(c, '"' | '\'' | '<' | '>' | '='))
        {
            return Err(ValidationError::ForbiddenChar {
                field: "NumSerieFactura",
                ch,
                code: ch as u32,
            });
        }
        Ok(Self(t))
    }

    /// The invoice number text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NumSerie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for NumSerie {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// Identifies an invoice: issuer NIF, number and issue date
/// (`IDEmisorFactura`, `NumSerieFactura`, `FechaExpedicionFactura`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdFactura {
    /// NIF of the issuer (`IDEmisorFactura`).
    pub emisor: Nif,
    /// Series and number (`NumSerieFactura`).
    pub num_serie: NumSerie,
    /// Issue date (`FechaExpedicionFactura`).
    pub fecha_expedicion: Fecha,
}

impl IdFactura {
    /// Parses the three parts from text.
    pub fn parse(
        emisor: &str,
        num_serie: &str,
        fecha_expedicion: &str,
    ) -> Result<Self, ValidationError> {
        Ok(Self {
            emisor: Nif::new(emisor)?,
            num_serie: NumSerie::new(num_serie)?,
            fecha_expedicion: fecha_expedicion.parse()?,
        })
    }
}

/// ISO 3166-1 alpha-2 codes accepted by `CountryType2` in `SuministroInformacion.xsd`.
const COUNTRY_CODES: &str = "AF AL DE AD AO AI AQ AG SA DZ AR AM AW AU AT AZ BS BH BD BB BE BZ BJ BM \
BY BO BA BW BV BR BN BG BF BI BT CV KY KH CM CA CF CC CO KM CG CD CK KP KR CI CR HR CU TD CZ CL CN CY \
CW DK DM DO EC EG AE ER SK SI ES US EE ET FO PH FI FJ FR GA GM GE GS GH GI GD GR GL GU GT GG GN GQ GW \
GY HT HM HN HK HU IN ID IR IQ IE IM IS IL IT JM JP JE JO KZ KE KG KI KW LA LS LV LB LR LY LI LT LU XG \
MO MK MG MY MW MV ML MT FK MP MA MH MU MR YT UM MX FM MD MC MN ME MS MZ MM NA NR CX NP NI NE NG NU NF \
NO NC NZ IO OM NL BQ PK PW PA PG PY PE PN PF PL PT PR QA GB RW RO RU SB SV WS AS KN SM SX PM VC SH LC \
ST SN RS SC SL SG SY SO LK SZ ZA SD SS SE CH SR TH TW TZ TJ PS TF TL TG TK TO TT TN TC TM TR TV UA UG \
UY UZ VU VA VE VN VG VI WF YE DJ ZM ZW QU XB XU XN";

/// A country code from the XSD's `CountryType2` list (e.g. `FR`, `US`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodigoPais([u8; 2]);

impl CodigoPais {
    /// Spain.
    pub const ES: CodigoPais = CodigoPais(*b"ES");

    /// Validates a code against the XSD list (upper case is applied first).
    pub fn new(value: &str) -> Result<Self, ValidationError> {
        let t = value.trim().to_ascii_uppercase();
        match t.as_bytes() {
            [a, b] if COUNTRY_CODES.split(' ').any(|c| c == t) => Ok(Self([*a, *b])),
            _ => Err(ValidationError::format(
                "CodigoPais",
                &t,
                "not an ISO 3166-1 code accepted by the AEAT",
            )),
        }
    }

    /// The two-letter code.
    pub fn as_str(&self) -> &str {
        // Only built from validated ASCII letters.
        core::str::from_utf8(&self.0).unwrap_or("??")
    }
}

impl fmt::Display for CodigoPais {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A non-Spanish identification (`IDOtro`): country, kind of document and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdOtro {
    /// `CodigoPais`; optional only for `IDType` 02 (EU VAT number).
    pub codigo_pais: Option<CodigoPais>,
    /// `IDType`.
    pub id_type: IdType,
    /// `ID`, up to 20 characters. For a NIF-IVA include the country prefix
    /// (e.g. `FR12345678901`).
    pub id: String,
}

impl IdOtro {
    /// Validates the field shapes and the rules the AEAT applies to every
    /// `IDOtro` (errors 1111 and 1126).
    pub fn new(
        codigo_pais: Option<CodigoPais>,
        id_type: IdType,
        id: &str,
    ) -> Result<Self, ValidationError> {
        let id = texto("ID", id, 20)?;
        if id_type != IdType::NifIva && codigo_pais.is_none() {
            return Err(ValidationError::rule(
                1111,
                "CodigoPais is required when IDType is not 02 (NIF-IVA)",
            ));
        }
        if id_type == IdType::NoCensado && codigo_pais != Some(CodigoPais::ES) {
            return Err(ValidationError::rule(
                1126,
                "IDType 07 (not registered) requires CodigoPais ES",
            ));
        }
        Ok(Self {
            codigo_pais,
            id_type,
            id,
        })
    }

    /// A foreign person's EU VAT number (`IDType` 02).
    pub fn nif_iva(codigo_pais: CodigoPais, vat_number: &str) -> Result<Self, ValidationError> {
        Self::new(Some(codigo_pais), IdType::NifIva, vat_number)
    }
}

/// Either a Spanish NIF or an `IDOtro`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identificacion {
    /// Spanish tax id.
    Nif(Nif),
    /// Foreign or non-NIF identification.
    IdOtro(IdOtro),
}

/// A named person or entity (`PersonaFisicaJuridicaType`): recipient, third
/// party, cancellation generator or software producer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PersonaFisicaJuridica {
    /// `NombreRazon`, up to 120 characters.
    pub nombre_razon: String,
    /// `NIF` or `IDOtro`.
    pub identificacion: Identificacion,
}

impl PersonaFisicaJuridica {
    /// A person identified by a Spanish NIF.
    pub fn con_nif(nombre_razon: &str, nif: Nif) -> Result<Self, ValidationError> {
        Ok(Self {
            nombre_razon: texto("NombreRazon", nombre_razon, 120)?,
            identificacion: Identificacion::Nif(nif),
        })
    }

    /// A person identified by an `IDOtro`.
    pub fn con_id_otro(nombre_razon: &str, id_otro: IdOtro) -> Result<Self, ValidationError> {
        Ok(Self {
            nombre_razon: texto("NombreRazon", nombre_razon, 120)?,
            identificacion: Identificacion::IdOtro(id_otro),
        })
    }

    /// The `IDOtro`, when the person is not identified by NIF.
    pub fn id_otro(&self) -> Option<&IdOtro> {
        match &self.identificacion {
            Identificacion::IdOtro(o) => Some(o),
            Identificacion::Nif(_) => None,
        }
    }

    /// Re-checks the name and any `IDOtro` (fields are public and may have
    /// been built or edited without the constructors).
    pub(crate) fn validar(&self) -> Result<(), ValidationError> {
        texto("NombreRazon", &self.nombre_razon, 120)?;
        if let Identificacion::IdOtro(o) = &self.identificacion {
            IdOtro::new(o.codigo_pais, o.id_type, &o.id)?;
        }
        Ok(())
    }
}

/// A person identified only by NIF (`PersonaFisicaJuridicaESType`), as used
/// for `ObligadoEmision` and `Representante` in the header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PersonaNif {
    /// `NombreRazon`, up to 120 characters.
    pub nombre_razon: String,
    /// `NIF`.
    pub nif: Nif,
}

impl PersonaNif {
    /// Validates the name.
    pub fn new(nombre_razon: &str, nif: Nif) -> Result<Self, ValidationError> {
        Ok(Self {
            nombre_razon: texto("NombreRazon", nombre_razon, 120)?,
            nif,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nif_is_nine_alphanumerics() {
        assert_eq!(Nif::new(" b12345674 ").unwrap().as_str(), "B12345674");
        assert!(Nif::new("891K").is_err());
        assert!(Nif::new("B1234567-").is_err());
        assert!(Nif::new("B123456789").is_err());
    }

    #[test]
    fn num_serie_rules() {
        assert_eq!(
            NumSerie::new("  12345678 / G33  ").unwrap().as_str(),
            "12345678 / G33"
        );
        assert!(NumSerie::new("12345678&G33").is_ok());
        for bad in ["A=1", "A<1", "A>1", "A\"1", "A'1", "Añ1", ""] {
            assert!(NumSerie::new(bad).is_err(), "{bad}");
        }
        assert!(NumSerie::new(&"9".repeat(60)).is_ok());
        assert!(NumSerie::new(&"9".repeat(61)).is_err());
    }

    #[test]
    fn country_codes_follow_the_xsd() {
        assert_eq!(CodigoPais::new("fr").unwrap().as_str(), "FR");
        assert!(CodigoPais::new("GR").is_ok());
        assert!(CodigoPais::new("EL").is_err());
        assert!(CodigoPais::new("XX").is_err());
        assert!(CodigoPais::new("FRA").is_err());
        assert_eq!(COUNTRY_CODES.split(' ').count(), 245);
    }

    #[test]
    fn id_otro_rules() {
        let fr = CodigoPais::new("FR").unwrap();
        assert!(IdOtro::nif_iva(fr, "FR12345678901").is_ok());
        assert!(IdOtro::new(None, IdType::NifIva, "FR12345678901").is_ok());
        let e = IdOtro::new(None, IdType::Pasaporte, "X1").unwrap_err();
        assert!(e.to_string().contains("1111"));
        let e = IdOtro::new(Some(fr), IdType::NoCensado, "X1").unwrap_err();
        assert!(e.to_string().contains("1126"));
        assert!(IdOtro::new(Some(fr), IdType::Pasaporte, &"1".repeat(21)).is_err());
    }

    #[test]
    fn persons_built_by_hand_are_rechecked() {
        let p = PersonaFisicaJuridica {
            nombre_razon: "X".into(),
            identificacion: Identificacion::IdOtro(IdOtro {
                codigo_pais: None,
                id_type: IdType::Pasaporte,
                id: "X1".into(),
            }),
        };
        assert!(p.validar().unwrap_err().to_string().contains("1111"));
    }
}
