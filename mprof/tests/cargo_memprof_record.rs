//! `cargo memprof`'s record (`target/memprof/record-run.json`): a later run
//! leaves the functions whose calls moved no heap as written, shows every
//! other function's figures as the first run did, and profiles a function
//! again once it changes; `--fn .` profiles every function.

#[path = "common/cargo_memprof.rs"]
mod support;

use serde_json::Value;
use std::path::Path;
use support::*;

/// The fixture with one more function, `helper::offset`, which moves no
/// heap, called from `main`; a doc comment and an attribute above it.
fn fixture_with_offset(name: &str, patch: u32) -> TempDir {
    let dir = fixture(name, patch);
    let lib = dir.join("helper/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        format!(
            "{text}\n/// One more: its table starts at this comment.\n#[inline]\n\
             pub fn offset(n: usize) -> usize {{\n    n + 1\n}}\n"
        ),
    )
    .unwrap();
    let main = dir.join("app/src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    let text = text.replace(
        "helper::squares(generated::ROWS)",
        "helper::squares(helper::offset(generated::ROWS) - 1)",
    );
    std::fs::write(&main, text).unwrap();
    dir
}

/// The report the last run kept, its functions by name.
fn functions(dir: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(dir.join("target/memprof/report.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_owned(), f.clone()))
        .collect()
}

/// `function`'s table from `all` (an earlier run's), its lines' lists of
/// profiled callees without `callee`; and the entries taken out.
fn without_calls_to(all: &[(String, Value)], function: &str, callee: &str) -> (Value, Vec<Value>) {
    let mut table = all.iter().find(|(n, _)| n == function).unwrap().1.clone();
    let mut taken = Vec::new();
    for line in table["lines"].as_array_mut().unwrap() {
        if let Some(calls) = line["calls"].as_array_mut() {
            taken.extend(calls.iter().filter(|c| c["function"] == callee).cloned());
            calls.retain(|call| call["function"] != callee);
        }
    }
    (table, taken)
}

/// A table's `fn` row: its first with an increment (the rows of its
/// outer attributes come before it).
fn fn_row(function: &Value) -> &Value {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| !l["increment"].is_null())
        .unwrap()
}

#[test]
fn a_later_run_leaves_what_moved_no_heap_and_shows_the_same_figures() {
    let dir = fixture_with_offset("record", 7);
    let first = run(&dir, &["run", "--offline"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .starts_with("annotated 6 functions in 3 files\n"),
        "{}",
        first.stderr
    );
    let all = functions(&dir);
    let offset = &all.iter().find(|(n, _)| n == "helper::offset").unwrap().1;
    let row = fn_row(offset);
    assert_eq!(
        (&row["allocations"], &row["increment"]),
        (&Value::from(0), &Value::from(0)),
        "{offset}"
    );

    let second = run(&dir, &["run", "--offline"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.starts_with(
            "annotated 5 functions in 3 files; left as written: 1 that moved no heap in an \
             earlier run (the record in target/memprof; --fn . profiles them)\n"
        ),
        "{}",
        second.stderr
    );
    assert_eq!(second.stdout, first.stdout);
    let later = functions(&dir);
    assert!(later.iter().all(|(n, _)| n != "helper::offset"));
    // Every function the later run shows, to the last figure, as the first
    // run showed it; only its lines' lists of profiled callees no longer
    // name the function left as written, which moved 0 bytes.
    assert_eq!(later.len(), all.len() - 1);
    for (name, function) in &later {
        let (before, taken) = without_calls_to(&all, name, "helper::offset");
        for call in taken {
            assert_eq!(call["allocated_bytes"], 0, "{call}");
        }
        assert_eq!(function, &before, "{name}");
    }

    // `--fn .` profiles every function, whatever the record says.
    let every = run(&dir, &["run", "--offline", "--fn", "."]);
    assert!(
        every
            .stderr
            .starts_with("annotated 6 functions in 3 files\n"),
        "{}",
        every.stderr
    );

    // Changed, the function is profiled again, and the record learns it
    // now allocates.
    let lib = dir.join("helper/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        text.replace("    n + 1\n", "    vec![0u8; n].len() + 1\n"),
    )
    .unwrap();
    for _ in 0..2 {
        let changed = run(&dir, &["run", "--offline"]);
        assert!(
            changed
                .stderr
                .starts_with("annotated 6 functions in 3 files\n"),
            "{}",
            changed.stderr
        );
        let all = functions(&dir);
        let names: Vec<&String> = all.iter().map(|(n, _)| n).collect();
        let offset = &all
            .iter()
            .find(|(n, _)| n == "helper::offset")
            .unwrap_or_else(|| panic!("{names:?}\n{}", changed.stderr))
            .1;
        assert_eq!(fn_row(offset)["allocations"], 1, "{offset}");
    }
}

/// A function the record leaves as written is profiled again when a
/// function it calls changes: `helper::shifted` calls `helper::offset`;
/// neither moved heap, until `offset` allocates. The run that sees the
/// change profiles both, and `shifted`'s table has the bytes its calls now
/// move through `offset`.
#[test]
fn a_caller_of_a_changed_function_is_profiled_in_the_same_run() {
    let dir = fixture_with_offset("record-caller", 37);
    let lib = dir.join("helper/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        format!("{text}\npub fn shifted(n: usize) -> usize {{\n    offset(n)\n}}\n"),
    )
    .unwrap();
    let main = dir.join("app/src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replace("helper::offset(", "helper::shifted(")).unwrap();
    for _ in 0..2 {
        let run = run(&dir, &["run", "--offline"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let unchanged = run(&dir, &["run", "--offline"]);
    assert!(
        unchanged
            .stderr
            .starts_with("annotated 5 functions in 3 files; left as written: 2 that moved no heap"),
        "{}",
        unchanged.stderr
    );
    std::fs::write(
        &lib,
        std::fs::read_to_string(&lib)
            .unwrap()
            .replace("    n + 1\n", "    vec![0u8; n].len() + 1\n"),
    )
    .unwrap();
    let changed = run(&dir, &["run", "--offline"]);
    assert!(
        changed
            .stderr
            .starts_with("annotated 7 functions in 3 files\n"),
        "{}",
        changed.stderr
    );
    let shifted = functions(&dir)
        .into_iter()
        .find(|(n, _)| n == "helper::shifted")
        .unwrap()
        .1;
    let row = fn_row(&shifted);
    // `offset(1000)` allocates 1,000 bytes and frees them.
    assert_eq!(
        (
            &row["allocations"],
            &row["allocated_bytes"],
            &row["increment"]
        ),
        (&Value::from(1), &Value::from(1000), &Value::from(0)),
        "{shifted}"
    );
}

/// `cargo memprof clean` forgets the record: the next run profiles every
/// function again.
#[test]
fn clean_removes_the_copy_and_the_record() {
    let dir = fixture_with_offset("record-clean", 38);
    for _ in 0..2 {
        let run = run(&dir, &["run", "--offline"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    assert!(dir.join("target/memprof/record-run.json").is_file());
    let clean = run(&dir, &["clean"]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    let root = dir.canonicalize().unwrap().join("target/memprof");
    assert_eq!(
        clean.stderr,
        format!("cargo-memprof: removed {}\n", root.display())
    );
    assert!(!root.exists());
    // Nothing left to remove: nothing said.
    let nothing = run(&dir, &["clean"]);
    assert_eq!((nothing.code, nothing.stderr.as_str()), (0, ""));
    let again = run(&dir, &["run", "--offline"]);
    assert!(
        again
            .stderr
            .starts_with("annotated 6 functions in 3 files\n"),
        "{}",
        again.stderr
    );
}

/// A function called often whose calls rarely move the heap: the run after
/// the record leaves it as written and names it, and every table it shows
/// is the first run's, its caller's rows holding its bytes as before;
/// `--fn .` gives it its table back. `helper::push_to` is called 200,000
/// times and allocates only as its vector grows.
#[test]
fn a_hot_function_that_rarely_allocates_is_left_as_written_and_named() {
    let dir = fixture("record-rare", 39);
    let lib = dir.join("helper/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        format!(
            "{text}\npub fn collect(n: u64) -> Vec<u64> {{\n    let mut out = Vec::new();\n    \
             for i in 0..n {{\n        push_to(&mut out, i);\n    }}\n    out\n}}\n\n\
             pub fn push_to(out: &mut Vec<u64>, i: u64) {{\n    out.push(i);\n}}\n"
        ),
    )
    .unwrap();
    let main = dir.join("app/src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    let text = text.replace(
        "    let words = words();\n",
        "    let words = words();\n    assert_eq!(helper::collect(200_000).len(), 200_000);\n",
    );
    std::fs::write(&main, text).unwrap();

    let first = run(&dir, &["run", "--offline"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .starts_with("annotated 7 functions in 3 files\n"),
        "{}",
        first.stderr
    );
    let all = functions(&dir);
    let push_to = &all.iter().find(|(n, _)| n == "helper::push_to").unwrap().1;
    let row = fn_row(push_to);
    assert_eq!(row["occurrences"], 200_000, "{push_to}");
    let allocations = row["allocations"].as_u64().unwrap();
    assert!((1..=200).contains(&allocations), "{push_to}");

    let second = run(&dir, &["run", "--offline"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.starts_with(
            "annotated 6 functions in 3 files; left as written: 1 called often that rarely \
             moved the heap in an earlier run (below)\nleft as written, called 100,000 times \
             or more with at most one allocation in 1,000 calls (their bytes count in their \
             callers' rows; --fn . profiles them): helper::push_to\n"
        ),
        "{}",
        second.stderr
    );
    assert_eq!(second.stdout, first.stdout);
    let later = functions(&dir);
    assert_eq!(later.len(), all.len() - 1);
    // Every table as the first run's, `collect`'s loop row holding
    // `push_to`'s bytes; only the lists of profiled callees no longer name
    // it.
    let mut pushed = Value::Null;
    for (name, function) in &later {
        let (before, _) = without_calls_to(&all, name, "helper::push_to");
        assert_eq!(function, &before, "{name}");
        if name == "helper::collect" {
            pushed = function["lines"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["contents"].as_str().unwrap().contains("push_to("))
                .unwrap()
                .clone();
        }
    }
    let moved = |row: &Value| {
        let keys = ["allocations", "allocated_bytes", "increment"];
        keys.map(|k| row[k].clone())
    };
    assert_eq!(moved(&pushed), moved(row), "{pushed}");

    let every = run(&dir, &["run", "--offline", "--fn", "."]);
    assert!(
        every
            .stderr
            .starts_with("annotated 7 functions in 3 files\n"),
        "{}",
        every.stderr
    );
    assert!(functions(&dir).iter().any(|(n, _)| n == "helper::push_to"));
}
