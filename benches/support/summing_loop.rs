//! The loop whose statements the probe benchmarks time, shared by
//! `overhead` and `gpu_sampling`: `summing_loop!(name #[attributes])` makes
//! one copy of it, so that profiled and plain copies are the same code.

/// A two-statement loop body that binds no locals (so its block has no
/// scope-end row), under the given name and attributes.
macro_rules! summing_loop {
    ($name:ident $(#[$attr:meta])*) => {
        $(#[$attr])*
        fn $name(n: u64) -> u64 {
            let mut acc = 0u64;
            for i in 0..n {
                acc = acc.wrapping_add(::std::hint::black_box(i));
                ::std::hint::black_box(&mut acc);
            }
            acc
        }
    };
}
pub(crate) use summing_loop;
