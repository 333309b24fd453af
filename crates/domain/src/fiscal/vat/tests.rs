use super::*;

fn ok(id: &str) -> NormalizedVatId {
    validate_vat_id(id).unwrap_or_else(|e| panic!("{id}: {e}"))
}

#[test]
fn checksum_countries() {
    for id in [
        "DE136695976",
        "de 136 695 976",
        "IT00743110157",
        "BE0403019261",
        "NL004495445B01",
        "NL000099998B57",
        "PT501964843",
        "ESB58378431",
        "ES54362315K",
        "ESX2482300W",
    ] {
        assert!(ok(id).checksum_verified(), "{id}");
    }
    for id in [
        "DE136695977",
        "IT00743110158",
        "BE0403019262",
        "NL004495446B01",
        "PT501964844",
        "ESB58378432",
    ] {
        assert!(
            matches!(validate_vat_id(id), Err(FiscalIdError::VatChecksum(_))),
            "{id}"
        );
    }
}

#[test]
fn format_only_countries() {
    for id in [
        "ATU13585627",
        "BG123456789",
        "BG1234567890",
        "CY10259033P",
        "CZ12345678",
        "CZ1234567890",
        "DK13585628",
        "EE100931558",
        "EL094259216",
        "FI20774740",
        "FR40303265045",
        "FRK7399859412",
        "HR12345678901",
        "HU12892312",
        "IE6388047V",
        "IE3628739UA",
        "IE8Z49289F",
        "LT119511515",
        "LT100001919017",
        "LU15027442",
        "LV40003521600",
        "MT11679112",
        "PL8567346215",
        "RO18547290",
        "SE556188840401",
        "SI50223054",
        "SK2022749619",
        "XI123456789",
        "XIGD123",
    ] {
        let vat = ok(id);
        assert!(!vat.checksum_verified(), "{id}");
        assert_eq!(vat.as_str(), id);
    }
    assert_eq!(PREFIXES.len(), 28);
}

#[test]
fn prefixes_and_countries() {
    let gr = ok("GR 094259216");
    assert_eq!(gr.as_str(), "EL094259216");
    assert_eq!(gr.prefix(), "EL");
    assert_eq!(gr.number(), "094259216");
    assert_eq!(gr.country().as_str(), "GR");
    assert_eq!(ok("XI123456789").country().as_str(), "GB");
    assert_eq!(ok("FR40303265045").country().as_str(), "FR");
    for bad in ["US123456789", "GB123456789", "D", "123456789"] {
        assert!(
            matches!(
                validate_vat_id(bad),
                Err(FiscalIdError::UnknownVatPrefix(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(validate_vat_id(" "), Err(FiscalIdError::Empty));
}

#[test]
fn format_errors_say_what_is_expected() {
    let err = validate_vat_id("DE12345678").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`DE12345678` is not a valid DE VAT id; expected 9 digits after the DE prefix"
    );
    for bad in [
        "AT13585627",
        "BE2403019261",
        "CY102590331",
        "NL004495445C01",
        "FR4030326504",
        "IE63880470",
        "RO1",
        "XIAB123",
        "ESÑ5837843",
        "ES123456789",
    ] {
        assert!(
            matches!(validate_vat_id(bad), Err(FiscalIdError::VatFormat { .. })),
            "{bad}"
        );
    }
}
