use super::*;
use crate::chain::encadenar_alta;
use crate::testutil::{f1_nacional, madrid};

fn url(
    entorno: Entorno,
    modalidad: Modalidad,
    numserie: &str,
    fecha: &str,
    importe: Decimal,
) -> String {
    url_cotejo(
        entorno,
        modalidad,
        &Nif::new("89890001K").unwrap(),
        &NumSerie::new(numserie).unwrap(),
        fecha.parse().unwrap(),
        importe,
    )
    .unwrap()
}

/// Section 4: parameters nif 89890001K, numserie 12345678&G33, fecha
/// 01-01-2024, importe 241.4 in the external test environment.
#[test]
fn aeat_url_encoding_example() {
    let u = url(
        Entorno::Pruebas,
        Modalidad::Verifactu,
        "12345678&G33",
        "01-01-2024",
        Decimal::new(2414, 1),
    );
    assert_eq!(
        u,
        "https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR?nif=89890001K&numserie=12345678%26G33&fecha=01-01-2024&importe=241.4"
    );
    // The document's "erroneous" URL is the same without encoding `&`.
    assert_ne!(
        u,
        "https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR?nif=89890001K&numserie=12345678&G33&fecha=01-01-2024&importe=241.4"
    );
}

/// Section 8: the four example URLs.
#[test]
fn aeat_example_urls_8_1_to_8_4() {
    let i = Decimal::new(2414, 1);
    let q = "nif=89890001K&numserie=12345678-G33&fecha=01-09-2024&importe=241.4";
    assert_eq!(
        url(
            Entorno::Pruebas,
            Modalidad::Verifactu,
            "12345678-G33",
            "01-09-2024",
            i
        ),
        format!("https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQR?{q}")
    );
    assert_eq!(
        url(
            Entorno::Pruebas,
            Modalidad::NoVerifactu,
            "12345678-G33",
            "01-09-2024",
            i
        ),
        format!("https://prewww2.aeat.es/wlpl/TIKE-CONT/ValidarQRNoVerifactu?{q}")
    );
    assert_eq!(
        url(
            Entorno::Produccion,
            Modalidad::Verifactu,
            "12345678-G33",
            "01-09-2024",
            i
        ),
        format!("https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQR?{q}")
    );
    assert_eq!(
        url(
            Entorno::Produccion,
            Modalidad::NoVerifactu,
            "12345678-G33",
            "01-09-2024",
            i
        ),
        format!("https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQRNoVerifactu?{q}")
    );
}

#[test]
fn record_url_uses_importe_total_with_two_decimals() {
    let (r, _) = encadenar_alta(
        f1_nacional("2025/0001", "15-01-2025"),
        None,
        madrid(2025, 1, 15, 9, 0, 0),
    )
    .unwrap();
    assert_eq!(
        url_cotejo_registro(&r, Entorno::Produccion).unwrap(),
        "https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQR?nif=89890001K&numserie=2025%2F0001&fecha=15-01-2025&importe=121.00"
    );
}

#[test]
fn parameter_encoding() {
    assert_eq!(
        codificar_parametro("A 1/2?x=y#z+%"),
        "A%201%2F2%3Fx%3Dy%23z%2B%25"
    );
    assert_eq!(codificar_parametro("aZ09-._~"), "aZ09-._~");
    assert_eq!(codificar_parametro("ñ"), "%C3%B1");
}

#[test]
fn importe_limits() {
    assert!(texto_importe(Decimal::new(-2414, 2)).is_ok());
    assert_eq!(texto_importe(Decimal::new(100, 0)).unwrap(), "100");
    assert!(matches!(
        texto_importe(Decimal::new(1, 3)),
        Err(QrError::Importe(_))
    ));
    assert!(texto_importe(Decimal::new(99_999_999_999_999, 2)).is_ok());
    assert!(texto_importe(Decimal::new(100_000_000_000_000, 2)).is_err());
}

/// Rasterises the SVG produced by `qr_svg` (the `M x y h w v h H x V y`
/// rectangles of its path) so a QR decoder can read it back.
fn rasterizar(svg: &str) -> (usize, Vec<bool>) {
    let attr = |name: &str| -> usize {
        let start = svg.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        let end = start + svg[start..].find('"').unwrap();
        svg[start..end].parse().unwrap()
    };
    let (w, h) = (attr("width"), attr("height"));
    assert_eq!(w, h);
    let mut dark = vec![false; w * h];
    let d_start = svg.find(" d=\"").unwrap() + 4;
    let d = &svg[d_start..d_start + svg[d_start..].find('"').unwrap()];
    for rect in d.split('M').filter(|s| !s.is_empty()) {
        let nums: Vec<usize> = rect
            .split(|c: char| c.is_ascii_alphabetic() || c == ' ')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let [x, y, rw, rh, ..] = nums[..] else {
            panic!("bad rect {rect}")
        };
        for yy in y..y + rh {
            for xx in x..x + rw {
                dark[yy * w + xx] = true;
            }
        }
    }
    (w, dark)
}

fn decodificar(svg: &str) -> (String, u16) {
    let (w, dark) = rasterizar(svg);
    let mut img =
        rqrr::PreparedImage::prepare_from_greyscale(
            w,
            w,
            |x, y| if dark[y * w + x] { 0 } else { 255 },
        );
    let grids = img.detect_grids();
    assert_eq!(grids.len(), 1);
    let (meta, content) = grids[0].decode().unwrap();
    (content, meta.ecc_level)
}

#[test]
fn svg_decodes_back_to_the_url_with_level_m() {
    let u = url(
        Entorno::Produccion,
        Modalidad::Verifactu,
        "12345678&G33",
        "01-01-2024",
        Decimal::new(24140, 2),
    );
    let svg = qr_svg(&u, 300).unwrap();
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(codigo_qr(&u).unwrap().error_correction_level(), EcLevel::M);
    let (content, ecc) = decodificar(&svg);
    assert_eq!(content, u);
    // Format bits: L = 01, M = 00, Q = 11, H = 10; cross-check with level L.
    assert_eq!(ecc, 0);
    let low = QrCode::with_error_correction_level(u.as_bytes(), EcLevel::L).unwrap();
    let low_svg = low
        .render::<svg::Color<'_>>()
        .min_dimensions(300, 300)
        .build();
    assert_eq!(decodificar(&low_svg).1, 1);
}

#[test]
fn svg_has_at_least_the_requested_size() {
    let svg = qr_svg(
        "https://www2.agenciatributaria.gob.es/wlpl/TIKE-CONT/ValidarQR?nif=1",
        400,
    )
    .unwrap();
    let (w, _) = rasterizar(&svg);
    assert!(w >= 400);
}
