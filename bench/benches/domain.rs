//! Micro-benchmarks of the pure rules: pricing a document and rendering a reference.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use domain::{
    country::CountryCode,
    invoice::{LineInput, TaxContext, compute},
    reference::ReferenceFormat,
    tax::{Issuer, Party, SupplyType},
};
use rust_decimal::Decimal;

fn lines(n: usize) -> Vec<LineInput> {
    (0..n)
        .map(|i| LineInput {
            concept: format!("Line {i}"),
            quantity: Decimal::new(15, 1),
            quantity_unit: Some("h".into()),
            unit_price: 10_000 + i as i64,
            unit_unit: None,
            is_tax: false,
            tax_amount: None,
            subtotal: None,
        })
        .collect()
}

fn pricing(c: &mut Criterion) {
    let es = CountryCode::parse("ES").expect("ES");
    let ctx = TaxContext {
        issuer: Issuer {
            party: Party {
                country: es,
                is_business: true,
                has_vies_vat_id: true,
            },
            is_spanish_autonomo: true,
        },
        recipient: Party {
            country: es,
            is_business: true,
            has_vies_vat_id: false,
        },
        supply: SupplyType::Services,
    };
    let ten = lines(10);
    let five_hundred = lines(500);
    c.bench_function("price 10 lines (VAT + IRPF)", |b| {
        b.iter(|| compute(black_box(&ten), Some(&ctx)))
    });
    c.bench_function("price 500 lines (VAT + IRPF)", |b| {
        b.iter(|| compute(black_box(&five_hundred), Some(&ctx)))
    });
    let format = ReferenceFormat::parse("INV-{year}-{number:6}").expect("format");
    c.bench_function("render reference", |b| {
        b.iter(|| format.render(black_box(2026), black_box(123_456)))
    });
}

criterion_group!(benches, pricing);
criterion_main!(benches);
