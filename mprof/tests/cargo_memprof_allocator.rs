//! `cargo memprof` on a package whose programs set their own
//! `#[global_allocator]` (tests/fixtures/own-allocator): mimalloc's and
//! jemalloc's are wrapped in memprof's counting allocator, which still
//! hands every request to them, and the figures are those of the same
//! work under the system allocator, to the byte; one set under a `#[cfg]`
//! that is off leaves memprof's in its place.

#[path = "common/cargo_memprof.rs"]
mod support;

use support::*;

const OWN_ALLOCATOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/own-allocator");

/// Every figure of every line of `report`'s functions in src/work.rs, by
/// function (less its crate's name, which is the program's) and line.
fn figures(report: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut out: Vec<(String, serde_json::Value)> = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"].as_str().unwrap().ends_with("/work.rs"))
        .map(|f| {
            let name = f["name"].as_str().unwrap();
            let (_, path) = name.split_once("::").unwrap();
            (path.to_owned(), f["lines"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn mimalloc_and_jemalloc_are_counted_through_and_still_allocate() {
    let dir = copy_of(std::path::Path::new(OWN_ALLOCATOR), "own-allocator");
    // The fixture's packages, as a new machine has none of them.
    let fetch = std::process::Command::new(env!("CARGO"))
        .args(["fetch", "--locked", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        fetch.status.success(),
        "{}",
        String::from_utf8_lossy(&fetch.stderr)
    );
    let out = TempDir::new("own-allocator-out");
    let mut runs = Vec::new();
    // maybe-mi sets mimalloc's under a feature that is off: memprof's
    // counts in its place.
    for program in ["sys-alloc", "mi-alloc", "je-alloc", "maybe-mi"] {
        let json = out.join(format!("{program}.json"));
        let run = run(
            &dir,
            &[
                "run",
                "--offline",
                "--bin",
                program,
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, 0, "{program}: {}", run.stderr);
        assert!(
            run.stdout.starts_with("100 rows, 899 bytes\n"),
            "{}",
            run.stdout
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        runs.push((program, run, figures(&report)));
    }
    // The user's allocator still allocates: mimalloc owns the rows'
    // memory, jemalloc's statistics count it.
    assert!(
        runs[1].1.stdout.contains(" allocated the rows: true\n"),
        "{}",
        runs[1].1.stdout
    );
    assert!(
        runs[2]
            .1
            .stdout
            .ends_with("jemalloc allocated the rows: true\n"),
        "{}",
        runs[2].1.stdout
    );
    // Exact: `rows` asks for 100 Strings (2,400 B) and 100 texts of 8 B;
    // `joined` for 899 B; the same under each allocator.
    let system = &runs[0].2;
    let names: Vec<&str> = system.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["work::joined", "work::rows"]);
    let rows = &system[1].1;
    let fn_row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == 1)
        .unwrap();
    assert_eq!(
        (&fn_row["allocated_bytes"], &fn_row["allocations"]),
        (&3200.into(), &101.into()),
        "{fn_row}"
    );
    for (program, _, figures) in &runs[1..] {
        assert_eq!(figures, system, "{program}");
    }
}
