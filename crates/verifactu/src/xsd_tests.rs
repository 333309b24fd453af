//! Schema validation of the generated XML with `xmllint` against the AEAT
//! XSDs bundled in `xsd/` (verbatim copies). `SuministroInformacion.xsd`
//! imports the XML-DSig schema from a remote URL; the test copies the XSDs to
//! a temporary directory and points that import at the local copy, and runs
//! `xmllint --nonet` so nothing is fetched.
//!
//! The test is skipped, with a message, only when `xmllint` is not installed
//! (`apt-get install libxml2-utils`); any other problem fails it.
//! Set `VERIFACTU_SAMPLES_DIR` to keep the generated files.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::alta::{EmitidaPor, ImporteRectificacion, OperativaAlta, Rectificacion};
use crate::anulacion::{Generador, OperativaAnulacion};
use crate::chain::{Cadena, RegistroFactura};
use crate::codes::{ClaveRegimen, GeneradoPor, IdType, TipoFactura, TipoRectificativa};
use crate::desglose::{DetalleDesglose, RecargoEquivalencia};
use crate::envio::{Cabecera, RegFactuSistemaFacturacion, RemisionVoluntaria};
use crate::ids::{CodigoPais, IdOtro, Nif, PersonaFisicaJuridica, PersonaNif};
use crate::testutil::*;

const XSD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/xsd");
const REMOTE_XMLDSIG: &str = "http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd";

/// Copies the XSDs to `dir`, pointing the XML-DSig import at the local file.
fn preparar_esquemas(dir: &Path) {
    for name in [
        "SuministroLR.xsd",
        "SuministroInformacion.xsd",
        "RespuestaSuministro.xsd",
        "xmldsig-core-schema.xsd",
    ] {
        let text = std::fs::read_to_string(Path::new(XSD_DIR).join(name)).unwrap();
        let text = text.replace(REMOTE_XMLDSIG, "xmldsig-core-schema.xsd");
        std::fs::write(dir.join(name), text).unwrap();
    }
    let info = std::fs::read_to_string(dir.join("SuministroInformacion.xsd")).unwrap();
    assert!(
        !info.contains("http://www.w3.org/TR/"),
        "remote import left in SuministroInformacion.xsd"
    );
}

/// Runs xmllint; `None` when it is not installed.
fn xmllint(schema: &Path, files: &[PathBuf]) -> Option<(bool, String)> {
    let output = match Command::new("xmllint")
        .arg("--noout")
        .arg("--nonet")
        .arg("--schema")
        .arg(schema)
        .args(files)
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("could not run xmllint: {e}"),
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Some((output.status.success(), text))
}

fn envio(registros: Vec<RegistroFactura>) -> RegFactuSistemaFacturacion {
    RegFactuSistemaFacturacion::new(Cabecera::new(obligado()), registros).unwrap()
}

/// One submission per scenario of the brief, plus one that uses every
/// optional element this crate can write.
fn muestras() -> Vec<(&'static str, RegFactuSistemaFacturacion)> {
    let mut c = Cadena::new(None);
    let hora = |m| madrid(2025, 1, 15, 9, m, 0);
    let f1 = c
        .alta(f1_nacional("2025/0001", "15-01-2025"), hora(0))
        .unwrap();
    let exp = c
        .alta(f1_exportacion("2025/0002", "15-01-2025"), hora(1))
        .unwrap();
    let ue = c
        .alta(f1_servicios_ue("2025/0003", "15-01-2025"), hora(2))
        .unwrap();
    let r1 = c
        .alta(
            r1_diferencias("R-2025/0001", "15-01-2025", f1.id_factura().clone()),
            hora(3),
        )
        .unwrap();
    let an = c
        .anulacion(anulacion(exp.id_factura().clone()), hora(4))
        .unwrap();

    let mut t = Cadena::new(c.cabeza().cloned());
    let tres: Vec<RegistroFactura> = vec![
        t.alta(f1_nacional("2025/0010", "16-01-2025"), hora(10))
            .unwrap()
            .into(),
        t.alta(f1_nacional("2025/0011", "16-01-2025"), hora(11))
            .unwrap()
            .into(),
        t.anulacion(
            anulacion(crate::testutil::id_factura("2025/0010", "16-01-2025")),
            hora(12),
        )
        .unwrap()
        .into(),
    ];
    crate::chain::verificar_cadena(c.cabeza(), &tres).unwrap();

    let completo = completo(&mut t);
    let mut cabecera = Cabecera::new(obligado());
    cabecera.representante =
        Some(PersonaNif::new("ASESORES <FISCALES> SL", Nif::new("B87654321").unwrap()).unwrap());
    cabecera.remision_voluntaria = Some(RemisionVoluntaria {
        fecha_fin_verifactu: Some("31-12-2025".parse().unwrap()),
        incidencia: true,
    });
    let completo = RegFactuSistemaFacturacion::new(cabecera, completo).unwrap();

    vec![
        ("f1_nacional_21.xml", envio(vec![f1.into()])),
        ("f1_exportacion_e2.xml", envio(vec![exp.into()])),
        ("f1_servicios_ue_n2.xml", envio(vec![ue.into()])),
        ("r1_diferencias.xml", envio(vec![r1.into()])),
        ("anulacion.xml", envio(vec![an.into()])),
        ("cadena_de_tres.xml", envio(tres)),
        ("completo.xml", completo),
    ]
}

