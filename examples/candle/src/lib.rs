//! A candle-nn training loop under `#[memprof::profile]`, and the estimate
//! of its memory from the model's shapes.
//!
//! The model is an MNIST-sized classifier: a 3-layer MLP (784 → 1024 → 1024
//! → 10, f32, 1.86 M parameters) trained with AdamW on synthetic digits (ten
//! random prototype images plus noise), so that nothing is downloaded and a
//! step takes a fraction of a second on two cores. `src/main.rs` prints the
//! tables and the estimate; `tests/estimate.rs` pins one against the other.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use memprof::profile;

/// Pixels of one input image (28 × 28).
pub const INPUTS: usize = 784;
/// Width of the two hidden layers.
pub const HIDDEN: usize = 1024;
/// Digits.
pub const CLASSES: usize = 10;
/// Standard deviation of the noise added to a digit's prototype (whose
/// pixels have 1): enough that the loss falls over a few steps, not at once.
pub const NOISE: f32 = 2.0;
/// The batch size when `--batch` is not given.
pub const DEFAULT_BATCH: usize = 256;

/// Three linear layers with ReLU between them.
pub struct Mlp {
    layers: [Linear; 3],
}

impl Mlp {
    /// Creates the layers' parameters in `vb`'s `VarMap`.
    pub fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            layers: [
                candle_nn::linear(INPUTS, HIDDEN, vb.pp("fc1"))?,
                candle_nn::linear(HIDDEN, HIDDEN, vb.pp("fc2"))?,
                candle_nn::linear(HIDDEN, CLASSES, vb.pp("fc3"))?,
            ],
        })
    }

    /// The tensors the forward pass keeps for the backward pass, by the
    /// shape of each layer: a layer's product `x · Wᵀ` and the sum with its
    /// bias, and for the hidden layers the ReLU's output. (candle records
    /// every operation on a tensor that derives from a `Var`, so each of
    /// these stays alive as long as the loss does.)
    pub fn saved_activations(&self, batch: usize) -> Vec<(String, Vec<usize>)> {
        let mut saved = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            let (out, _) = layer
                .weight()
                .dims2()
                .expect("a linear layer's weight is 2-D");
            let name = format!("fc{}", i + 1);
            saved.push((format!("{name} x·Wᵀ"), vec![batch, out]));
            saved.push((format!("{name} + bias"), vec![batch, out]));
            if i + 1 < self.layers.len() {
                saved.push((format!("{name} relu"), vec![batch, out]));
            }
        }
        saved
    }
}

impl Module for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let [fc1, fc2, fc3] = &self.layers;
        let h = fc1.forward(x)?.relu()?;
        let h = fc2.forward(&h)?.relu()?;
        fc3.forward(&h)
    }
}

/// Synthetic digits: one random prototype image per class, and batches of
/// prototypes plus noise, so that the loss falls as the model learns.
pub struct Digits {
    prototypes: Tensor,
    drawn: u32,
}

impl Digits {
    /// Ten random prototypes.
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Self {
            prototypes: Tensor::randn(0f32, 1., (CLASSES, INPUTS), device)?,
            drawn: 0,
        })
    }

    /// `batch` images and their labels.
    pub fn batch(&mut self, batch: usize) -> Result<(Tensor, Tensor)> {
        let labels: Vec<u32> = (0..batch as u32)
            .map(|i| (i * 7 + self.drawn) % CLASSES as u32)
            .collect();
        self.drawn += 1;
        let labels = Tensor::new(labels, self.prototypes.device())?;
        let noise = Tensor::randn(0f32, NOISE, (batch, INPUTS), self.prototypes.device())?;
        let images = (self.prototypes.index_select(&labels, 0)? + noise)?;
        Ok((images, labels))
    }
}

/// A model, its optimizer and its data: what one training step needs.
pub struct Training {
    /// The parameters, by name.
    pub varmap: VarMap,
    /// The model, sharing the parameters' storage with `varmap`.
    pub model: Mlp,
    /// AdamW, with its two moments per parameter.
    pub opt: AdamW,
    /// Where the batches come from.
    pub digits: Digits,
    /// Images per step.
    pub batch: usize,
}

