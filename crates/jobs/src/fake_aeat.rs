//! Test support (feature `testing`): a stand-in for the AEAT's VERI*FACTU web
//! service, an axum server on a loopback port (plain HTTP).
//!
//! Every request is checked as the AEAT would: the `RegFactuSistemaFacturacion`
//! against `SuministroLR.xsd` (with `xmllint`, on the XSDs bundled in the
//! `verifactu` crate), and every record's huella and `Encadenamiento`
//! recomputed against the records received before. Problems are kept in
//! [`Request::problems`] for the test to assert on.
//!
//! It answers like the AEAT: one line per record, `Correcto` unless told
//! otherwise, error 3000 (duplicate) for a record it already registered,
//! and the configured `TiempoEsperaEnvio`. Tests script the next answers with
//! [`FakeAeat::push`]: record errors, a SOAP fault, an HTTP error, or a slow
//! answer (processed, then answered after a delay: the client's timeout path,
//! where the records did reach the AEAT).

use std::{
    collections::{HashMap, VecDeque},
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use tokio::task::JoinHandle;
use verifactu::peticion::{RegistroLeido, leer_peticion, verificar_peticion};

/// One scripted answer (used once, in order; then plain success).
#[derive(Debug, Clone)]
pub enum Answer {
    /// Every new record `Correcto`.
    Accept,
    /// The records at these positions (0-based, within the request) answered
    /// `Incorrecto` with `code`; the others `Correcto`.
    Reject {
        /// Positions in the request.
        positions: Vec<usize>,
        /// AEAT error code, e.g. 1189.
        code: u32,
        /// Its description.
        description: String,
    },
    /// The records at these positions `AceptadoConErrores` with `code`.
    AcceptWithErrors {
        /// Positions in the request.
        positions: Vec<usize>,
        /// AEAT error code, e.g. 2001.
        code: u32,
    },
    /// A SOAP fault (the whole request refused, nothing registered).
    Fault {
        /// `true`: `soapenv:Server`, else `soapenv:Client`.
        server: bool,
        /// `faultstring`.
        message: String,
    },
    /// An HTTP error status without SOAP (a proxy or load balancer), nothing registered.
    Http(u16),
    /// Processed and registered, but answered only after this delay.
    Slow(Duration),
}

/// A request as received, with what the checks found.
#[derive(Debug, Clone)]
pub struct Request {
    /// The raw body.
    pub body: String,
    /// The records, as read.
    pub records: Vec<RegistroLeido>,
    /// XSD, huella and chain problems; empty when the request is correct.
    pub problems: Vec<String>,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Answer>,
    wait_seconds: u32,
    requests: Vec<Request>,
    /// (issuer, number, date, is cancellation) → huella, of registered records.
    registered: HashMap<(String, String, String, bool), String>,
    /// Huellas of records seen (registered or rejected), so a record sent
    /// again is not chain-checked twice.
    seen: HashMap<String, bool>,
    /// Per issuer, the last record received (issuer, number, date, huella).
    heads: HashMap<String, [String; 4]>,
    csv_counter: u64,
}

/// The running fake; stops when dropped.
pub struct FakeAeat {
    url: String,
    inner: Arc<Mutex<Inner>>,
    task: JoinHandle<()>,
    _schemas: Option<tempfile::TempDir>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    schema: Option<PathBuf>,
}

impl FakeAeat {
    /// Starts the fake on a free loopback port, answering `TiempoEsperaEnvio`
    /// 0 (tests set a real wait with [`FakeAeat::set_wait`]).
    pub async fn start() -> std::io::Result<Self> {
        let schemas = prepare_schemas()?;
        let shared = Shared {
            inner: Arc::new(Mutex::new(Inner::default())),
            schema: schemas.as_ref().map(|d| d.path().join("SuministroLR.xsd")),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!(
            "http://{}/wlpl/TIKE-CONT/ws/SistemaFacturacion/VerifactuSOAP",
            listener.local_addr()?
        );
        let app = Router::new()
            .route(
                "/wlpl/TIKE-CONT/ws/SistemaFacturacion/VerifactuSOAP",
                post(handle),
            )
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            url,
            inner: shared.inner,
            task,
            _schemas: schemas,
        })
    }

    /// The endpoint URL.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Queues the answer to the next request not yet scripted.
    pub fn push(&self, answer: Answer) {
        self.lock().script.push_back(answer);
    }

    /// `TiempoEsperaEnvio` of the next answers.
    pub fn set_wait(&self, seconds: u32) {
        self.lock().wait_seconds = seconds;
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// How many records are registered.
    pub fn registered(&self) -> usize {
        self.lock().registered.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for FakeAeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The bundled XSDs in a temporary directory, the XML-DSig import made local;
/// `None` when `xmllint` is not installed (then no schema check).
fn prepare_schemas() -> std::io::Result<Option<tempfile::TempDir>> {
    if std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("fake AEAT: xmllint not found, requests are not checked against the XSD");
        return Ok(None);
    }
    let dir = tempfile::tempdir()?;
    for entry in std::fs::read_dir(verifactu::XSD_DIR)? {
        let path = entry?.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        let text = std::fs::read_to_string(&path)?.replace(
            "http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd",
            "xmldsig-core-schema.xsd",
        );
        std::fs::write(dir.path().join(name), text)?;
    }
    Ok(Some(dir))
}

/// The `RegFactuSistemaFacturacion` element of a SOAP request as a document
/// of its own, with the namespace declarations it uses.
fn bare_document(body: &str) -> Option<String> {
    let start = body.find("<sum:RegFactuSistemaFacturacion")?;
    let close = "</sum:RegFactuSistemaFacturacion>";
    let end = body.find(close)? + close.len();
    let element = &body[start..end];
    let head_end = element.find('>')?;
    let head = &element[..head_end];
    let mut decls = String::new();
    for (prefix, ns) in [
        ("sum", verifactu::NS_SUMINISTRO_LR),
        ("sum1", verifactu::NS_SUMINISTRO_INFORMACION),
    ] {
        if !head.contains(&format!("xmlns:{prefix}=")) {
            decls.push_str(&format!(" xmlns:{prefix}=\"{ns}\""));
        }
    }
    Some(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{head}{decls}{}",
        &element[head_end..]
    ))
}

fn xsd_problems(schema: &std::path::Path, body: &str) -> Vec<String> {
    let Some(doc) = bare_document(body) else {
        return vec!["no sum:RegFactuSistemaFacturacion element in the request".into()];
    };
    let result = (|| -> std::io::Result<std::process::Output> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("request.xml");
        std::fs::write(&file, doc)?;
        std::process::Command::new("xmllint")
            .args(["--noout", "--nonet", "--schema"])
            .arg(schema)
            .arg(&file)
            .output()
    })();
    match result {
        Ok(out) if out.status.success() => Vec::new(),
        Ok(out) => vec![format!(
            "XSD: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )],
        Err(e) => vec![format!("xmllint could not run: {e}")],
    }
}

async fn handle(State(shared): State<Shared>, body: Bytes) -> (StatusCode, String) {
    let body = String::from_utf8_lossy(&body).into_owned();
    let mut problems = match &shared.schema {
        Some(schema) => {
            let (schema, b) = (schema.clone(), body.clone());
            tokio::task::spawn_blocking(move || xsd_problems(&schema, &b))
                .await
                .unwrap_or_else(|e| vec![format!("XSD check stopped: {e}")])
        }
        None => Vec::new(),
    };
    let peticion = match leer_peticion(&body) {
        Ok(p) => p,
        Err(e) => {
            problems.push(format!("unreadable: {e}"));
            let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.requests.push(Request {
                body,
                records: Vec::new(),
                problems,
            });
            return fault(
                false,
                &format!("Codigo[4102].El XML no cumple el esquema. {e}"),
            );
        }
    };
    let (status, answer, delay) = {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let script = inner.script.pop_front().unwrap_or(Answer::Accept);
        let (status, text) = match &script {
            Answer::Fault { server, message } => fault(*server, message),
            Answer::Http(code) => (
                StatusCode::from_u16(*code).unwrap_or(StatusCode::BAD_GATEWAY),
                "<html>upstream error</html>".to_owned(),
            ),
            _ => (
                StatusCode::OK,
                process(&mut inner, &peticion, &script, &mut problems),
            ),
        };
        inner.requests.push(Request {
            body,
            records: peticion.registros.clone(),
            problems,
        });
        let delay = match script {
            Answer::Slow(d) => Some(d),
            _ => None,
        };
        (status, text, delay)
    };
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    (status, answer)
}

/// Registers the new records and writes the answer.
fn process(
    inner: &mut Inner,
    peticion: &verifactu::peticion::PeticionLeida,
    script: &Answer,
    problems: &mut Vec<String>,
) -> String {
    let nif = peticion.nif_obligado_emision.clone();
    // The chain is checked over the records this fake has not seen before.
    let nuevos: Vec<usize> = (0..peticion.registros.len())
        .filter(|&i| !inner.seen.contains_key(&peticion.registros[i].huella))
        .collect();
    if !nuevos.is_empty() {
        let sub = verifactu::peticion::PeticionLeida {
            nif_obligado_emision: nif.clone(),
            nombre_obligado_emision: peticion.nombre_obligado_emision.clone(),
            registros: nuevos
                .iter()
                .map(|&i| peticion.registros[i].clone())
                .collect(),
        };
        for f in verificar_peticion(&sub, inner.heads.get(&nif).cloned()) {
            problems.push(format!(
                "record {}: AEAT {}: {}",
                nuevos[f.posicion], f.codigo, f.descripcion
            ));
        }
    }
    let mut lineas = String::new();
    let (mut ok, mut bad) = (0, 0);
    for (i, r) in peticion.registros.iter().enumerate() {
        let key = (
            r.id_emisor.clone(),
            r.num_serie.clone(),
            r.fecha_expedicion.clone(),
            r.anulacion,
        );
        let (estado, codigo, descripcion, duplicado) = if inner.registered.contains_key(&key) {
            (
                "Incorrecto",
                Some(3000),
                Some("Registro de facturación duplicado.".to_owned()),
                true,
            )
        } else {
            let first_time = !inner.seen.contains_key(&r.huella);
            if first_time {
                inner.heads.insert(nif.clone(), r.como_anterior());
            }
            match script {
                Answer::Reject {
                    positions,
                    code,
                    description,
                } if positions.contains(&i) => {
                    inner.seen.insert(r.huella.clone(), false);
                    ("Incorrecto", Some(*code), Some(description.clone()), false)
                }
                Answer::AcceptWithErrors { positions, code } if positions.contains(&i) => {
                    inner.seen.insert(r.huella.clone(), true);
                    inner.registered.insert(key, r.huella.clone());
                    (
                        "AceptadoConErrores",
                        Some(*code),
                        Some("Aceptado con errores (fake AEAT).".to_owned()),
                        false,
                    )
                }
                _ => {
                    inner.seen.insert(r.huella.clone(), true);
                    inner.registered.insert(key, r.huella.clone());
                    ("Correcto", None, None, false)
                }
            }
        };
        if estado == "Incorrecto" {
            bad += 1;
        } else {
            ok += 1;
        }
        lineas.push_str(&linea(r, estado, codigo, descripcion.as_deref(), duplicado));
    }
    let estado_envio = match (ok, bad) {
        (_, 0) => "Correcto",
        (0, _) => "Incorrecto",
        _ => "ParcialmenteCorrecto",
    };
    inner.csv_counter += 1;
    let csv = if ok > 0 {
        format!("<tikR:CSV>A-FAKE{:012}</tikR:CSV>", inner.csv_counter)
    } else {
        String::new()
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <env:Envelope xmlns:env=\"http://schemas.xmlsoap.org/soap/envelope/\"><env:Header/><env:Body>\
         <tikR:RespuestaRegFactuSistemaFacturacion xmlns:tikR=\"{}\" xmlns:tik=\"{}\">{csv}\
         <tikR:Cabecera><tik:ObligadoEmision><tik:NombreRazon>{}</tik:NombreRazon><tik:NIF>{}</tik:NIF>\
         </tik:ObligadoEmision></tikR:Cabecera>\
         <tikR:TiempoEsperaEnvio>{}</tikR:TiempoEsperaEnvio><tikR:EstadoEnvio>{estado_envio}</tikR:EstadoEnvio>\
         {lineas}</tikR:RespuestaRegFactuSistemaFacturacion></env:Body></env:Envelope>",
        verifactu::NS_RESPUESTA_SUMINISTRO,
        verifactu::NS_SUMINISTRO_INFORMACION,
        escape(&peticion.nombre_obligado_emision),
        escape(&nif),
        inner.wait_seconds,
    )
}

fn linea(
    r: &RegistroLeido,
    estado: &str,
    codigo: Option<u32>,
    descripcion: Option<&str>,
    duplicado: bool,
) -> String {
    let mut out = format!(
        "<tikR:RespuestaLinea><tikR:IDFactura><tik:IDEmisorFactura>{}</tik:IDEmisorFactura>\
         <tik:NumSerieFactura>{}</tik:NumSerieFactura><tik:FechaExpedicionFactura>{}</tik:FechaExpedicionFactura>\
         </tikR:IDFactura><tikR:Operacion><tik:TipoOperacion>{}</tik:TipoOperacion></tikR:Operacion>\
         <tikR:EstadoRegistro>{estado}</tikR:EstadoRegistro>",
        escape(&r.id_emisor),
        escape(&r.num_serie),
        escape(&r.fecha_expedicion),
        if r.anulacion { "Anulacion" } else { "Alta" },
    );
    if let Some(c) = codigo {
        out.push_str(&format!(
            "<tikR:CodigoErrorRegistro>{c}</tikR:CodigoErrorRegistro>"
        ));
    }
    if let Some(d) = descripcion {
        out.push_str(&format!(
            "<tikR:DescripcionErrorRegistro>{}</tikR:DescripcionErrorRegistro>",
            escape(d)
        ));
    }
    if duplicado {
        out.push_str(
            "<tikR:RegistroDuplicado><tik:IdPeticionRegistroDuplicado>FAKE0000000001</tik:IdPeticionRegistroDuplicado>\
             <tik:EstadoRegistroDuplicado>Correcta</tik:EstadoRegistroDuplicado></tikR:RegistroDuplicado>",
        );
    }
    out.push_str("</tikR:RespuestaLinea>");
    out
}

fn fault(server: bool, message: &str) -> (StatusCode, String) {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>\
             <soapenv:Fault><faultcode>soapenv:{}</faultcode><faultstring>{}</faultstring></soapenv:Fault>\
             </soapenv:Body></soapenv:Envelope>",
            if server { "Server" } else { "Client" },
            escape(message)
        ),
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
