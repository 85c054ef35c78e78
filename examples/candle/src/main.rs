//! `cargo run` in `examples/candle/`: a few training steps of a small MLP
//! with candle-nn on the CPU, profiled per line, then the estimate of its
//! memory from the model's shapes beside what the tables measured.
//!
//! `--batch N` (default 256) and `--steps N` (default 3).

use memprof::{FunctionReport, Report};
use memprof_candle_example::{ADAMW_STEP_TEMPORARIES, DEFAULT_BATCH, Estimate, build};

fn main() -> candle_core::Result<()> {
    let (batch, steps) = arguments();
    let mut training = build(batch)?;
    let mut losses = vec![training.step()?];
    // Step 1's figures, before later steps add theirs to the aggregate.
    let after_first = memprof::report();
    for _ in 1..steps {
        losses.push(training.step()?);
    }
    let estimate = Estimate::new(&training);
    compare(&estimate, &after_first, &memprof::report(), steps);
    let losses: Vec<String> = losses.iter().map(|l| format!("{l:.3}")).collect();
    println!("\nloss by step: {}", losses.join(", "));
    Ok(())
}

fn arguments() -> (usize, usize) {
    let (mut batch, mut steps) = (DEFAULT_BATCH, 3);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok()).filter(|&n| n > 0);
        match (arg.as_str(), value) {
            ("--batch", Some(n)) => batch = n,
            ("--steps", Some(n)) => steps = n,
            _ => {
                eprintln!("usage: memprof-candle-example [--batch N] [--steps N]");
                std::process::exit(2);
            }
        }
    }
    (batch, steps)
}

/// Prints the estimate, the measured row beside it, and the difference.
fn compare(estimate: &Estimate, after_first: &Report, last: &Report, steps: usize) {
    let build = last.function("build").expect("build is profiled");
    let first_step = after_first.function("step").expect("step is profiled");
    let all_steps = last.function("step").expect("step is profiled");
    let increment = |f: &FunctionReport, text: &str| row(f, text).increment.unwrap_or(0);
    let peak = |f: &FunctionReport, text: &str| row(f, text).peak.unwrap_or(0) as i64;
    let kept_first = increment(first_step, "pub fn step");
    let kept_later = increment(all_steps, "pub fn step") - kept_first;

    let size = estimate.dtype_size;
    let largest = estimate.largest_parameter * size;
    println!(
        "\nEstimate from the model's shapes ({} parameters × {size} B, batch {}) beside the tables:\n",
        thousands(estimate.parameters as i64),
        estimate.batch
    );
    println!(
        "{:<30} {:>14} {:>14} {:>12}   row (column)",
        "part", "estimate", "measured", "difference"
    );
    let lines: [(String, u64, i64, &str); 8] = [
        (
            "parameters".into(),
            estimate.parameter_bytes(),
            increment(build, "let model ="),
            "let model = (Increment)",
        ),
        (
            "AdamW moments, 2×".into(),
            estimate.optimizer_bytes(),
            increment(build, "let opt ="),
            "let opt = (Increment)",
        ),
        (
            "a batch".into(),
            estimate.batch_bytes(),
            increment(first_step, "let (images, labels) ="),
            "let (images, labels) = (Increment, step 1)",
        ),
        (
            format!("activations, {} tensors", estimate.activations.len()),
            estimate.activation_bytes(),
            increment(first_step, "let logits ="),
            "let logits = (Increment, step 1)",
        ),
        (
            "gradients, 1×".into(),
            estimate.gradient_bytes(),
            increment(first_step, "let grads ="),
            "let grads = (Increment, step 1)",
        ),
        (
            format!("AdamW step, {ADAMW_STEP_TEMPORARIES} × largest"),
            estimate.optimizer_step_bytes(),
            peak(first_step, "self.opt.step"),
            "self.opt.step (Peak, step 1)",
        ),
        (
            "a step's peak, the 4 above".into(),
            estimate.step_peak_bytes(),
            peak(first_step, "pub fn step"),
            "fn step (Peak, step 1)",
        ),
        (
            "kept by a step".into(),
            0,
            kept_later,
            "fn step (Increment, steps 2 on)",
        ),
    ];
    for (part, estimated, measured, row) in lines {
        let difference = measured - estimated as i64;
        println!(
            "{part:<30} {:>12} B {:>12} B {:>12} B   {row}",
            thousands(estimated as i64),
            thousands(measured),
            signed(difference)
        );
    }
    // The closing brace's row: what the step's locals free.
    let freed = first_step
        .lines
        .last()
        .and_then(|l| l.increment)
        .unwrap_or(0);
    println!(
        "
Where the differences come from:
- parameters, moments, the batch: candle's bookkeeping per tensor (its header,
  shape, strides and storage lock), the names, the VarMap.
- activations: the same per tensor; in step 1 also one-time set-ups (the first
  matrix product starts rayon's thread pool), which step 1 keeps: its fn row
  shows {kept_first} B.
- gradients: candle also computes the input images' gradient (matrix
  products differentiate both operands), and keeps it with the graph that
  made it, as it derives from fc1's weight: {images} B at batch {batch}.
- AdamW step: m, v and the parameter are Vars, so candle records the inputs of
  each operation of the update: {ADAMW_STEP_TEMPORARIES} tensors the size of the parameter live until
  the next one. The largest, {largest} B, sets the peak; the Increment is 0.
- a step's peak: the differences above, and the loss's own tensors
  (log-softmax over {classes} classes: {loss} B, its row).
- between steps: the closing brace frees the batch, the activations, the loss
  and the gradients ({freed} B); steps 2 to {steps} keep {kept_later} B.",
        kept_first = thousands(kept_first),
        classes = memprof_candle_example::CLASSES,
        loss = thousands(increment(first_step, "let loss =")),
        largest = thousands(largest as i64),
        freed = thousands(freed),
        images = thousands(increment(first_step, "let grads =") - estimate.gradient_bytes() as i64),
        batch = estimate.batch,
    );
}

fn row<'a>(function: &'a FunctionReport, text: &str) -> &'a memprof::LineReport {
    function
        .line_containing(text)
        .unwrap_or_else(|| panic!("no row of {} contains {text:?}", function.name))
}

/// A difference, with its sign.
fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{}", thousands(n))
    } else {
        thousands(n)
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}