/// Records using the optional elements: R1 by substitution with
/// `ImporteRectificacion`, third party, surcharge, big amounts, corrections,
/// and a cancellation with a generator.
fn completo(c: &mut Cadena) -> Vec<RegistroFactura> {
    let mut d = r1_diferencias(
        "R-2025/0002",
        "16-01-2025",
        crate::testutil::id_factura("2025/0001", "15-01-2025"),
    );
    d.rectificacion = Some(Rectificacion {
        tipo: TipoRectificativa::Sustitucion,
        facturas_rectificadas: vec![crate::testutil::id_factura("2025/0001", "15-01-2025")],
        importe_rectificacion: Some(ImporteRectificacion {
            base_rectificada: importe(10000),
            cuota_rectificada: importe(2100),
            cuota_recargo_rectificado: Some(importe(0)),
        }),
    });
    d.ref_externa = Some("pedido-77".into());
    d.operativa = OperativaAlta::SubsanacionTrasRechazo;
    d.fecha_operacion = Some("10-01-2025".parse().unwrap());
    d.factura_simplificada_art_7273 = true;
    d.cupon = true;
    let fr = CodigoPais::new("FR").unwrap();
    d.emitida_por = Some(EmitidaPor::Tercero(
        PersonaFisicaJuridica::con_id_otro(
            "GESTORIA EXTERNA",
            IdOtro::new(Some(fr), IdType::Pasaporte, "P123").unwrap(),
        )
        .unwrap(),
    ));
    let mut recargo = DetalleDesglose::sujeta(
        ClaveRegimen::RecargoEquivalencia,
        iva21(),
        importe(-2000),
        importe(-420),
    );
    recargo.recargo_equivalencia = Some(RecargoEquivalencia {
        tipo: "5.2".parse().unwrap(),
        cuota: importe(-104),
    });
    d.desglose = vec![recargo];
    d.cuota_total = importe(-524);
    d.importe_total = importe(-2524);
    d.num_registro_acuerdo_facturacion = Some("ACUERDO-1".into());
    d.id_acuerdo_sistema_informatico = Some("IDACUERDO".into());
    let rect = c.alta(d, madrid(2025, 1, 16, 9, 0, 0)).unwrap();

    let mut grande = f1_nacional("2025/0100", "16-01-2025");
    let base = 10_000_000_000; // 100 000 000.00 €
    let cuota = iva21().cuota(importe(base)).unwrap();
    grande.desglose = vec![DetalleDesglose::sujeta(
        ClaveRegimen::General,
        iva21(),
        importe(base),
        cuota,
    )];
    grande.cuota_total = cuota;
    grande.importe_total = importe(base + cuota.cents());
    grande.tipo_factura = TipoFactura::F1;
    grande.operativa = OperativaAlta::AltaTrasRechazo;
    assert!(grande.macrodato());
    let grande = c.alta(grande, madrid(2025, 1, 16, 9, 1, 0)).unwrap();

    let mut a = anulacion(crate::testutil::id_factura("2025/0099", "16-01-2025"));
    a.operativa = OperativaAnulacion::SinRegistroPrevioTrasRechazo;
    a.ref_externa = Some("baja-1".into());
    a.generador = Some(Generador {
        generado_por: GeneradoPor::Destinatario,
        persona: PersonaFisicaJuridica::con_nif(
            "CLIENTE NACIONAL SA",
            Nif::new("A84532509").unwrap(),
        )
        .unwrap(),
    });
    let anul = c.anulacion(a, madrid(2025, 1, 16, 9, 2, 0)).unwrap();
    vec![rect.into(), grande.into(), anul.into()]
}

