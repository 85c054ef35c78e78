//! GPU memory per line: `cargo run --example gpu`.
//!
//! With an NVIDIA GPU, its driver and CUPTI (the CUDA toolkit's
//! `extras/CUPTI/lib64`, or `MEMPROF_CUPTI_LIB`), the table gains
//! `GPU alloc`, `GPU increment` and `GPU peak` columns: +256 MiB on each line
//! that allocates a block, −256 MiB on the line that frees one, and a
//! 512 MiB `GPU peak` on the line that allocates and frees a block within
//! itself; the CUDA context shows only in the driver's view under the
//! header. Without CUPTI the columns are NVML's (`GPU usage`,
//! `GPU increment`, the context on the line that creates it), after a
//! one-line note; without a GPU it prints the heap table and a note.
//!
//! cudarc loads libcuda at run time, so this builds with no CUDA installed.

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError};
use memprof::profile;
use std::sync::Arc;

const BLOCK: usize = 256 << 20;

/// A block of device memory, in place when this returns. cudarc allocates
/// on the stream (from the driver's memory pool where the GPU has one), so
/// wait for the stream: NVML then sees the memory on this line.
fn device_alloc(stream: &Arc<CudaStream>, bytes: usize) -> Result<CudaSlice<u8>, DriverError> {
    let block = stream.alloc_zeros::<u8>(bytes)?;
    stream.synchronize()?;
    Ok(block)
}

/// Frees a block, and waits until the pool has given it back to the device.
fn device_free(stream: &Arc<CudaStream>, block: CudaSlice<u8>) -> Result<(), DriverError> {
    drop(block);
    stream.synchronize()
}

#[profile]
fn train_step(gpu: bool) -> Result<usize, DriverError> {
    let batch = vec![1u8; 64 << 20];
    if !gpu {
        return Ok(batch.len());
    }
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let weights = device_alloc(&stream, BLOCK)?;
    let activations = device_alloc(&stream, BLOCK)?;
    device_free(&stream, activations)?;
    device_free(&stream, device_alloc(&stream, 2 * BLOCK)?)?;
    let on_device = stream.clone_htod(&batch)?;
    stream.synchronize()?;
    Ok(weights.len() + on_device.len())
}

fn main() {
    // SAFETY: only probes whether libcuda can be loaded.
    let gpu = unsafe { cudarc::driver::sys::is_culib_present() };
    if !gpu {
        println!("note: no CUDA driver (libcuda) here, so this shows the heap table only");
    }
    match train_step(gpu) {
        Ok(bytes) => println!("moved {} MiB", bytes >> 20),
        Err(err) => println!("note: CUDA failed ({err}), so the table shows the heap only"),
    }
}
