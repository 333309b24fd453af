use super::*;
use SpanishTaxIdKind::*;

fn cc(code: &str) -> CountryCode {
    CountryCode::parse(code).unwrap()
}

#[test]
fn spanish_nif_and_nie() {
    assert_eq!(validate_spanish_tax_id("12345678Z"), Ok(Nif));
    assert_eq!(validate_spanish_tax_id("00000000T"), Ok(Nif));
    assert_eq!(validate_spanish_tax_id(" 54362315-k "), Ok(Nif));
    assert_eq!(validate_spanish_tax_id("ES54362315K"), Ok(Nif));
    assert_eq!(validate_spanish_tax_id("X2482300W"), Ok(Nie));
    assert_eq!(validate_spanish_tax_id("x-2482300-w"), Ok(Nie));
    assert_eq!(validate_spanish_tax_id("Y1234567X"), Ok(Nie));
    assert_eq!(validate_spanish_tax_id("Z1234567R"), Ok(Nie));
    assert_eq!(validate_spanish_tax_id("K1234567L"), Ok(Nif));
    assert_eq!(
        validate_spanish_tax_id("12345678A"),
        Err(FiscalIdError::SpanishControl("12345678A".into()))
    );
    assert_eq!(
        validate_spanish_tax_id("X2482300A"),
        Err(FiscalIdError::SpanishControl("X2482300A".into()))
    );
}

#[test]
fn spanish_cif() {
    assert_eq!(validate_spanish_tax_id("B58378431"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("es b-58.378.431"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("A58818501"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("J99216582"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("Q2826000H"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("S2800568D"), Ok(Cif));
    // C, D, F, G, J, U, V accept either form of the same control.
    assert_eq!(validate_spanish_tax_id("G12345674"), Ok(Cif));
    assert_eq!(validate_spanish_tax_id("G1234567D"), Ok(Cif));
    assert_eq!(
        validate_spanish_tax_id("B58378432"),
        Err(FiscalIdError::SpanishControl("B58378432".into()))
    );
    assert!(matches!(
        validate_spanish_tax_id("B5837843A"),
        Err(FiscalIdError::CifControlKind {
            expected: "digit",
            ..
        })
    ));
    assert!(matches!(
        validate_spanish_tax_id("Q28260008"),
        Err(FiscalIdError::CifControlKind {
            expected: "letter",
            ..
        })
    ));
}

#[test]
fn spanish_format_errors() {
    assert_eq!(validate_spanish_tax_id("  - "), Err(FiscalIdError::Empty));
    for bad in [
        "1234567Z",
        "123456789",
        "I1234567A",
        "B123456",
        "ÑB5837843",
        "B58378431X",
    ] {
        assert!(
            matches!(
                validate_spanish_tax_id(bad),
                Err(FiscalIdError::SpanishFormat(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn fiscal_id_spain_uses_the_checksum() {
    assert_eq!(
        validate_fiscal_id(cc("ES"), "ES B58378431").unwrap(),
        "B58378431"
    );
    assert_eq!(
        validate_fiscal_id(cc("es"), "12345678-z").unwrap(),
        "12345678Z"
    );
    assert!(validate_fiscal_id(cc("ES"), "B58378432").is_err());
    // Spain has no free-form fallback.
    assert!(validate_fiscal_id(cc("ES"), "ABC123").is_err());
}

#[test]
fn fiscal_id_other_eu_states() {
    let de = cc("DE");
    assert_eq!(
        validate_fiscal_id(de, "DE 136 695 976").unwrap(),
        "DE136695976"
    );
    assert_eq!(validate_fiscal_id(de, "136695976").unwrap(), "136695976");
    // VAT-shaped but wrong check digit: a typo, not a national id.
    assert_eq!(
        validate_fiscal_id(de, "136695977"),
        Err(FiscalIdError::VatChecksum("136695977".into()))
    );
    // Not VAT-shaped: a national id such as a register number.
    assert_eq!(validate_fiscal_id(de, "HRB 12345").unwrap(), "HRB12345");
    assert_eq!(
        validate_fiscal_id(cc("IT"), "RSSMRA85T10A562S").unwrap(),
        "RSSMRA85T10A562S"
    );
    assert_eq!(
        validate_fiscal_id(cc("GR"), "EL094259216").unwrap(),
        "EL094259216"
    );
    assert_eq!(
        validate_fiscal_id(cc("GR"), "094259216").unwrap(),
        "094259216"
    );
    assert!(matches!(
        validate_fiscal_id(de, "X"),
        Err(FiscalIdError::EuFreeForm { .. })
    ));
    assert!(validate_fiscal_id(de, "12/345/67890").is_err());
    assert!(validate_fiscal_id(de, &"1".repeat(33)).is_err());
    assert_eq!(validate_fiscal_id(de, " . "), Err(FiscalIdError::Empty));
}

#[test]
fn fiscal_id_outside_the_eu() {
    let us = cc("US");
    assert_eq!(
        validate_fiscal_id(us, " 12-3456789 ").unwrap(),
        "12-3456789"
    );
    assert_eq!(
        validate_fiscal_id(cc("CH"), "che-123.456.789   mwst").unwrap(),
        "CHE-123.456.789 MWST"
    );
    assert_eq!(
        validate_fiscal_id(cc("GB"), "GB123456789").unwrap(),
        "GB123456789"
    );
    assert!(matches!(
        validate_fiscal_id(us, "a"),
        Err(FiscalIdError::ForeignFreeForm(_))
    ));
    assert!(validate_fiscal_id(us, "12_345").is_err());
    assert!(validate_fiscal_id(us, &"9".repeat(33)).is_err());
    assert_eq!(validate_fiscal_id(us, "   "), Err(FiscalIdError::Empty));
}

#[test]
fn error_messages_say_how_to_fix() {
    assert_eq!(
        validate_spanish_tax_id("B58378432")
            .unwrap_err()
            .to_string(),
        "`B58378432` has a wrong control character; check the Spanish tax id for typos"
    );
    assert_eq!(
        validate_spanish_tax_id("B5837843A")
            .unwrap_err()
            .to_string(),
        "`B5837843A` must end with a control digit for organisations of type B; check the CIF for typos"
    );
    assert!(matches!(
        validate_spanish_tax_id("B5837843*"),
        Err(FiscalIdError::SpanishFormat(_))
    ));
}
