//! Closed lists of codes from the AEAT record design (`DsRegistroVeriFactu`,
//! sheet "6) Listas") and `SuministroInformacion.xsd`.

use crate::error::ValidationError;

macro_rules! aeat_code_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $field:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value of the list, in the AEAT's order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The code written in the AEAT XML.
            pub const fn code(self) -> &'static str {
                match self {
                    $( Self::$variant => $code ),+
                }
            }

            /// Parses the code written in the AEAT XML (surrounding spaces ignored).
            pub fn from_code(code: &str) -> Result<Self, ValidationError> {
                match code.trim() {
                    $( $code => Ok(Self::$variant), )+
                    other => Err(ValidationError::format(
                        $field,
                        other,
                        "not a value of the AEAT list for this field",
                    )),
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.code())
            }
        }

        impl core::str::FromStr for $name {
            type Err = ValidationError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_code(s)
            }
        }
    };
}

aeat_code_enum! {
    /// `TipoFactura` (list L2).
    TipoFactura, "TipoFactura" {
        /// Invoice (art. 6, 7.2 and 7.3 RD 1619/2012).
        F1 = "F1",
        /// Simplified invoice, or invoice without recipient identification (art. 6.1.d).
        F2 = "F2",
        /// Invoice issued to replace simplified invoices already issued and declared.
        F3 = "F3",
        /// Corrective: error based on law and art. 80 One, Two and Six LIVA.
        R1 = "R1",
        /// Corrective: art. 80.3 LIVA (insolvency proceedings).
        R2 = "R2",
        /// Corrective: art. 80.4 LIVA (bad debts).
        R3 = "R3",
        /// Corrective: other cases.
        R4 = "R4",
        /// Corrective of simplified invoices.
        R5 = "R5",
    }
}

impl TipoFactura {
    /// `true` for R1–R5.
    pub const fn es_rectificativa(self) -> bool {
        matches!(self, Self::R1 | Self::R2 | Self::R3 | Self::R4 | Self::R5)
    }

    /// `true` for the types that must carry `Destinatarios` (F1, F3, R1–R4);
    /// F2 and R5 must not (AEAT errors 1189/1190).
    pub const fn requiere_destinatarios(self) -> bool {
        !matches!(self, Self::F2 | Self::R5)
    }
}

aeat_code_enum! {
    /// `TipoRectificativa` (list L3).
    TipoRectificativa, "TipoRectificativa" {
        /// `S`: by substitution; `ImporteRectificacion` is then required.
        Sustitucion = "S",
        /// `I`: by differences ("incremental").
        Diferencias = "I",
    }
}

aeat_code_enum! {
    /// `Impuesto` (list L1). When absent the AEAT assumes IVA; this crate
    /// always writes it.
    Impuesto, "Impuesto" {
        /// 01 — Impuesto sobre el Valor Añadido (IVA).
        Iva = "01",
        /// 02 — IPSI (Ceuta and Melilla).
        Ipsi = "02",
        /// 03 — IGIC (Canary Islands).
        Igic = "03",
        /// 05 — other taxes.
        Otros = "05",
    }
}

aeat_code_enum! {
    /// `ClaveRegimen` (lists L8A for IVA and L8B for IGIC; the XSD accepts the
    /// union, 01–11, 14, 15, 17–21). Names follow the IVA list L8A.
    ClaveRegimen, "ClaveRegimen" {
        /// 01 — general regime operation.
        General = "01",
        /// 02 — export.
        Exportacion = "02",
        /// 03 — used goods, art, antiques and collectibles (REBU).
        Rebu = "03",
        /// 04 — investment gold.
        OroInversion = "04",
        /// 05 — travel agencies.
        AgenciasViajes = "05",
        /// 06 — VAT group, advanced level.
        GrupoEntidades = "06",
        /// 07 — cash accounting.
        CriterioCaja = "07",
        /// 08 — operations subject to IPSI / IGIC.
        IpsiIgic = "08",
        /// 09 — travel agencies acting as intermediaries (D.A. 4ª RD 1619/2012).
        AgenciasViajesMediadoras = "09",
        /// 10 — collections on behalf of third parties.
        CobrosPorCuentaDeTerceros = "10",
        /// 11 — business premises rental.
        ArrendamientoLocalNegocio = "11",
        /// 14 — VAT pending accrual, works certificates for public administrations.
        PendienteDevengoObraAapp = "14",
        /// 15 — VAT pending accrual, successive supplies.
        PendienteDevengoTractoSucesivo = "15",
        /// 17 — OSS / IOSS regimes (Chapter XI, Title IX LIVA).
        OssIoss = "17",
        /// 18 — equivalence surcharge.
        RecargoEquivalencia = "18",
        /// 19 — agriculture, livestock and fisheries (REAGYP).
        Reagyp = "19",
        /// 20 — simplified regime.
        RegimenSimplificado = "20",
        /// 21 — IGIC only: simplified regime (validation 15.6.11).
        Clave21 = "21",
    }
}

