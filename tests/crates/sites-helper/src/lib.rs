//! Three functions deep, none profiled: `outer` calls `middle`, which calls
//! `inner` for each block. Each is kept out of line, so that its frame
//! shows in a stack in release builds too.

/// `n` blocks of 2000 bytes, in one vector of capacity `n`.
#[inline(never)]
pub fn outer(n: usize) -> Vec<Vec<u8>> {
    std::hint::black_box(middle(n))
}

#[inline(never)]
fn middle(n: usize) -> Vec<Vec<u8>> {
    let mut blocks = Vec::with_capacity(n);
    for _ in 0..n {
        blocks.push(inner());
    }
    std::hint::black_box(blocks)
}

#[inline(never)]
fn inner() -> Vec<u8> {
    std::hint::black_box(vec![1u8; 2000])
}