/// Where the tensors live: the CPU, or with the `cuda` feature the first
/// GPU.
pub fn device() -> Result<Device> {
    if cfg!(feature = "cuda") {
        Device::new_cuda(0)
    } else {
        Ok(Device::Cpu)
    }
}

/// Builds the model, its optimizer and the data.
#[profile]
pub fn build(batch: usize) -> Result<Training> {
    let device = device()?;
    let varmap = VarMap::new();
    let model = Mlp::new(VarBuilder::from_varmap(&varmap, DType::F32, &device))?;
    let opt = AdamW::new(varmap.all_vars(), ParamsAdamW::default())?;
    let digits = Digits::new(&device)?;
    Ok(Training {
        varmap,
        model,
        opt,
        digits,
        batch,
    })
}

impl Training {
    /// One step: a batch, forward, loss, backward, AdamW. Returns the loss.
    #[profile]
    pub fn step(&mut self) -> Result<f32> {
        let (images, labels) = self.digits.batch(self.batch)?;
        let logits = self.model.forward(&images)?;
        let loss = candle_nn::loss::cross_entropy(&logits, &labels)?;
        let grads = loss.backward()?;
        self.opt.step(&grads)?;
        loss.to_scalar::<f32>()
    }
}

/// The usual estimate of training memory, from the model's shapes and dtype.
pub struct Estimate {
    /// Bytes of one value (4 for f32).
    pub dtype_size: usize,
    /// The batch size.
    pub batch: usize,
    /// Values in all parameters.
    pub parameters: usize,
    /// Values in the largest parameter tensor.
    pub largest_parameter: usize,
    /// The tensors the forward pass keeps, with their values.
    pub activations: Vec<(String, usize)>,
}

/// Tensors the size of a parameter that AdamW's step has alive at once. Its
/// update, `m·β1 + g·(1−β1)` and so on, is 15 operations per parameter;
/// as `m`, `v` and `θ` are `Var`s, candle records each result's inputs, so
/// 14 results stay alive until the parameter's turn ends (`g²` alone is
/// freed early: the gradient is not a `Var`).
pub const ADAMW_STEP_TEMPORARIES: usize = 14;

impl Estimate {
    /// The estimate for `training`'s model, at its batch size.
    pub fn new(training: &Training) -> Self {
        let vars = training.varmap.all_vars();
        let dtype_size = vars.first().map_or(4, |v| v.dtype().size_in_bytes());
        Self {
            dtype_size,
            batch: training.batch,
            parameters: vars.iter().map(|v| v.elem_count()).sum(),
            largest_parameter: vars.iter().map(|v| v.elem_count()).max().unwrap_or(0),
            activations: training
                .model
                .saved_activations(training.batch)
                .into_iter()
                .map(|(name, shape)| (name, shape.iter().product()))
                .collect(),
        }
    }

    /// Parameters × dtype size.
    pub fn parameter_bytes(&self) -> u64 {
        (self.parameters * self.dtype_size) as u64
    }

    /// One gradient per parameter.
    pub fn gradient_bytes(&self) -> u64 {
        self.parameter_bytes()
    }

    /// AdamW's two moments per parameter.
    pub fn optimizer_bytes(&self) -> u64 {
        2 * self.parameter_bytes()
    }

    /// The tensors saved for backward.
    pub fn activation_bytes(&self) -> u64 {
        self.activations
            .iter()
            .map(|(_, n)| (n * self.dtype_size) as u64)
            .sum()
    }

    /// The optimizer step's temporaries, at the largest parameter.
    pub fn optimizer_step_bytes(&self) -> u64 {
        (ADAMW_STEP_TEMPORARIES * self.largest_parameter * self.dtype_size) as u64
    }

    /// A batch: its images, and a `u32` label per image.
    pub fn batch_bytes(&self) -> u64 {
        (self.batch * (INPUTS * self.dtype_size + 4)) as u64
    }

    /// The peak of a step above what it starts with: everything it holds
    /// during the optimizer's update (the batch, the activations and the
    /// gradients), plus the update's temporaries.
    pub fn step_peak_bytes(&self) -> u64 {
        self.batch_bytes()
            + self.activation_bytes()
            + self.gradient_bytes()
            + self.optimizer_step_bytes()
    }
}
