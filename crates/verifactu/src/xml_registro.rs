//! Serialisation of `RegistroAlta` and `RegistroAnulacion` in the element
//! order of `SuministroInformacion.xsd` (prefix `sum1`).

use crate::alta::{EmitidaPor, RegistroAlta};
use crate::anulacion::RegistroAnulacion;
use crate::chain::Encadenamiento;
use crate::desglose::{DetalleDesglose, Operacion};
use crate::ids::{IdFactura, Identificacion, PersonaFisicaJuridica};
use crate::sistema::SistemaInformatico;
use crate::xml::XmlWriter;

/// `IDVersion` (list L15): the only version is 1.0.
const ID_VERSION: &str = "1.0";
/// `TipoHuella` (list L12): 01 = SHA-256.
const TIPO_HUELLA_SHA256: &str = "01";

fn si(flag: bool) -> Option<&'static str> {
    flag.then_some("S")
}

/// A trimmed optional text; blank counts as absent.
fn opcional(s: &str) -> Option<&str> {
    Some(s.trim()).filter(|t| !t.is_empty())
}

fn sn(flag: bool) -> &'static str {
    if flag { "S" } else { "N" }
}

fn escribir_id_factura(w: &mut XmlWriter, tag: &str, id: &IdFactura) {
    w.open(tag);
    w.leaf("sum1:IDEmisorFactura", id.emisor.as_str());
    w.leaf("sum1:NumSerieFactura", id.num_serie.as_str());
    w.leaf(
        "sum1:FechaExpedicionFactura",
        &id.fecha_expedicion.to_string(),
    );
    w.close(tag);
}

fn escribir_persona(w: &mut XmlWriter, tag: &str, p: &PersonaFisicaJuridica) {
    w.open(tag);
    w.leaf("sum1:NombreRazon", p.nombre_razon.trim());
    escribir_identificacion(w, &p.identificacion);
    w.close(tag);
}

fn escribir_identificacion(w: &mut XmlWriter, id: &Identificacion) {
    match id {
        Identificacion::Nif(nif) => w.leaf("sum1:NIF", nif.as_str()),
        Identificacion::IdOtro(o) => {
            w.open("sum1:IDOtro");
            w.leaf_opt(
                "sum1:CodigoPais",
                o.codigo_pais.as_ref().map(|c| c.as_str()),
            );
            w.leaf("sum1:IDType", o.id_type.code());
            w.leaf("sum1:ID", o.id.trim());
            w.close("sum1:IDOtro");
        }
    }
}

fn escribir_encadenamiento(w: &mut XmlWriter, e: &Encadenamiento) {
    w.open("sum1:Encadenamiento");
    match e {
        Encadenamiento::PrimerRegistro => w.leaf("sum1:PrimerRegistro", "S"),
        Encadenamiento::RegistroAnterior(p) => {
            w.open("sum1:RegistroAnterior");
            w.leaf("sum1:IDEmisorFactura", p.id_emisor_factura.as_str());
            w.leaf("sum1:NumSerieFactura", p.num_serie_factura.as_str());
            w.leaf(
                "sum1:FechaExpedicionFactura",
                &p.fecha_expedicion_factura.to_string(),
            );
            w.leaf("sum1:Huella", p.huella.as_str());
            w.close("sum1:RegistroAnterior");
        }
    }
    w.close("sum1:Encadenamiento");
}

fn escribir_sistema(w: &mut XmlWriter, s: &SistemaInformatico) {
    w.open("sum1:SistemaInformatico");
    w.leaf("sum1:NombreRazon", s.productor.nombre_razon.trim());
    escribir_identificacion(w, &s.productor.identificacion);
    w.leaf(
        "sum1:NombreSistemaInformatico",
        s.nombre_sistema_informatico.trim(),
    );
    w.leaf("sum1:IdSistemaInformatico", &s.id_sistema_informatico);
    w.leaf("sum1:Version", s.version.trim());
    w.leaf("sum1:NumeroInstalacion", s.numero_instalacion.trim());
    w.leaf(
        "sum1:TipoUsoPosibleSoloVerifactu",
        sn(s.tipo_uso_posible_solo_verifactu),
    );
    w.leaf(
        "sum1:TipoUsoPosibleMultiOT",
        sn(s.tipo_uso_posible_multi_ot),
    );
    w.leaf("sum1:IndicadorMultiplesOT", sn(s.indicador_multiples_ot));
    w.close("sum1:SistemaInformatico");
}