/// The `RespuestaRegFactuSistemaFacturacion` element of a sample SOAP response.
fn cuerpo_respuesta(soap: &str) -> String {
    let start = soap
        .find("<tikR:RespuestaRegFactuSistemaFacturacion")
        .unwrap();
    let end_tag = "</tikR:RespuestaRegFactuSistemaFacturacion>";
    let end = soap.find(end_tag).unwrap() + end_tag.len();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n",
        &soap[start..end]
    )
}

#[test]
fn generated_xml_validates_against_the_aeat_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::env::var_os("VERIFACTU_SAMPLES_DIR")
        .map_or_else(|| tmp.path().join("xml"), PathBuf::from);
    std::fs::create_dir_all(&out).unwrap();
    let schemas = tmp.path().join("xsd");
    std::fs::create_dir_all(&schemas).unwrap();
    preparar_esquemas(&schemas);

    let mut files = Vec::new();
    for (name, envio) in muestras() {
        let path = out.join(name);
        std::fs::write(&path, envio.to_xml()).unwrap();
        files.push(path);
    }
    let Some((ok, text)) = xmllint(&schemas.join("SuministroLR.xsd"), &files) else {
        // Written straight to stderr so the test harness does not capture it.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: xmllint is not installed (apt-get install libxml2-utils); the AEAT XSD validation did not run"
        );
        return;
    };
    assert!(ok, "xmllint rejected the generated XML:\n{text}");
    assert_eq!(text.matches(" validates").count(), files.len(), "{text}");

    // A deliberately invalid document must fail, proving the check bites.
    let broken = out.join("roto.xml");
    let first = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::write(
        &broken,
        first.replace("<sum1:TipoFactura>F1</sum1:TipoFactura>", ""),
    )
    .unwrap();
    let (ok, text) = xmllint(
        &schemas.join("SuministroLR.xsd"),
        std::slice::from_ref(&broken),
    )
    .unwrap();
    assert!(!ok, "xmllint accepted an invalid document:\n{text}");
    std::fs::remove_file(&broken).unwrap();

    // The sample AEAT responses used by the parser tests follow RespuestaSuministro.xsd.
    let mut responses = Vec::new();
    for (name, soap) in [
        (
            "respuesta_correcta.xml",
            include_str!("../testdata/respuesta_correcta.xml"),
        ),
        (
            "respuesta_parcial.xml",
            include_str!("../testdata/respuesta_parcial.xml"),
        ),
        (
            "respuesta_incorrecta.xml",
            include_str!("../testdata/respuesta_incorrecta.xml"),
        ),
    ] {
        let path = out.join(name);
        std::fs::write(&path, cuerpo_respuesta(soap)).unwrap();
        responses.push(path);
    }
    let (ok, text) = xmllint(&schemas.join("RespuestaSuministro.xsd"), &responses).unwrap();
    assert!(ok, "xmllint rejected a sample response:\n{text}");
}

#[test]
fn bundled_schemas_match_the_shared_copies_when_present() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/verifactu/xsd");
    if !shared.is_dir() {
        println!("shared/verifactu/xsd not found next to the repository; nothing to compare");
        return;
    }
    for name in [
        "SuministroLR.xsd",
        "SuministroInformacion.xsd",
        "RespuestaSuministro.xsd",
        "xmldsig-core-schema.xsd",
    ] {
        let bundled = std::fs::read(Path::new(XSD_DIR).join(name)).unwrap();
        let original = std::fs::read(shared.join(name)).unwrap();
        assert!(
            bundled == original,
            "xsd/{name} differs from shared/verifactu/xsd/{name}"
        );
    }
}