aeat_code_enum! {
    /// `CalificacionOperacion` (list L9).
    CalificacionOperacion, "CalificacionOperacion" {
        /// Subject and not exempt, without reverse charge.
        S1 = "S1",
        /// Subject and not exempt, with reverse charge (the recipient pays the tax).
        S2 = "S2",
        /// Not subject: art. 7, 14 and others.
        N1 = "N1",
        /// Not subject because of place-of-supply rules.
        N2 = "N2",
    }
}

aeat_code_enum! {
    /// `OperacionExenta` (list L10; E7 and E8 exist in the XSD for IGIC only).
    OperacionExenta, "OperacionExenta" {
        /// Exempt under art. 20 LIVA.
        E1 = "E1",
        /// Exempt under art. 21 LIVA (exports).
        E2 = "E2",
        /// Exempt under art. 22 LIVA (operations treated as exports).
        E3 = "E3",
        /// Exempt under art. 23 and 24 LIVA.
        E4 = "E4",
        /// Exempt under art. 25 LIVA (intra-EU supplies of goods).
        E5 = "E5",
        /// Exempt for other reasons.
        E6 = "E6",
        /// IGIC only.
        E7 = "E7",
        /// IGIC only.
        E8 = "E8",
    }
}

aeat_code_enum! {
    /// `IDType` of an `IDOtro` identification (list L7).
    IdType, "IDType" {
        /// 02 — EU VAT number (NIF-IVA).
        NifIva = "02",
        /// 03 — passport.
        Pasaporte = "03",
        /// 04 — official identity document of the country of residence.
        DocumentoOficialPaisResidencia = "04",
        /// 05 — certificate of residence.
        CertificadoResidencia = "05",
        /// 06 — other supporting document.
        OtroDocumentoProbatorio = "06",
        /// 07 — not registered in the AEAT census.
        NoCensado = "07",
    }
}

aeat_code_enum! {
    /// `GeneradoPor` of a cancellation (list L16).
    GeneradoPor, "GeneradoPor" {
        /// The issuer of the cancelled invoice.
        Expedidor = "E",
        /// The recipient.
        Destinatario = "D",
        /// A third party.
        Tercero = "T",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for t in TipoFactura::ALL {
            assert_eq!(TipoFactura::from_code(t.code()).unwrap(), *t);
        }
        assert_eq!(
            "02".parse::<ClaveRegimen>().unwrap(),
            ClaveRegimen::Exportacion
        );
        assert_eq!(
            " N2 ".parse::<CalificacionOperacion>().unwrap(),
            CalificacionOperacion::N2
        );
        assert!("F4".parse::<TipoFactura>().is_err());
        assert!("12".parse::<ClaveRegimen>().is_err());
        assert_eq!(ClaveRegimen::ALL.len(), 18);
    }

    #[test]
    fn rectificativas_and_recipients() {
        assert!(TipoFactura::R1.es_rectificativa());
        assert!(!TipoFactura::F3.es_rectificativa());
        assert!(!TipoFactura::F2.requiere_destinatarios());
        assert!(!TipoFactura::R5.requiere_destinatarios());
        assert!(TipoFactura::R4.requiere_destinatarios());
    }
}