fn escribir_detalle(w: &mut XmlWriter, d: &DetalleDesglose) {
    w.open("sum1:DetalleDesglose");
    w.leaf("sum1:Impuesto", d.impuesto.code());
    w.leaf_opt("sum1:ClaveRegimen", d.clave_regimen.map(|c| c.code()));
    match d.operacion {
        Operacion::Calificada(c) => w.leaf("sum1:CalificacionOperacion", c.code()),
        Operacion::Exenta(e) => w.leaf("sum1:OperacionExenta", e.code()),
    }
    w.leaf_opt(
        "sum1:TipoImpositivo",
        d.tipo_impositivo.map(|t| t.to_string()).as_deref(),
    );
    w.leaf(
        "sum1:BaseImponibleOimporteNoSujeto",
        &d.base_imponible_o_importe_no_sujeto.to_string(),
    );
    w.leaf_opt(
        "sum1:BaseImponibleACoste",
        d.base_imponible_a_coste.map(|b| b.to_string()).as_deref(),
    );
    w.leaf_opt(
        "sum1:CuotaRepercutida",
        d.cuota_repercutida.map(|c| c.to_string()).as_deref(),
    );
    if let Some(r) = d.recargo_equivalencia {
        w.leaf("sum1:TipoRecargoEquivalencia", &r.tipo.to_string());
        w.leaf("sum1:CuotaRecargoEquivalencia", &r.cuota.to_string());
    }
    w.close("sum1:DetalleDesglose");
}

