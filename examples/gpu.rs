//! GPU memory per line: `cargo run --example gpu`.
//!
//! With an NVIDIA GPU and its driver, the table gains `GPU usage` and
//! `GPU increment` columns: the CUDA context on the line that creates it,
//! +256 MiB on each line that allocates a block, −256 MiB on the line that
//! frees one. Without them it prints the heap table and a one-line note.
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
