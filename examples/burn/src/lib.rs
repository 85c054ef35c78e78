//! A burn training step under `#[memprof::profile]`: where training memory
//! goes, line by line, on burn's CPU backend (ndarray) or on a GPU (its
//! CUDA backend, through cubecl), with the framework's own pool figures
//! beside memprof's. See docs/deep-learning.md.
//!
//! The model is the one of examples/candle: a 3-layer MLP (784 → 1024 →
//! 1024 → 10, f32, 1,863,690 parameters) trained with AdamW, here on random
//! images and labels, so that nothing is downloaded.

use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, ElementConversion, Int, Tensor};
use memprof::profile;

/// Image size, hidden width, classes.
pub const SIZES: [usize; 4] = [784, 1024, 1024, 10];

/// Parameters: three weights and three biases.
pub const PARAMETERS: usize = 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10;

/// The network.
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    fc1: Linear<B>,
    fc2: Linear<B>,
    fc3: Linear<B>,
    act: Relu,
}

impl<B: Backend> Mlp<B> {
    fn new(device: &B::Device) -> Self {
        let [input, hidden1, hidden2, classes] = SIZES;
        Mlp {
            fc1: LinearConfig::new(input, hidden1).init(device),
            fc2: LinearConfig::new(hidden1, hidden2).init(device),
            fc3: LinearConfig::new(hidden2, classes).init(device),
            act: Relu::new(),
        }
    }

    fn forward(&self, images: Tensor<B, 2>) -> Tensor<B, 2> {
        let x = self.act.forward(self.fc1.forward(images));
        let x = self.act.forward(self.fc2.forward(x));
        self.fc3.forward(x)
    }
}

/// A model, its optimizer and what a step needs.
pub struct Training<B: AutodiffBackend, O> {
    model: Option<Mlp<B>>,
    opt: O,
    loss: CrossEntropyLoss<B>,
    device: B::Device,
    batch: usize,
}

/// Makes the model and its optimizer on `device`.
#[profile]
pub fn build<B: AutodiffBackend>(
    batch: usize,
    device: &B::Device,
) -> Training<B, impl Optimizer<Mlp<B>, B>> {
    let model = Mlp::new(device);
    let opt = AdamWConfig::new().init::<B, Mlp<B>>();
    let loss = CrossEntropyLossConfig::new().init(device);
    B::sync(device);
    Training {
        model: Some(model),
        opt,
        loss,
        device: device.clone(),
        batch,
    }
}

impl<B: AutodiffBackend, O: Optimizer<Mlp<B>, B>> Training<B, O> {
    /// One step on a random batch; its loss.
    #[profile]
    pub fn step(&mut self) -> f32 {
        let model = self.model.take().expect("a model between steps");
        let images =
            Tensor::<B, 2>::random([self.batch, SIZES[0]], Distribution::Default, &self.device);
        let labels = Tensor::<B, 1, Int>::random(
            [self.batch],
            Distribution::Uniform(0.0, 10.0),
            &self.device,
        );
        let logits = model.forward(images);
        let loss = self.loss.forward(logits, labels);
        let grads = loss.backward();
        let grads = GradientsParams::from_grads(grads, &model);
        self.model = Some(self.opt.step(1e-3, model, grads));
        B::sync(&self.device);
        loss.into_scalar().elem::<f32>()
    }
}

/// Reads cubecl's pools on `device` at each profiled statement: bytes its
/// live tensors hold (`bytes_in_use`, PyTorch's `memory_allocated`) and
/// bytes its pools hold from the driver (`bytes_reserved`,
/// `memory_reserved`). cubecl counts per stream, and a stream per thread:
/// read from the thread that trains.
#[cfg(feature = "cuda")]
pub fn watch_cubecl_pool(device: &burn::backend::cuda::CudaDevice) {
    use cubecl::Runtime;
    let client = cubecl::cuda::CudaRuntime::client(device);
    memprof::watch_pool("cubecl (CUDA)", move || {
        let usage = client.memory_usage();
        Some(memprof::PoolUsage {
            allocated: usage.bytes_in_use,
            reserved: usage.bytes_reserved,
        })
    });
}