/// Writes `sum1:RegistroAlta`.
pub(crate) fn escribir_alta(w: &mut XmlWriter, r: &RegistroAlta) {
    let d = r.datos();
    w.open("sum1:RegistroAlta");
    w.leaf("sum1:IDVersion", ID_VERSION);
    escribir_id_factura(w, "sum1:IDFactura", &d.id_factura);
    w.leaf_opt(
        "sum1:RefExterna",
        d.ref_externa.as_deref().and_then(opcional),
    );
    w.leaf("sum1:NombreRazonEmisor", d.nombre_razon_emisor.trim());
    w.leaf_opt("sum1:Subsanacion", d.operativa.subsanacion());
    w.leaf_opt("sum1:RechazoPrevio", d.operativa.rechazo_previo());
    w.leaf("sum1:TipoFactura", d.tipo_factura.code());
    if let Some(rect) = &d.rectificacion {
        w.leaf("sum1:TipoRectificativa", rect.tipo.code());
        if !rect.facturas_rectificadas.is_empty() {
            w.open("sum1:FacturasRectificadas");
            for id in &rect.facturas_rectificadas {
                escribir_id_factura(w, "sum1:IDFacturaRectificada", id);
            }
            w.close("sum1:FacturasRectificadas");
        }
    }
    if !d.facturas_sustituidas.is_empty() {
        w.open("sum1:FacturasSustituidas");
        for id in &d.facturas_sustituidas {
            escribir_id_factura(w, "sum1:IDFacturaSustituida", id);
        }
        w.close("sum1:FacturasSustituidas");
    }
    if let Some(imp) = d
        .rectificacion
        .as_ref()
        .and_then(|r| r.importe_rectificacion)
    {
        w.open("sum1:ImporteRectificacion");
        w.leaf("sum1:BaseRectificada", &imp.base_rectificada.to_string());
        w.leaf("sum1:CuotaRectificada", &imp.cuota_rectificada.to_string());
        w.leaf_opt(
            "sum1:CuotaRecargoRectificado",
            imp.cuota_recargo_rectificado
                .map(|c| c.to_string())
                .as_deref(),
        );
        w.close("sum1:ImporteRectificacion");
    }
    w.leaf_opt(
        "sum1:FechaOperacion",
        d.fecha_operacion.map(|f| f.to_string()).as_deref(),
    );
    w.leaf("sum1:DescripcionOperacion", d.descripcion_operacion.trim());
    w.leaf_opt(
        "sum1:FacturaSimplificadaArt7273",
        si(d.factura_simplificada_art_7273),
    );
    w.leaf_opt(
        "sum1:FacturaSinIdentifDestinatarioArt61d",
        si(d.factura_sin_identif_destinatario_art_61d),
    );
    w.leaf_opt("sum1:Macrodato", si(d.macrodato()));
    match &d.emitida_por {
        Some(EmitidaPor::Tercero(t)) => {
            w.leaf("sum1:EmitidaPorTerceroODestinatario", "T");
            escribir_persona(w, "sum1:Tercero", t);
        }
        Some(EmitidaPor::Destinatario) => w.leaf("sum1:EmitidaPorTerceroODestinatario", "D"),
        None => {}
    }
    if !d.destinatarios.is_empty() {
        w.open("sum1:Destinatarios");
        for p in &d.destinatarios {
            escribir_persona(w, "sum1:IDDestinatario", p);
        }
        w.close("sum1:Destinatarios");
    }
    w.leaf_opt("sum1:Cupon", si(d.cupon));
    w.open("sum1:Desglose");
    for linea in &d.desglose {
        escribir_detalle(w, linea);
    }
    w.close("sum1:Desglose");
    w.leaf("sum1:CuotaTotal", &d.cuota_total.to_string());
    w.leaf("sum1:ImporteTotal", &d.importe_total.to_string());
    escribir_encadenamiento(w, r.encadenamiento());
    escribir_sistema(w, &d.sistema_informatico);
    w.leaf(
        "sum1:FechaHoraHusoGenRegistro",
        &r.fecha_hora_huso_gen_registro().to_string(),
    );
    w.leaf_opt(
        "sum1:NumRegistroAcuerdoFacturacion",
        d.num_registro_acuerdo_facturacion
            .as_deref()
            .and_then(opcional),
    );
    w.leaf_opt(
        "sum1:IdAcuerdoSistemaInformatico",
        d.id_acuerdo_sistema_informatico
            .as_deref()
            .and_then(opcional),
    );
    w.leaf("sum1:TipoHuella", TIPO_HUELLA_SHA256);
    w.leaf("sum1:Huella", r.huella().as_str());
    w.close("sum1:RegistroAlta");
}

/// Writes `sum1:RegistroAnulacion`.
pub(crate) fn escribir_anulacion(w: &mut XmlWriter, r: &RegistroAnulacion) {
    let d = r.datos();
    w.open("sum1:RegistroAnulacion");
    w.leaf("sum1:IDVersion", ID_VERSION);
    w.open("sum1:IDFactura");
    w.leaf("sum1:IDEmisorFacturaAnulada", d.id_factura.emisor.as_str());
    w.leaf(
        "sum1:NumSerieFacturaAnulada",
        d.id_factura.num_serie.as_str(),
    );
    w.leaf(
        "sum1:FechaExpedicionFacturaAnulada",
        &d.id_factura.fecha_expedicion.to_string(),
    );
    w.close("sum1:IDFactura");
    w.leaf_opt(
        "sum1:RefExterna",
        d.ref_externa.as_deref().and_then(opcional),
    );
    w.leaf_opt("sum1:SinRegistroPrevio", d.operativa.sin_registro_previo());
    w.leaf_opt("sum1:RechazoPrevio", d.operativa.rechazo_previo());
    if let Some(g) = &d.generador {
        w.leaf("sum1:GeneradoPor", g.generado_por.code());
        escribir_persona(w, "sum1:Generador", &g.persona);
    }
    escribir_encadenamiento(w, r.encadenamiento());
    escribir_sistema(w, &d.sistema_informatico);
    w.leaf(
        "sum1:FechaHoraHusoGenRegistro",
        &r.fecha_hora_huso_gen_registro().to_string(),
    );
    w.leaf("sum1:TipoHuella", TIPO_HUELLA_SHA256);
    w.leaf("sum1:Huella", r.huella().as_str());
    w.close("sum1:RegistroAnulacion");
}
