//! Nothing: the tests are in `tests/ui.rs`.
