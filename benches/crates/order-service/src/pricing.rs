//! What an order costs: a unit price from the SKU, a volume discount per
//! line.

/// An order's price, line by line.
pub struct Quote {
    pub unit: u64,
    pub lines: Vec<u64>,
    pub total: u64,
}

pub fn price(sku: &str, quantity: u32) -> Quote {
    let unit = unit_price(sku);
    let lines: Vec<u64> = (0..quantity).map(|i| discounted(unit, i)).collect();
    let total = lines.iter().sum();
    Quote { unit, lines, total }
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
