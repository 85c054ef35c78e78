//! Memory over time: grows to 200 MiB in 25 MiB steps, holds, and shrinks
//! back, in nested profiled functions. Record and plot it with `mprof`:
//!
//! ```sh
//! cargo build --example grow
//! cargo run -p mprof -- run target/debug/examples/grow
//! cargo run -p mprof -- plot
//! ```

use std::time::Duration;

const STEP: usize = 25 << 20;
const STEPS: usize = 8;
const PAUSE: Duration = Duration::from_millis(120);

/// One step: a block of `STEP` bytes, every page written so that RSS grows
/// as much as the heap.
#[memprof::profile]
fn allocate(step: usize) -> Vec<u8> {
    let block = vec![step as u8 + 1; STEP];
    std::thread::sleep(PAUSE);
    block
}

#[memprof::profile]
fn grow(blocks: &mut Vec<Vec<u8>>) {
    for step in 0..STEPS {
        blocks.push(allocate(step));
    }
}

#[memprof::profile]
fn shrink(blocks: &mut Vec<Vec<u8>>) {
    while let Some(block) = blocks.pop() {
        drop(block);
        std::thread::sleep(PAUSE);
    }
}

#[memprof::profile]
fn grow_and_shrink() {
    let mut blocks = Vec::with_capacity(STEPS);
    grow(&mut blocks);
    std::thread::sleep(3 * PAUSE);
    shrink(&mut blocks);
}

fn main() {
    std::thread::sleep(PAUSE);
    grow_and_shrink();
    std::thread::sleep(PAUSE);
}
