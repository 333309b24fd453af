//! The rules of the tax engine, one test per rule, citing Directive 2006/112/EC.

use super::*;

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn party(country: &str, is_business: bool, has_vies_vat_id: bool) -> Party {
    Party {
        country: CountryCode::parse(country).unwrap(),
        is_business,
        has_vies_vat_id,
    }
}

/// An EU-registered business issuer.
fn company(country: &str) -> Issuer {
    Issuer {
        party: party(country, true, true),
        is_spanish_autonomo: false,
    }
}

fn autonomo() -> Issuer {
    Issuer {
        party: party("ES", true, true),
        is_spanish_autonomo: true,
    }
}

fn b2b_vies(country: &str) -> Party {
    party(country, true, true)
}

fn consumer(country: &str) -> Party {
    party(country, false, false)
}

fn lines(subtotals: &[i64]) -> Vec<TaxableLine> {
    subtotals
        .iter()
        .map(|&subtotal_minor| TaxableLine {
            subtotal_minor,
            is_tax: false,
        })
        .collect()
}

fn compute(
    issuer: &Issuer,
    recipient: &Party,
    supply: SupplyType,
    subtotals: &[i64],
) -> TaxComputation {
    compute_taxes(issuer, recipient, supply, &lines(subtotals)).unwrap()
}

/// Arts. 2(1)(a) and (c), 96 and 97: a supply within one member state bears its standard rate.
#[test]
fn domestic_spain_21_percent() {
    let c = compute(
        &company("ES"),
        &b2b_vies("ES"),
        SupplyType::Services,
        &[10_000, 1_250],
    );
    assert_eq!(c.treatment, Treatment::Domestic { rate: d("21") });
    assert_eq!(c.treatment.code(), "domestic");
    assert_eq!(c.lines.len(), 2);
    assert_eq!(c.lines[0].amount_minor, 2_100);
    assert_eq!(c.lines[1].amount_minor, 262); // 262.5 -> 262, half-even
    assert_eq!(
        (c.net_minor, c.vat_minor, c.withholding_minor),
        (11_250, 2_362, 0)
    );
    assert_eq!(c.total_minor, 13_612);
    assert_eq!(c.treatment.legal_mention("es"), None);
    // Goods and consumers change nothing within one state.
    let goods = determine_treatment(&company("ES").party, &consumer("ES"), SupplyType::Goods);
    assert_eq!(goods, Treatment::Domestic { rate: d("21") });
}

/// Art. 96: Finland's 25.5 % standard rate; the fraction is rounded half-even per line.
#[test]
fn domestic_finland_fractional_rate() {
    let c = compute(
        &company("FI"),
        &consumer("FI"),
        SupplyType::Goods,
        &[300, 100, 10],
    );
    assert_eq!(c.treatment.vat_rate(), Some(d("25.5")));
    let amounts: Vec<i64> = c.lines.iter().map(|l| l.amount_minor).collect();
    // 76.5 -> 76, 25.5 -> 26, 2.55 -> 3
    assert_eq!(amounts, [76, 26, 3]);
    assert_eq!(c.vat_minor, 105);
    assert_eq!(c.total_minor, 515);
}

/// Art. 44 (place of supply of B2B services is the recipient's state) and art. 196 (recipient liable).
#[test]
fn intra_eu_b2b_services_reverse_charge() {
    let c = compute(
        &company("ES"),
        &b2b_vies("DE"),
        SupplyType::Services,
        &[50_000],
    );
    assert_eq!(c.treatment, Treatment::IntraEuReverseCharge);
    assert_eq!(c.treatment.code(), "reverse_charge");
    assert_eq!(
        c.lines.len(),
        1,
        "a zero-rate line is kept for the breakdown"
    );
    assert_eq!(
        (c.lines[0].rate, c.lines[0].amount_minor),
        (Decimal::ZERO, 0)
    );
    assert_eq!(c.total_minor, 50_000);
    assert_eq!(
        c.treatment.legal_mention("en"),
        Some(
            "Reverse charge: VAT to be accounted for by the recipient (Article 196 of Directive 2006/112/EC)"
        )
    );
    assert_eq!(
        c.treatment.legal_mention("es_ES"),
        Some("Inversión del sujeto pasivo (art. 196 Directiva 2006/112/CE)")
    );
}

/// Art. 138(1): goods dispatched to a VAT-identified taxable person in another member state are exempt.
#[test]
fn intra_eu_b2b_goods_exempt() {
    let c = compute(
        &company("DE"),
        &b2b_vies("FR"),
        SupplyType::Goods,
        &[20_000],
    );
    assert_eq!(c.treatment, Treatment::IntraEuExemptSupply);
    assert_eq!(c.vat_minor, 0);
    assert_eq!(c.lines[0].treatment.code(), "intra_eu_exempt");
    assert!(
        c.treatment
            .legal_mention("en")
            .unwrap()
            .contains("Article 138")
    );
    assert_eq!(
        c.treatment.legal_mention("es"),
        Some("Entrega intracomunitaria exenta (art. 25 Ley 37/1992)")
    );
}

