//! The idempotency cache: a retried order gets the answer it got before.
//! It never evicts, so every order's id and answer stay: the leak.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct IdempotencyCache {
    answers: Mutex<HashMap<String, String>>,
}

impl IdempotencyCache {
    /// The answer order `id` got before, if any.
    pub fn get(&self, id: &str) -> Option<String> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.get(id).cloned()
    }

    pub fn remember(&self, id: &str, answer: &str) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.insert(id.to_owned(), answer.to_owned());
    }

    pub fn len(&self) -> usize {
        self.answers.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
