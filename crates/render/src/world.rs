//! The sandboxed Typst world: embedded fonts and templates plus a few in-memory files.
//!
//! Nothing reaches the host: `source()`/`file()` answer only from the maps below (templates
//! compiled into the binary, and per render `/data.json`, the QR image and the company
//! snippets); every other path, and every package import, is an error. There is no network
//! and no system font. Fonts, the font book, the standard library and the parsed templates
//! are built once per process.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::Datelike;
use typst::diag::{FileError, FileResult};
use typst::foundations::{Bytes, Datetime, Duration};
use typst::syntax::{FileId, RootedPath, Source, VirtualPath, VirtualRoot};
use typst::text::{Font, FontBook};
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World};

/// Path of the document data, read by the templates with `json(DATA_PATH)`.
pub const DATA_PATH: &str = "/data.json";
/// Path of the QR code image, when the document has one.
pub const QR_PATH: &str = "/qr.svg";
/// Path of the Factur-X XML, attached to the PDF as `factur-x.xml` when the document has one.
pub const FACTURX_PATH: &str = "/factur-x.xml";
/// Path of the company footer snippet.
pub const FOOTER_PATH: &str = "/company/footer.typ";
/// Path of the company post-invoice snippet.
pub const POST_PATH: &str = "/company/post.typ";
/// Main file of invoices and corrective invoices.
pub const INVOICE_PATH: &str = "/templates/invoice.typ";
/// Main file of proformas.
pub const PROFORMA_PATH: &str = "/templates/proforma.typ";

/// Main file of business reports.
pub const REPORT_PATH: &str = "/templates/report.typ";

/// The templates, compiled into the binary.
const TEMPLATES: [(&str, &str); 4] = [
    (
        "/templates/common.typ",
        include_str!("../templates/common.typ"),
    ),
    (INVOICE_PATH, include_str!("../templates/invoice.typ")),
    (PROFORMA_PATH, include_str!("../templates/proforma.typ")),
    (REPORT_PATH, include_str!("../templates/report.typ")),
];

struct Fonts {
    book: LazyHash<FontBook>,
    fonts: Vec<Font>,
}

static FONTS: LazyLock<Fonts> = LazyLock::new(|| {
    let fonts: Vec<Font> = typst_assets::fonts()
        .flat_map(|data| Font::iter(Bytes::new(data)))
        .collect();
    Fonts {
        book: LazyHash::new(FontBook::from_fonts(&fonts)),
        fonts,
    }
});

/// No `sys.inputs`: data arrives as the `/data.json` file, so one library serves every render.
static LIBRARY: LazyLock<LazyHash<Library>> = LazyLock::new(|| LazyHash::new(Library::default()));

/// Our fixed paths, interned first and in a fixed order.
///
/// File ids are process-global numbers that end up in spans (and so in element locations).
/// No effect on the PDF bytes was observed, but interning ours before anything else makes
/// them the same in every process whatever ran before, at no cost.
static FIXED_IDS: LazyLock<()> = LazyLock::new(|| {
    let templates = TEMPLATES.iter().map(|(path, _)| *path);
    for path in [DATA_PATH, QR_PATH, FOOTER_PATH, POST_PATH]
        .into_iter()
        .chain(templates)
        .chain([FACTURX_PATH])
    {
        file_id(path);
    }
});

static SOURCES: LazyLock<HashMap<FileId, Source>> = LazyLock::new(|| {
    LazyLock::force(&FIXED_IDS);
    TEMPLATES
        .iter()
        .map(|(path, text)| {
            let id = file_id(path);
            (id, Source::new(id, (*text).to_owned()))
        })
        .collect()
});

/// The id of an absolute path in the (only) project root.
pub fn file_id(path: &str) -> FileId {
    let vpath = VirtualPath::new(path).expect("built-in paths are valid");
    RootedPath::new(VirtualRoot::Project, vpath).intern()
}

/// Builds the shared state eagerly, so the first render is not slower than the others.
pub fn warm_up() {
    LazyLock::force(&FIXED_IDS);
    LazyLock::force(&FONTS);
    LazyLock::force(&LIBRARY);
    LazyLock::force(&SOURCES);
}

/// One render's world.
pub struct Sandbox {
    main: FileId,
    sources: HashMap<FileId, Source>,
    files: HashMap<FileId, Bytes>,
    today: Option<Datetime>,
}

impl Sandbox {
    /// A world whose main file is the template at `main` and that knows no other file yet.
    pub fn new(main: &str, today: chrono::NaiveDate) -> Self {
        let month = u8::try_from(today.month()).ok();
        let day = u8::try_from(today.day()).ok();
        Self {
            main: file_id(main),
            sources: SOURCES.clone(),
            files: HashMap::new(),
            today: month
                .zip(day)
                .and_then(|(m, d)| Datetime::from_ymd(today.year(), m, d)),
        }
    }

    /// Adds a Typst source file (a company snippet).
    pub fn add_source(&mut self, path: &str, text: String) -> FileId {
        let id = file_id(path);
        self.sources.insert(id, Source::new(id, text));
        id
    }

    /// Adds a data file (the document JSON, the QR image).
    pub fn add_file(&mut self, path: &str, bytes: Vec<u8>) {
        self.files.insert(file_id(path), Bytes::new(bytes));
    }
}

fn denied(id: FileId) -> FileError {
    match id.root() {
        VirtualRoot::Package(_) => FileError::Other(Some(
            "packages are not available in invoice templates".into(),
        )),
        VirtualRoot::Project => FileError::Other(Some(
            format!(
                "{} is not available: invoice templates can only read their embedded files",
                id.vpath().get_with_slash()
            )
            .into(),
        )),
    }
}

impl World for Sandbox {
    fn library(&self) -> &LazyHash<Library> {
        &LIBRARY
    }

    fn book(&self) -> &LazyHash<FontBook> {
        &FONTS.book
    }

    fn main(&self) -> FileId {
        self.main
    }

    fn source(&self, id: FileId) -> FileResult<Source> {
        match self.sources.get(&id) {
            Some(source) => Ok(source.clone()),
            None if self.files.contains_key(&id) => Err(FileError::NotSource),
            None => Err(denied(id)),
        }
    }

    fn file(&self, id: FileId) -> FileResult<Bytes> {
        if let Some(bytes) = self.files.get(&id) {
            return Ok(bytes.clone());
        }
        match self.sources.get(&id) {
            Some(source) => Ok(Bytes::from_string(source.clone())),
            None => Err(denied(id)),
        }
    }

    fn font(&self, index: usize) -> Option<Font> {
        FONTS.fonts.get(index).cloned()
    }

    /// The issue date: `datetime.today()` in a snippet is reproducible and never reads the clock.
    fn today(&self, _offset: Option<Duration>) -> Option<Datetime> {
        self.today
    }
}
