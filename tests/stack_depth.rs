//! A profiled frame must not turn a working recursion into a stack
//! overflow: a profiled recursive function reaches at least half the depth
//! of the same function unprofiled, on a thread with a known stack size.
//!
//! Measured, not crashed into: each function reports how far below its
//! first frame's local its deepest frame's local lies, so the stack a frame
//! takes is exact; the test then recurses on a fresh thread to half the
//! depth the plain function reaches with that stack.

use std::hint::black_box;

// The same body twice, each calling itself by name, as a recursive
// function does.
//
// NOTE: the body keeps 64 bytes of locals, as a recursive parser or tree
// walk does; with 16, the plain frame (80 B in a dev build) was so small
// that the profiled one (160 B) sat exactly on the 2x limit. What profiling
// adds is a fixed amount per frame, so a realistic frame leaves a margin.

/// Bytes of locals per level.
const LOCALS: usize = 64;

#[inline(never)]
fn plain(n: u32) -> usize {
    let local = black_box([n as u8; LOCALS]);
    let here = black_box(&local) as *const [u8; LOCALS] as usize;
    let deeper = if n == 0 { here } else { plain(n - 1) };
    black_box(&local);
    deeper.min(here)
}

#[inline(never)]
#[memprof::profile]
fn profiled(n: u32) -> usize {
    let local = black_box([n as u8; LOCALS]);
    let here = black_box(&local) as *const [u8; LOCALS] as usize;
    let deeper = if n == 0 { here } else { profiled(n - 1) };
    black_box(&local);
    deeper.min(here)
}

/// `plain` or `profiled`.
fn plain_or_profiled(profiled_: bool, n: u32) -> usize {
    if profiled_ { profiled(n) } else { plain(n) }
}

/// Bytes of stack per level of `f`'s recursion, on a fresh thread.
fn frame_bytes(profile: bool) -> usize {
    const LEVELS: u32 = 200;
    std::thread::spawn(move || {
        // The first levels may set up state: measure between two depths.
        let shallow = plain_or_profiled(profile, 10);
        let deep = plain_or_profiled(profile, 10 + LEVELS);
        (shallow - deep) / LEVELS as usize
    })
    .join()
    .unwrap()
}

#[test]
fn a_profiled_recursion_reaches_half_the_plain_depth() {
    // Twice: the second run meets the function's steady state (its first
    // calls print tables and take the runtime's entry).
    frame_bytes(true);
    let plain_frame = frame_bytes(false);
    let profiled_frame = frame_bytes(true);
    println!("stack per level: plain {plain_frame} B, profiled {profiled_frame} B");
    assert!(
        profiled_frame <= 2 * plain_frame,
        "a profiled level takes {profiled_frame} B of stack, more than twice the plain {plain_frame} B"
    );
    // And so a thread whose stack the plain recursion fills to a depth
    // reaches half that depth profiled.
    const STACK: usize = 1 << 20;
    let plain_depth = (STACK / plain_frame) as u32;
    let reached = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            plain_or_profiled(true, plain_depth / 2 - 64);
            true
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(reached);
}
