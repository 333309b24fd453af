//! `Desglose`: the tax breakdown lines (`DetalleDesglose`, 1 to 12 per record)
//! and their constructors. The line rules are in `reglas_desglose`.

use crate::amount::{Importe, Porcentaje};
use crate::codes::{
    CalificacionOperacion as Cal, ClaveRegimen as Clave, Impuesto, OperacionExenta,
};
use crate::error::ValidationError;

/// The choice between `CalificacionOperacion` and `OperacionExenta`
/// (exactly one of them must be present, AEAT errors 1195/1196).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operacion {
    /// Subject (S1/S2) or not subject (N1/N2).
    Calificada(Cal),
    /// Exempt, with the cause (E1–E6, E7/E8 for IGIC).
    Exenta(OperacionExenta),
}

/// Equivalence surcharge of a line (`TipoRecargoEquivalencia` and
/// `CuotaRecargoEquivalencia`, always together, AEAT error 1284).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecargoEquivalencia {
    /// Surcharge rate in percent.
    pub tipo: Porcentaje,
    /// Surcharge amount.
    pub cuota: Importe,
}

/// One `DetalleDesglose` line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DetalleDesglose {
    /// `Impuesto` (always written; the AEAT defaults to IVA when absent).
    pub impuesto: Impuesto,
    /// `ClaveRegimen`; required for IVA and IGIC.
    pub clave_regimen: Option<Clave>,
    /// `CalificacionOperacion` or `OperacionExenta`.
    pub operacion: Operacion,
    /// `TipoImpositivo`.
    pub tipo_impositivo: Option<Porcentaje>,
    /// `BaseImponibleOimporteNoSujeto`.
    pub base_imponible_o_importe_no_sujeto: Importe,
    /// `BaseImponibleACoste` (only with `ClaveRegimen` 06, IPSI or other taxes).
    pub base_imponible_a_coste: Option<Importe>,
    /// `CuotaRepercutida`.
    pub cuota_repercutida: Option<Importe>,
    /// Equivalence surcharge.
    pub recargo_equivalencia: Option<RecargoEquivalencia>,
}

impl DetalleDesglose {
    fn iva(clave: Clave, operacion: Operacion, base: Importe) -> Self {
        Self {
            impuesto: Impuesto::Iva,
            clave_regimen: Some(clave),
            operacion,
            tipo_impositivo: None,
            base_imponible_o_importe_no_sujeto: base,
            base_imponible_a_coste: None,
            cuota_repercutida: None,
            recargo_equivalencia: None,
        }
    }

    /// IVA line subject and not exempt, without reverse charge (S1), with the
    /// tax amount as charged on the invoice.
    pub fn sujeta(clave: Clave, tipo: Porcentaje, base: Importe, cuota: Importe) -> Self {
        Self {
            tipo_impositivo: Some(tipo),
            cuota_repercutida: Some(cuota),
            ..Self::iva(clave, Operacion::Calificada(Cal::S1), base)
        }
    }

    /// Same as [`DetalleDesglose::sujeta`], computing the tax with
    /// [`Porcentaje::cuota`] (half away from zero, to cents).
    pub fn sujeta_calculada(
        clave: Clave,
        tipo: Porcentaje,
        base: Importe,
    ) -> Result<Self, ValidationError> {
        Ok(Self::sujeta(clave, tipo, base, tipo.cuota(base)?))
    }

    /// IVA line with reverse charge (S2): the recipient pays the tax, so
    /// `TipoImpositivo` and `CuotaRepercutida` are written as 0 (AEAT error 1198).
    pub fn inversion_sujeto_pasivo(clave: Clave, base: Importe) -> Self {
        Self {
            tipo_impositivo: Some(Porcentaje::ZERO),
            cuota_repercutida: Some(Importe::ZERO),
            ..Self::iva(clave, Operacion::Calificada(Cal::S2), base)
        }
    }

    /// IVA line not subject (N1 or N2): no rate and no tax (AEAT error 1237).
    /// Passing S1 or S2 here is caught by validation.
    pub fn no_sujeta(clave: Clave, calificacion: Cal, importe: Importe) -> Self {
        Self::iva(clave, Operacion::Calificada(calificacion), importe)
    }

    /// IVA line exempt for `causa`: no rate and no tax (AEAT error 1238).
    pub fn exenta(clave: Clave, causa: OperacionExenta, base: Importe) -> Self {
        Self::iva(clave, Operacion::Exenta(causa), base)
    }

    /// `CuotaRepercutida` plus `CuotaRecargoEquivalencia`, in cents.
    pub(crate) fn cuota_cents(&self) -> i128 {
        let cuota = self.cuota_repercutida.map_or(0, |c| c.cents());
        let recargo = self.recargo_equivalencia.map_or(0, |r| r.cuota.cents());
        i128::from(cuota) + i128::from(recargo)
    }

    /// Base plus taxes, in cents (the line's share of `ImporteTotal`).
    pub(crate) fn total_cents(&self) -> i128 {
        i128::from(self.base_imponible_o_importe_no_sujeto.cents()) + self.cuota_cents()
    }
}
