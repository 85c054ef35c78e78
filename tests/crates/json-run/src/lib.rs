//! A library whose profiled functions are called from a doctest and from two
//! test binaries.

/// Called from this doctest only.
///
/// ```
/// assert_eq!(memprof_json_run::from_doctest(), 3);
/// ```
#[memprof::profile]
pub fn from_doctest() -> usize {
    let v = vec![0u8; 3];
    v.len()
}

/// Called from `tests/first.rs` only.
#[memprof::profile]
pub fn from_first() -> usize {
    let v = vec![0u8; 100];
    v.len()
}

/// Called from `tests/second.rs` only, twice.
#[memprof::profile]
pub fn from_second() -> Vec<u8> {
    let v = vec![0u8; 200];
    v
}
