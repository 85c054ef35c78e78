//! The receipt store: `GET /orders/{id}` answers from it, and a retried
//! order gets the receipt it got before. It never evicts, so every order's
//! id and receipt stay: the leak.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Receipts {
    by_id: Mutex<HashMap<String, String>>,
}

impl Receipts {
    /// The receipt (JSON) order `id` got, if any.
    pub fn get(&self, id: &str) -> Option<String> {
        let by_id = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        by_id.get(id).cloned()
    }

    pub fn keep(&self, id: &str, receipt: &str) {
        let mut by_id = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        by_id.insert(id.to_owned(), receipt.to_owned());
    }

    pub fn len(&self) -> usize {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
