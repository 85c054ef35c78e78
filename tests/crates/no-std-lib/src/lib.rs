//! `#[profile]` in a `#![no_std]` library (edition 2021) that shadows `std`,
//! `core`, `Option` and `Result`: generated code must use absolute paths only.
//! Building this crate is the test.

#![no_std]
#![deny(warnings, unused_qualifications)]

extern crate alloc;

use alloc::vec::Vec;

/// Shadows the standard module names for relative paths.
pub mod std {}
/// Shadows `core` for relative paths.
pub mod core {}
/// Shadows the prelude's `Option`.
pub struct Option;
/// Shadows the prelude's `Result`.
pub struct Result;

/// Builds a vector; profiled.
#[memprof::profile]
pub fn build(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(i as u8);
    }
    v
}

/// Returns early; profiled.
#[memprof::profile]
pub fn first_even(values: &[u32]) -> ::core::option::Option<u32> {
    for v in values {
        if v % 2 == 0 {
            return ::core::option::Option::Some(*v);
        }
    }
    ::core::option::Option::None
}

/// An async fn; profiled.
#[memprof::profile]
pub async fn double(x: u32) -> u32 {
    let y = x * 2;
    y
}
