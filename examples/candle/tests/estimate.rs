//! The estimate from the model's shapes, pinned against what memprof
//! measures: exact up to a stated number of bookkeeping bytes per tensor.

use std::sync::Mutex;

use memprof::{FunctionReport, profile};
use memprof_candle_example::{ADAMW_STEP_TEMPORARIES, DEFAULT_BATCH, Estimate, Training, build};

/// What candle allocates for one tensor besides its values, at most: the
/// `Arc`'d tensor header (id, layout with shape and strides, op, dtype,
/// device), the `Arc`'d lock around its storage, and for a `Var` its name and
/// its slot in the `VarMap`. Measured: 366 B per parameter (2,198 B for 6),
/// 268 B per moment (3,216 B for 12), 256 B per temporary of the AdamW step.
const BOOKKEEPING_PER_TENSOR: u64 = 512;

/// The parameter tensors: three weights, three biases.
const PARAMETER_TENSORS: u64 = 6;

/// The tests read the process-wide aggregate of `build` and `step`: one at a
/// time, each from `memprof::reset()`.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn increment(function: &FunctionReport, text: &str) -> u64 {
    let row = function.line_containing(text).unwrap();
    u64::try_from(row.increment.unwrap()).unwrap()
}

fn peak(function: &FunctionReport, text: &str) -> u64 {
    function.line_containing(text).unwrap().peak.unwrap()
}

/// `measured` is `estimated` plus at most `tensors` tensors' bookkeeping.
fn assert_within_bookkeeping(part: &str, measured: u64, estimated: u64, tensors: u64) {
    assert!(
        (estimated..=estimated + tensors * BOOKKEEPING_PER_TENSOR).contains(&measured),
        "{part}: measured {measured} B, estimated {estimated} B, \
         allowed {tensors} × {BOOKKEEPING_PER_TENSOR} B of bookkeeping"
    );
}

#[test]
fn parameters_and_optimizer_state_equal_the_formula_within_bookkeeping() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    memprof::reset();
    let training = build(DEFAULT_BATCH).unwrap();
    let estimate = Estimate::new(&training);
    assert_eq!(
        estimate.parameters,
        784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10
    );
    assert_eq!(estimate.parameter_bytes(), 7_454_760);

    let report = memprof::report();
    let build = report.function("build").unwrap();
    assert_within_bookkeeping(
        "parameters",
        increment(build, "let model ="),
        estimate.parameter_bytes(),
        PARAMETER_TENSORS,
    );
    // Two moments per parameter tensor.
    assert_within_bookkeeping(
        "AdamW's moments",
        increment(build, "let opt ="),
        estimate.optimizer_bytes(),
        2 * PARAMETER_TENSORS,
    );
}

#[test]
fn a_step_keeps_activations_gradients_and_temporaries_as_estimated() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut training = build(DEFAULT_BATCH).unwrap();
    // Step 1 also holds candle's one-time set-up; the second is the rule.
    training.step().unwrap();
    memprof::reset();
    training.step().unwrap();
    let estimate = Estimate::new(&training);
    let report = memprof::report();
    let step = report.function("step").unwrap();

    // Every saved tensor, and the transposed weights that the products read.
    let tensors = estimate.activations.len() as u64 + 3;
    assert_within_bookkeeping(
        "activations",
        increment(step, "let logits ="),
        estimate.activation_bytes(),
        tensors,
    );
    // The peak of the optimizer's line: its temporaries for the largest
    // parameter, fc2's 1024 × 1024 weight.
    assert_eq!(estimate.largest_parameter, 1024 * 1024);
    assert_within_bookkeeping(
        "AdamW's step",
        peak(step, "self.opt.step"),
        estimate.optimizer_step_bytes(),
        ADAMW_STEP_TEMPORARIES as u64,
    );
    assert_eq!(
        step.line_containing("self.opt.step").unwrap().increment,
        Some(0)
    );

    // The gradients: one per parameter, plus the gradient candle computes
    // for the input images (a product's left operand) with the three
    // tensors of the graph it keeps: its zeros, fc1's product's
    // gradient and the images' product.
    let batch = estimate.batch as u64;
    let images_gradient = batch * 784 * 4 * 3 + batch * 1024 * 4;
    assert_within_bookkeeping(
        "gradients",
        increment(step, "let grads ="),
        estimate.gradient_bytes() + images_gradient,
        PARAMETER_TENSORS + 4,
    );
}

#[test]
fn the_second_step_keeps_nothing_more_than_the_first() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut training = build(DEFAULT_BATCH).unwrap();
    memprof::reset();
    training.step().unwrap();
    let fn_row =
        |report: &memprof::Report| increment(report.function("step").unwrap(), "pub fn step");
    let first = fn_row(&memprof::report());
    training.step().unwrap();
    let second = fn_row(&memprof::report()) - first;
    // The first keeps only candle's one-time set-up (its thread pool), the
    // second nothing at all.
    assert!(first < 16 << 10, "step 1 kept {first} B");
    assert_eq!(second, 0, "step 2 kept {second} B");
}

/// Between the peak of a step of 256 images (73.2 MiB) and of 512 (83.4 MiB).
#[profile(limit = "78 MiB")]
fn budgeted_step(training: &mut Training) -> f32 {
    training.step().unwrap()
}

#[test]
fn a_step_budget_fails_when_the_batch_doubles() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut training = build(DEFAULT_BATCH).unwrap();
    budgeted_step(&mut training);
    budgeted_step(&mut training);

    training.batch *= 2;
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        budgeted_step(&mut training);
    }))
    .expect_err("a step of twice the batch should go over the limit");
    let message = failure.downcast::<String>().unwrap();
    let first = message.lines().next().unwrap();
    assert!(
        first.starts_with("memory limit exceeded in estimate::budgeted_step")
            && first.ends_with("> limit 78.0 MiB"),
        "{message}"
    );
}

/// The fenced blocks of docs/deep-learning.md that show `cargo run`'s
/// output, line by line: each of their lines is a line that `cargo run`
/// prints. (The README links there.)
#[test]
fn the_docs_show_what_cargo_run_prints() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memprof-candle-example"))
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_UNIT")
        .env_remove("MEMPROF_PRECISION")
        .env_remove("MEMPROF_OUTPUT")
        .env_remove("MEMPROF_MIN_INCREMENT")
        // The docs show a machine without a GPU.
        .env("MEMPROF_GPU", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<&str> = printed.lines().collect();

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join("docs/deep-learning.md")).unwrap();
    let page = &page[page.find("## What `cargo run` prints").unwrap()..];
    let blocks = [(page, 0), (page, 1)];
    for (text, index) in blocks {
        let block = text.split("```").nth(2 * index + 1).unwrap();
        for line in block.lines().skip(1) {
            if line.trim().is_empty() || line.trim() == "..." {
                continue;
            }
            assert!(
                printed.contains(&line),
                "the docs show a line that cargo run does not print:\n{line}\n\n{}",
                printed.join("\n")
            );
        }
    }
}
