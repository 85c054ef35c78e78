//! Work handed to other threads, for the tests of what each scope counts.
//!
//! The scratch buffer passes through `black_box`: an optimized build removes
//! an allocation whose contents nothing reads.

/// `workers` scoped threads, one after another, each dropping a scratch
/// buffer of `scratch` bytes and returning a 1 MiB one: the calling thread
/// allocates only the `Vec` of their results and what spawning takes.
pub fn fan_out(workers: usize, scratch: usize) -> Vec<Vec<u8>> {
    let mut parts = Vec::with_capacity(workers);
    std::thread::scope(|s| {
        for _ in 0..workers {
            let part = s
                .spawn(|| {
                    let scratch = std::hint::black_box(vec![0u8; scratch]);
                    drop(scratch);
                    vec![1u8; 1 << 20]
                })
                .join()
                .unwrap();
            parts.push(part);
        }
    });
    parts
}
