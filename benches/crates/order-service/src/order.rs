//! The request line and the order it carries:
//! `POST /orders?id=000042&sku= ab-042x &qty=3`.

/// One order, as the client sent it.
pub struct Order {
    pub id: String,
    pub sku: String,
    pub quantity: u32,
}

/// The order in a request line, if the line is one.
pub fn parse(line: &str) -> Option<Order> {
    let query = line.trim_end().strip_prefix("POST /orders?")?;
    let (mut id, mut sku, mut quantity) = (None, None, None);
    for field in query.split('&') {
        match field.split_once('=')? {
            ("id", value) => id = Some(value.to_owned()),
            ("sku", value) => sku = Some(value.to_owned()),
            ("qty", value) => quantity = value.parse().ok(),
            _ => return None,
        }
    }
    Some(Order {
        id: id?,
        sku: sku?,
        quantity: quantity?,
    })
}

/// The SKU in the shop's form: trimmed and upper case.
pub fn normalize_sku(raw: &str) -> String {
    let sku = raw.trim().to_ascii_uppercase();
    sku
}
