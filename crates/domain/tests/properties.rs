//! Property tests of the money rules: whatever the lines, the tax engine
//! either answers with totals that add up exactly or refuses with an error;
//! it never panics and never wraps around; a full reversal mirrors the
//! original to the minor unit; reference formats number documents uniquely.

use std::str::FromStr;

use domain::{
    country::CountryCode,
    invoice::{LineError, LineInput, TaxContext, compute, reversed, totals},
    reference::ReferenceFormat,
    tax::{Issuer, Party, SupplyType},
};
use proptest::prelude::*;
use rust_decimal::Decimal;

const COUNTRIES: &[&str] = &["ES", "IE", "DE", "FR", "PT", "IT", "NL", "GB", "US", "JP"];

fn party() -> impl Strategy<Value = Party> {
    (
        proptest::sample::select(COUNTRIES),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(c, is_business, has_vies_vat_id)| Party {
            country: CountryCode::parse(c).expect("listed country"),
            is_business,
            has_vies_vat_id,
        })
}

fn context() -> impl Strategy<Value = TaxContext> {
    (party(), any::<bool>(), party(), any::<bool>()).prop_map(
        |(issuer, autonomo, recipient, goods)| TaxContext {
            issuer: Issuer {
                party: issuer,
                is_spanish_autonomo: autonomo,
            },
            recipient,
            supply: if goods {
                SupplyType::Goods
            } else {
                SupplyType::Services
            },
        },
    )
}

/// Amounts from everyday to the edge of `i64`.
fn amount() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -1_000_000_000i64..1_000_000_000,
        1 => any::<i64>(),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

fn line(bounded: bool) -> impl Strategy<Value = LineInput> {
    let price = if bounded {
        (-100_000_000i64..100_000_000).boxed()
    } else {
        amount().boxed()
    };
    (
        "[A-Za-z0-9][A-Za-z0-9 ]{0,19}",
        if bounded {
            -1_000i64..1_000
        } else {
            -100_000i64..100_000
        },
        0u32..4,
        price,
        proptest::option::of(if bounded {
            (-100_000_000i64..100_000_000).boxed()
        } else {
            amount().boxed()
        }),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(concept, q, scale, unit_price, subtotal, is_tax)| LineInput {
                concept,
                quantity: Decimal::new(q, scale),
                quantity_unit: None,
                unit_price,
                unit_unit: None,
                is_tax,
                tax_amount: None,
                subtotal: if is_tax {
                    subtotal.or(Some(unit_price))
                } else {
                    subtotal
                },
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn totals_add_up_or_the_lines_are_refused(
        lines in proptest::collection::vec(line(false), 1..12),
        ctx in proptest::option::of(context()),
    ) {
        match compute(&lines, ctx.as_ref()) {
            Ok((computed, t)) => {
                let net: i128 = computed.iter().filter(|l| !l.is_tax).map(|l| i128::from(l.subtotal)).sum();
                prop_assert_eq!(i128::from(t.net), net);
                prop_assert_eq!(i128::from(t.total), i128::from(t.net) + i128::from(t.tax) + i128::from(t.withholding));
                for l in &computed {
                    if !l.tax_lines.is_empty() {
                        let sum: i128 = l.tax_lines.iter().map(|x| i128::from(x.amount)).sum();
                        prop_assert_eq!(l.tax_amount.map(i128::from), Some(sum));
                    }
                }
                prop_assert_eq!(totals(&computed), Ok(t));
            }
            Err(LineError::Overflow | LineError::Amount(..) | LineError::Quantity(_) | LineError::NoRate(_)) => {}
            Err(other) => prop_assert!(false, "unexpected refusal {other:?} for {lines:?}"),
        }
    }

    #[test]
    fn everyday_amounts_are_always_accepted_and_reversals_mirror_them(
        lines in proptest::collection::vec(line(true), 1..40),
        ctx in proptest::option::of(context()),
    ) {
        let (computed, t) = match compute(&lines, ctx.as_ref()) {
            Ok(x) => x,
            Err(LineError::NoRate(_)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
        };
        let back = totals(&reversed(&computed)).expect("a reversal of valid lines sums");
        prop_assert_eq!(back.net, -t.net);
        prop_assert_eq!(back.tax, -t.tax);
        prop_assert_eq!(back.withholding, -t.withholding);
        prop_assert_eq!(back.total, -t.total);
    }

    #[test]
    fn any_reference_format_parses_or_is_refused_without_panicking(source in ".{0,80}") {
        if let Ok(f) = ReferenceFormat::parse(&source) {
            prop_assert!(!f.render(2026, 1).is_empty());
        }
    }

    #[test]
    fn numbers_never_share_a_reference(
        prefix in "[A-Z/-]{0,4}",
        middle in "[A-Z/-]{0,3}",
        with_year in any::<bool>(),
        pad in proptest::option::of(0u32..=12),
        year in 1990i64..2100,
    ) {
        let number = match pad { Some(p) => format!("{{number:{p}}}"), None => "{number}".to_owned() };
        let source = if with_year { format!("{prefix}{{year}}{middle}{number}") } else { format!("{prefix}{middle}{number}") };
        let format = ReferenceFormat::parse(&source).expect("generated formats are valid");
        let mut seen = std::collections::HashSet::new();
        for n in 1..=400 {
            let r = format.render(year, n);
            if with_year {
                prop_assert!(r.contains(&year.to_string()), "{r}");
            }
            prop_assert!(seen.insert(r.clone()), "{source}: {r} twice");
        }
    }
}

#[test]
fn a_sum_past_i64_is_an_error_not_a_wrap() {
    let big = LineInput {
        concept: "big".into(),
        quantity: Decimal::from_str("1").expect("decimal"),
        quantity_unit: None,
        unit_price: 0,
        unit_unit: None,
        is_tax: false,
        tax_amount: None,
        subtotal: Some(i64::MAX / 2 + 1),
    };
    let refused = compute(&[big.clone(), big], None);
    assert!(refused.is_err(), "{refused:?}");
}
