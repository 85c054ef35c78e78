//! What an order costs: a unit price from the SKU, a volume discount per
//! unit.

use serde::{Deserialize, Serialize};

/// An order, as the client sends it.
#[derive(Deserialize)]
pub struct Order {
    pub id: String,
    pub sku: String,
    pub quantity: u32,
}

/// What the service answers: the order priced, unit by unit.
#[derive(Serialize)]
pub struct Receipt {
    pub id: String,
    pub sku: String,
    pub quantity: u32,
    pub unit: u64,
    pub total: u64,
    pub lines: Vec<u64>,
}

/// The SKU in the shop's form: trimmed and upper case.
pub fn normalize_sku(raw: &str) -> String {
    raw.trim().to_ascii_uppercase()
}

pub fn price(order: Order) -> Receipt {
    let sku = normalize_sku(&order.sku);
    let unit = unit_price(&sku);
    let lines: Vec<u64> = (0..order.quantity).map(|i| discounted(unit, i)).collect();
    let total = lines.iter().sum();
    Receipt {
        id: order.id,
        sku,
        quantity: order.quantity,
        unit,
        total,
        lines,
    }
}

/// The catalogue's price of a SKU, in cents.
fn unit_price(sku: &str) -> u64 {
    let hash = sku
        .bytes()
        .fold(17u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    100 + hash % 10_000
}

/// The `i`th unit's price: 5 % off each unit past the first, up to 15 %.
fn discounted(unit: u64, i: u32) -> u64 {
    unit - unit * u64::from(i.min(3)) / 20
}