/// Art. 45 (B2C services: supplier's state) and art. 32/33 with art. 59c (distance sales below the threshold).
#[test]
fn intra_eu_b2c_issuer_vat() {
    let c = compute(
        &company("ES"),
        &consumer("FR"),
        SupplyType::Services,
        &[10_000],
    );
    assert_eq!(c.treatment, Treatment::IntraEuB2c { rate: d("21") });
    assert_eq!(c.vat_minor, 2_100);
    assert_eq!(c.treatment.legal_mention("en"), None);
    let goods = determine_treatment(&company("IT").party, &consumer("AT"), SupplyType::Goods);
    assert_eq!(goods, Treatment::IntraEuB2c { rate: d("22") });
}

/// Arts. 138 and 196 need a VAT-identified recipient: a business without a VIES id is taxed as a consumer.
#[test]
fn intra_eu_business_without_vies_id_is_b2c() {
    let no_vies = party("DE", true, false);
    for supply in [SupplyType::Services, SupplyType::Goods] {
        let t = determine_treatment(&company("ES").party, &no_vies, supply);
        assert_eq!(t, Treatment::IntraEuB2c { rate: d("21") });
    }
}

/// Art. 146(1)(a): goods dispatched outside the EU are exempt, to businesses and consumers alike.
#[test]
fn export_goods_exempt() {
    for recipient in [party("US", true, false), consumer("CH")] {
        let c = compute(&company("ES"), &recipient, SupplyType::Goods, &[99_999]);
        assert_eq!(c.treatment, Treatment::ExportExempt);
        assert_eq!(c.treatment.code(), "export_exempt");
        assert_eq!((c.vat_minor, c.total_minor), (0, 99_999));
        assert_eq!(
            c.treatment.legal_mention("es"),
            Some("Exportación exenta (art. 21 Ley 37/1992)")
        );
    }
}

/// Art. 44: B2B services are supplied where the recipient is established, here outside the EU.
#[test]
fn services_to_non_eu_business_not_subject() {
    let c = compute(
        &company("FR"),
        &party("GB", true, false),
        SupplyType::Services,
        &[10_000],
    );
    assert_eq!(c.treatment, Treatment::NotSubjectOutsideEu);
    assert_eq!(c.treatment.code(), "not_subject");
    assert_eq!(c.vat_minor, 0);
    assert!(
        c.treatment
            .legal_mention("en")
            .unwrap()
            .contains("Article 44")
    );
    assert_eq!(
        c.treatment.legal_mention("es"),
        Some("Operación no sujeta (art. 69 Ley 37/1992)")
    );
}

/// Art. 45: B2C services are supplied where the supplier is established (art. 59 exceptions out of scope).
#[test]
fn services_to_non_eu_consumer_issuer_vat() {
    let c = compute(
        &company("ES"),
        &consumer("US"),
        SupplyType::Services,
        &[10_000],
    );
    assert_eq!(
        c.treatment,
        Treatment::OutsideEuB2cServices { rate: d("21") }
    );
    assert_eq!(c.treatment.code(), "outside_eu_b2c");
    assert_eq!(c.vat_minor, 2_100);
}

/// Art. 2(1) only taxes supplies within a member state: a non-EU issuer charges no EU VAT.
#[test]
fn non_eu_issuer_no_vat() {
    let issuer = Issuer {
        party: party("US", true, false),
        is_spanish_autonomo: false,
    };
    for recipient in [b2b_vies("ES"), consumer("US"), consumer("DE")] {
        let c = compute(&issuer, &recipient, SupplyType::Services, &[10_000]);
        assert_eq!(c.treatment, Treatment::NoVat);
        assert!(c.lines.is_empty());
        assert_eq!(
            (c.net_minor, c.vat_minor, c.total_minor),
            (10_000, 0, 10_000)
        );
        assert_eq!(c.treatment.vat_rate(), None);
    }
}

