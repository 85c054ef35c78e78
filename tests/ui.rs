//! Misuse fails to compile with a clear message pointing at the bad token;
//! an error in the user's own body is rustc's, with no cascade from us.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
