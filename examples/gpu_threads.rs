//! Two threads holding device memory at the same time, each profiled in
//! thread scope: `cargo run --example gpu_threads`.
//!
//! With CUPTI counting (see examples/gpu.rs), each thread's table reads its
//! own block alone, 64 MiB and 128 MiB, although both are held at once:
//! device allocations are counted on the thread that makes them, as heap
//! allocations are. `measure` gives the same figure. Without a GPU it says
//! so and stops.

use cudarc::driver::CudaContext;
use std::sync::{Arc, Barrier};

const MIB: usize = 1 << 20;

#[memprof::profile(scope = "thread")]
fn worker(ctx: Arc<CudaContext>, mib: usize, both: Arc<Barrier>) -> usize {
    let stream = ctx.new_stream().expect("a stream");
    let block = stream.alloc_zeros::<u8>(mib * MIB).expect("device memory");
    stream.synchronize().expect("the allocation");
    // Both blocks are held here.
    both.wait();
    let n = block.len();
    drop(block);
    stream.synchronize().expect("the free");
    n
}

fn main() {
    // SAFETY: only probes whether libcuda can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        println!("note: no CUDA driver (libcuda) here: nothing to show");
        return;
    }
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(err) => {
            println!("note: CUDA failed ({err}): nothing to show");
            return;
        }
    };
    let both = Arc::new(Barrier::new(2));
    let threads: Vec<_> = [64, 128]
        .into_iter()
        .map(|mib| {
            let (ctx, both) = (ctx.clone(), both.clone());
            std::thread::spawn(move || {
                let (n, m) = memprof::measure(|| worker(ctx, mib, both));
                println!(
                    "thread {mib} MiB: moved {} MiB, measure's GPU peak {:?} B",
                    n / MIB,
                    m.gpu_peak
                );
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a worker");
    }
}