/// Art. 101.5 Ley 35/2006: a Spanish autónomo's services to a Spanish business withhold 15 % IRPF.
#[test]
fn irpf_for_spanish_autonomo_to_spanish_business() {
    let c = compute(
        &autonomo(),
        &party("ES", true, false),
        SupplyType::Services,
        &[100_000, 333],
    );
    assert_eq!(c.lines.len(), 4);
    let withholding: Vec<&TaxLine> = c
        .lines
        .iter()
        .filter(|l| l.kind == TaxKind::Withholding)
        .collect();
    assert_eq!(withholding.len(), 2);
    assert_eq!(withholding[0].rate, d("-15"));
    assert_eq!(withholding[0].amount_minor, -15_000);
    assert_eq!(withholding[1].amount_minor, -50); // -49.95 -> -50
    assert_eq!(withholding[1].line_index, 1);
    assert_eq!(c.vat_minor, 21_000 + 70); // 69.93 -> 70
    assert_eq!(c.withholding_minor, -15_050);
    assert_eq!(c.total_minor, 100_333 + 21_070 - 15_050);
}

/// IRPF withholding is owed only by businesses in Spain paying for professional services.
#[test]
fn no_irpf_to_consumer_foreign_business_goods_or_company() {
    let cases = [
        (autonomo(), consumer("ES"), SupplyType::Services),
        (autonomo(), b2b_vies("DE"), SupplyType::Services),
        (autonomo(), party("US", true, false), SupplyType::Services),
        (autonomo(), b2b_vies("ES"), SupplyType::Goods),
        (company("ES"), b2b_vies("ES"), SupplyType::Services),
    ];
    for (issuer, recipient, supply) in cases {
        let c = compute(&issuer, &recipient, supply, &[10_000]);
        assert_eq!(c.withholding_minor, 0, "{recipient:?} {supply:?}");
        assert!(c.lines.iter().all(|l| l.kind == TaxKind::Vat));
    }
}

#[test]
fn explicit_tax_lines_are_skipped_and_indices_kept() {
    let input = [
        TaxableLine {
            subtotal_minor: 1_000,
            is_tax: false,
        },
        TaxableLine {
            subtotal_minor: 500,
            is_tax: true,
        },
        TaxableLine {
            subtotal_minor: 2_000,
            is_tax: false,
        },
    ];
    let c = compute_taxes(
        &company("ES"),
        &consumer("ES"),
        SupplyType::Services,
        &input,
    )
    .unwrap();
    let indices: Vec<usize> = c.lines.iter().map(|l| l.line_index).collect();
    assert_eq!(indices, [0, 2]);
    assert_eq!(c.net_minor, 3_000);
}

#[test]
fn negative_lines_round_half_even() {
    // Corrective lines: -1250 at 21 % is -262.5 -> -262.
    let c = compute(
        &company("ES"),
        &consumer("ES"),
        SupplyType::Services,
        &[-1_250, -1_150],
    );
    let amounts: Vec<i64> = c.lines.iter().map(|l| l.amount_minor).collect();
    assert_eq!(amounts, [-262, -242]);
}

#[test]
fn overflow_is_an_error() {
    let err = compute_taxes(
        &company("ES"),
        &consumer("ES"),
        SupplyType::Services,
        &lines(&[i64::MAX]),
    );
    assert_eq!(err, Err(TaxError::Money(MoneyError::Overflow)));
    let err = compute_taxes(
        &company("US"),
        &consumer("US"),
        SupplyType::Services,
        &lines(&[i64::MAX, 1]),
    );
    assert_eq!(err, Err(TaxError::Money(MoneyError::Overflow)));
}

#[test]
fn codes_round_trip() {
    let rate = d("21");
    let all = [
        Treatment::Domestic { rate },
        Treatment::IntraEuReverseCharge,
        Treatment::IntraEuExemptSupply,
        Treatment::IntraEuB2c { rate },
        Treatment::ExportExempt,
        Treatment::NotSubjectOutsideEu,
        Treatment::OutsideEuB2cServices { rate },
        Treatment::NoVat,
    ];
    for (t, code) in all.iter().zip(Treatment::CODES) {
        assert_eq!(t.code(), code);
        assert_eq!(Treatment::from_code(code, rate), Some(*t));
    }
    assert_eq!(Treatment::from_code("vat", rate), None);
    // Unknown languages fall back to English.
    assert_eq!(
        Treatment::ExportExempt.legal_mention("fr"),
        Treatment::ExportExempt.legal_mention("en")
    );
}

#[test]
fn business_rule() {
    let individual = EntityType::parse("ES:Particular").unwrap();
    let company = EntityType::parse("ES:SL").unwrap();
    assert!(!is_business(false, false, &individual));
    assert!(is_business(true, false, &individual));
    assert!(is_business(false, true, &individual));
    assert!(is_business(false, false, &company));
}

#[test]
fn supply_type_codes() {
    assert_eq!(SupplyType::default(), SupplyType::Services);
    assert_eq!(SupplyType::from_code(" Goods "), Some(SupplyType::Goods));
    assert_eq!(
        SupplyType::from_code("services").map(|s| s.code()),
        Some("services")
    );
    assert_eq!(SupplyType::from_code("both"), None);
}
