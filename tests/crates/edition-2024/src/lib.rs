//! `#[profile]` on edition 2024 code: every function of `shapes.rs` must
//! compile under these `forbid` lints and drop exactly as its unprofiled
//! twin (see that file), and the tests below show that edition's own rule.
#![forbid(unreachable_code, unused_mut)]
#![deny(warnings)]

extern crate memprof;

#[cfg(test)]
#[path = "../../editions/shapes.rs"]
pub mod shapes;

/// In edition 2024, temporaries of a block's tail drop before its locals.
#[test]
fn the_tail_drops_by_the_edition_s_rule() {
    shapes::take_log();
    shapes::profiled::Shapes::arg_tail(shapes::D("arg"));
    assert_eq!(shapes::take_log(), ["temp", "local", "arg"]);
}
