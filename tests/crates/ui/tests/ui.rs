//! Misuse fails to compile with a clear message pointing at the bad token;
//! an error in the user's own body is rustc's, with no cascade from us.
//! Odd but valid uses in `tests/ui/pass` compile and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
