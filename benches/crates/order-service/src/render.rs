//! The answer, as one JSON line.

use crate::order::Order;
use crate::pricing::Quote;
use std::fmt::Write;

pub fn answer(order: &Order, sku: &str, quote: &Quote) -> String {
    let mut out = String::with_capacity(160);
    let _ = write!(
        out,
        "{{\"id\":\"{}\",\"sku\":\"{sku}\",\"quantity\":{},\"unit\":{},\"total\":{},\"lines\":[",
        order.id, order.quantity, quote.unit, quote.total
    );
    for (i, line) in quote.lines.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{line}");
    }
    out.push_str("]}\n");
    out
}

pub fn error(message: &str) -> String {
    format!("{{\"error\":\"{message}\"}}\n")
}
