//! With the `enabled` feature off, memprof leaves the program as written:
//! `#[profile]` hands the function back unchanged, nothing is printed, and no
//! allocator is installed.
//!
//! The check builds `tests/crates/disabled`, a crate of its own outside this
//! workspace (inside it, feature unification would turn `enabled` back on),
//! twice: with memprof's default features off, and with them on as the
//! control that shows the same checks do see memprof when it is there.

#[path = "support/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds the fixture with `features` and returns its binary.
fn build(features: &[&str]) -> PathBuf {
    let mut cargo = fixture::cargo("build", "disabled", "disabled");
    cargo
        .arg("--quiet")
        .args(features.iter().flat_map(|f| ["--features", f]));
    fixture::succeed(cargo, "building the fixture");
    let target = fixture::target_dir("disabled");
    // Both builds write the same path: copy each one out before the next.
    let name = if features.is_empty() { "off" } else { "on" };
    let bin = target.join(name);
    std::fs::copy(target.join("debug/memprof-disabled-check"), &bin).expect("binary was built");
    bin
}

/// The instructions of the function `name` in `bin`, from `objdump`, less
/// what differs between two copies of the same code at two places:
/// addresses, the function's own name, and `%rip`-relative displacements.
fn disassembly(bin: &Path, name: &str) -> Vec<String> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--disassemble={name}"))
        .arg(bin)
        .output()
        .expect("objdump (binutils) is installed");
    assert!(out.status.success(), "{out:?}");
    let listing = String::from_utf8_lossy(&out.stdout);
    let header = format!("<{name}>:");
    let code: Vec<String> = listing
        .lines()
        .skip_while(|line| !line.ends_with(&header))
        .skip(1)
        .filter_map(|line| Some(normalise(line.split_once(":\t")?.1, name)))
        .collect();
    assert!(!code.is_empty(), "no code for {name} in {}", bin.display());
    code
}

/// One instruction of `name`, as in `call 34930 <f> # comment` ->
/// `call <f>` and `lea 0x5ee2(%rip),%rdi` -> `lea DISP(%rip),%rdi`.
fn normalise(instruction: &str, name: &str) -> String {
    let instruction = instruction.split('#').next().unwrap_or_default();
    let instruction = instruction.replace(name, "SELF");
    let tokens: Vec<&str> = instruction.split_whitespace().collect();
    let mut kept = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let is_address = token.chars().all(|c| c.is_ascii_hexdigit())
            && tokens.get(i + 1).is_some_and(|next| next.starts_with('<'));
        if is_address {
            continue;
        }
        let operands: Vec<String> = token
            .split(',')
            .map(|operand| match operand.find("0x") {
                Some(at) if operand.ends_with("(%rip)") => {
                    format!("{}DISP(%rip)", operand[..at].trim_end_matches('-'))
                }
                _ => operand.to_owned(),
            })
            .collect();
        kept.push(operands.join(","));
    }
    kept.join(" ")
}

fn run(bin: &Path) -> (String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(bin)
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_OUTPUT")
        .output()
        .expect("the fixture runs");
    let stderr = String::from_utf8(stderr).unwrap();
    assert!(status.success(), "{stderr}");
    (String::from_utf8(stdout).unwrap(), stderr)
}

#[test]
fn feature_off_leaves_the_program_as_written() {
    let off = build(&[]);
    let on = build(&["on"]);
    let twins = ["profiled_build", "plain_build"];

    // Off: the profiled function compiles to the same machine code as its
    // plain twin, instruction for instruction, nothing is printed, no
    // allocator counts, `assert_memory!` checks nothing (it would fail on
    // zero figures), `measure` gives zeros, and `memprof::ENABLED` says
    // so.
    let code = twins.map(|name| disassembly(&off, name));
    assert_eq!(code[0], code[1], "profiled and plain twins differ");
    let (stdout, stderr) = run(&off);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "enabled: false, len 1000 10, heap counted: false, measured peak: 0, profiled functions: 0\n"
    );

    // On (the control): the same checks see memprof.
    let code = twins.map(|name| disassembly(&on, name));
    assert!(
        code[0].len() > code[1].len(),
        "profiled twin is not instrumented: {code:#?}"
    );
    let (stdout, stderr) = run(&on);
    assert!(
        stdout.contains("Function: memprof_disabled_check::profiled_build"),
        "{stdout}"
    );
    assert!(stdout.contains("peak memory: "), "{stdout}");
    assert!(stdout.contains("At src/main.rs:"), "{stdout}");
    assert_eq!(
        stderr,
        "enabled: true, len 1000 10, heap counted: true, measured peak: 4096, profiled functions: 1\n"
    );
}
