//! `MEMPROF_JSON=FILE cargo test` gathers every process of the run into the
//! file: each test binary and each doctest adds its functions to what the
//! run's earlier processes wrote, and a later run replaces the file; so
//! does `MEMPROF_JSON=FILE cargo run` with a program and the profiled
//! processes it starts.
//!
//! The checks run `cargo test` on `tests/crates/json-run`, a crate of its own
//! with two test binaries and a doctest, each calling a function of its own,
//! and `cargo run` on its example that starts copies of itself. `%p` in
//! the path gives each process a file of its own instead.

#[path = "support/fixture.rs"]
mod fixture;

use std::path::Path;

/// (name, calls, the `fn` row's increment) of each function in the file.
fn functions(json: &Path) -> Vec<(String, u64, i64)> {
    let text = std::fs::read_to_string(json).expect("MEMPROF_JSON was written");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["schema"], 1);
    let mut found: Vec<(String, u64, i64)> = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let fn_row = f["lines"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["contents"].as_str().unwrap().contains("pub fn"))
                .unwrap();
            (
                f["name"].as_str().unwrap().to_owned(),
                f["calls"].as_u64().unwrap(),
                fn_row["increment"].as_i64().unwrap(),
            )
        })
        .collect();
    found.sort();
    found
}

fn cargo_test(json: &Path) {
    cargo_test_into(json.as_os_str());
}

fn cargo_test_into(json: &std::ffi::OsStr) {
    // Shared with tests/disabled.rs's control build: memprof is built once.
    let mut cargo = fixture::cargo("test", "json-run", "disabled");
    cargo
        .arg("--quiet")
        .env("MEMPROF_JSON", json)
        .env("MEMPROF_REPORT", "off");
    fixture::succeed(cargo, "cargo test of the fixture");
}

#[test]
fn one_cargo_test_writes_every_binary_and_doctest_into_one_file() {
    let json = Path::new(env!("CARGO_TARGET_TMPDIR")).join("json-run.json");
    let _ = std::fs::remove_file(&json);
    let expected = vec![
        ("memprof_json_run::from_doctest".to_owned(), 1, 0),
        ("memprof_json_run::from_first".to_owned(), 1, 0),
        ("memprof_json_run::from_second".to_owned(), 2, 400),
    ];
    cargo_test(&json);
    assert_eq!(functions(&json), expected);
    // A second run replaces the first one's figures rather than adding to
    // them.
    cargo_test(&json);
    assert_eq!(functions(&json), expected);
}

#[test]
fn one_cargo_run_writes_the_program_and_its_children_into_one_file() {
    let json = Path::new(env!("CARGO_TARGET_TMPDIR")).join("json-run-children.json");
    let _ = std::fs::remove_file(&json);
    let cargo_run = || {
        // `cargo run` execs the program: no cargo is left above its
        // children, which belong to its run all the same.
        let mut cargo = fixture::cargo("run", "json-run", "disabled");
        cargo
            .args(["--quiet", "--example", "children"])
            .env("MEMPROF_JSON", &json)
            .env("MEMPROF_REPORT", "off");
        fixture::succeed(cargo, "cargo run of the fixture's example");
    };
    // The program and its 20 children; a second run replaces the first.
    let expected = vec![("memprof_json_run::from_first".to_owned(), 21, 0)];
    cargo_run();
    assert_eq!(functions(&json), expected);
    cargo_run();
    assert_eq!(functions(&json), expected);
}

#[test]
fn percent_p_gives_each_process_a_file_of_its_own() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("json-run-per-process");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    cargo_test_into(dir.join("%p.json").as_os_str());
    let mut found: Vec<Vec<(String, u64, i64)>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_str().unwrap();
            assert!(
                stem.bytes().all(|b| b.is_ascii_digit()) && !stem.is_empty(),
                "{} is not named by a process id",
                path.display()
            );
            functions(&path)
        })
        .collect();
    found.sort();
    // Two test binaries and the doctest, each its own file holding only
    // its own calls: nothing added to another process's file.
    assert_eq!(
        found,
        vec![
            vec![("memprof_json_run::from_doctest".to_owned(), 1, 0)],
            vec![("memprof_json_run::from_first".to_owned(), 1, 0)],
            vec![("memprof_json_run::from_second".to_owned(), 2, 400)],
        ]
    );
}
