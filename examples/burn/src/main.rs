//! `cargo run [--features cuda] -- [--batch N] [--steps N] [--cpu]`:
//! profiled training steps of a burn MLP; the tables print as each call
//! ends. With `--features cuda` the steps run on CUDA device 0 unless
//! `--cpu` asks for burn's CPU backend.

use burn::backend::{Autodiff, NdArray};
use memprof_burn_example::build;

fn main() {
    let mut batch = 256;
    let mut steps = 3;
    let mut cpu = !cfg!(feature = "cuda");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--cpu" {
            cpu = true;
            continue;
        }
        let value = args.next().and_then(|v| v.parse().ok());
        match (arg.as_str(), value) {
            ("--batch", Some(v)) => batch = v,
            ("--steps", Some(v)) => steps = v,
            _ => {
                eprintln!("usage: memprof-burn-example [--batch N] [--steps N] [--cpu]");
                std::process::exit(2);
            }
        }
    }
    if !cpu {
        #[cfg(feature = "cuda")]
        return on_cuda(batch, steps);
    }
    let device = burn::backend::ndarray::NdArrayDevice::Cpu;
    let mut training = build::<Autodiff<NdArray>>(batch, &device);
    for step in 1..=steps {
        println!("step {step}: loss {:.4}", training.step());
    }
}

/// The steps on CUDA device 0, with cubecl's pool read at each statement.
#[cfg(feature = "cuda")]
fn on_cuda(batch: usize, steps: usize) {
    let device = burn::backend::cuda::CudaDevice::default();
    memprof_burn_example::watch_cubecl_pool(&device);
    let mut training = build::<Autodiff<burn::backend::Cuda>>(batch, &device);
    for step in 1..=steps {
        println!("step {step}: loss {:.4}", training.step());
    }
}
