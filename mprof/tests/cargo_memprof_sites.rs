//! `cargo memprof --sites`: allocation sites on a copy of
//! tests/fixtures/cargo-memprof, whose `app` calls into `helper`, a package
//! left as written when only `app` is profiled. Every run checks that the
//! copy holds, outside target/, exactly the files it held before.

#[path = "common/cargo_memprof.rs"]
mod support;

use support::*;

#[test]
fn sites_name_the_functions_of_a_package_left_as_written() {
    let dir = fixture("sites", 17);
    let out = TempDir::new("sites-out");
    let json = out.join("report.json");
    let pprof = out.join("heap.pb.gz");
    // Only app is profiled: helper::squares, which line 16 calls, is not
    // annotated, so the line's one figure is all its table shows of it.
    let args = ["run", "--offline", "-p", "app", "--sites"];
    let run = run(
        &dir,
        &[
            &args[..],
            &["--json", json.to_str().unwrap()],
            &["--pprof", pprof.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("annotated 3 functions in 2 files\n"),
        "{}",
        run.stderr
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let main = report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "app::main")
        .unwrap();
    let line = main["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == 16)
        .unwrap();
    // 1000 u64s in one allocation, still held when the line ended, made
    // in helper::squares at line 2 of the user's helper/src/lib.rs.
    let sites = line["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "{line}");
    let site = &sites[0];
    assert_eq!(
        (
            &site["allocations"],
            &site["allocated_bytes"],
            &site["live_bytes"],
            &site["estimated"]
        ),
        (
            &1.into(),
            &8000.into(),
            &8000.into(),
            &serde_json::Value::Bool(false)
        ),
        "{site}"
    );
    let frames = site["frames"].as_array().unwrap();
    assert_eq!(
        frames.last().unwrap(),
        &serde_json::json!({"function": "helper::squares", "file": "helper/src/lib.rs", "line": 2}),
        "{site}"
    );
    // --pprof: the same site as a stack that ends at the line, the user's
    // file names.
    let profile = memprof::HeapProfile::from_pprof(&std::fs::read(&pprof).unwrap()).unwrap();
    let (stack, values) = profile
        .samples
        .iter()
        .find(|(stack, _)| stack.last().and_then(|f| f.line) == Some(16))
        .unwrap();
    let line = stack.last().unwrap();
    assert_eq!(
        (line.function.as_str(), line.file.as_deref()),
        ("app::main", Some("app/src/main.rs"))
    );
    assert_eq!(
        (
            stack[stack.len() - 2].function.as_str(),
            stack[stack.len() - 2].file.as_deref()
        ),
        ("helper::squares", Some("helper/src/lib.rs"))
    );
    // In use: Live at exit, and `table` was freed when `main` returned.
    assert_eq!(
        (values.alloc_space, values.inuse_objects, values.inuse_space),
        (8000, 0, 0)
    );
    assert!(!run.stderr.contains("target/memprof"), "{}", run.stderr);
    assert_doc_shows(&run);

    // MEMPROF_SITES works without the flag; the flag wins over it.
    let from_env = run_with(&dir, &args[..4], &[("MEMPROF_SITES", "1")]);
    assert!(
        from_env.stderr.contains(
            "\nLine 16: 7.8 KiB allocated in 1 allocation, 7.8 KiB of it live when the line ended\n"
        ),
        "{}",
        from_env.stderr
    );
    let flag_wins = run_with(
        &dir,
        &[&args[..4], &["--sites=sample:1B"]].concat(),
        &[("MEMPROF_SITES", "1")],
    );
    assert!(
        flag_wins.stderr.contains(
            "\nAllocation sites (sampled: estimates), by bytes allocated (lines with 1/20 or more of the call's):\nLine 16: ~7.8 KiB allocated in ~1 allocation,"
        ),
        "{}",
        flag_wins.stderr
    );
}

/// docs/cargo-memprof.md's `--sites` output is printed, line by line in
/// order, but for the standard library's line numbers (the toolchain's).
fn assert_doc_shows(run: &Run) {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/cargo-memprof.md"
    ))
    .unwrap();
    let block = doc
        .split("```")
        .find(|b| b.starts_with("\n$ cargo memprof run -p app --sites\n"))
        .unwrap();
    // The report follows cargo's lines on stderr.
    let printed: Vec<&str> = run.stderr.lines().collect();
    let mut shown = Vec::new();
    for line in block.lines().skip(2) {
        if line == "..." || line.contains("(library/") {
            continue;
        }
        if line.starts_with("annotated ") {
            assert!(
                run.stderr.starts_with(&format!("{line}\n")),
                "{}",
                run.stderr
            );
            continue;
        }
        shown.push(line);
    }
    assert_printed_in_order(&shown, &printed, "docs/cargo-memprof.md", &run.stderr);
}

#[test]
fn sites_takes_sample_or_nothing_else_is_one_line_and_exit_2() {
    let dir = fixture("bad-sites", 18);
    for (flag, expected) in [
        (
            "--sites=often",
            "--sites=often: expected --sites (every allocation), --sites=sample or --sites=sample:<size> (one sample per that many bytes on average)",
        ),
        (
            "--sites=sample:0",
            "--sites=sample:0: expected a size such as \"24 MiB\" or \"1.5 GB\" (units B, KB, MB, GB, KiB, MiB, GiB; MB = MiB), of at least 1 B",
        ),
    ] {
        let run = run(&dir, &["test", flag]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_eq!(run.stderr, format!("cargo-memprof: {expected}\n"));
    }
}

/// A release build, whose profile has no debug information, gets enough:
/// every frame of the user's crates, in the report and in the pprof
/// profile, has its file and line.
#[test]
fn release_sites_have_files_and_lines() {
    let dir = fixture("release-sites", 19);
    let out = TempDir::new("release-sites-out");
    let json = out.join("report.json");
    let pprof = out.join("heap.pb.gz");
    let run = run(
        &dir,
        &[
            "run",
            "--offline",
            "--release",
            "-p",
            "app",
            "--sites",
            "--json",
            json.to_str().unwrap(),
            "--pprof",
            pprof.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let is_users =
        |function: &str| function.starts_with("app::") || function.starts_with("helper::");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut user_frames = Vec::new();
    for function in report["functions"].as_array().unwrap() {
        for line in function["lines"].as_array().unwrap() {
            for site in line["sites"].as_array().into_iter().flatten() {
                for frame in site["frames"].as_array().unwrap() {
                    if is_users(frame["function"].as_str().unwrap()) {
                        assert!(
                            frame["file"].is_string() && frame["line"].is_u64(),
                            "{frame} in {site}"
                        );
                        user_frames.push(frame.to_string());
                    }
                }
            }
        }
    }
    // helper::squares's allocation, at line 2 of the user's file.
    let squares =
        serde_json::json!({"function": "helper::squares", "file": "helper/src/lib.rs", "line": 2});
    assert!(
        user_frames.contains(&squares.to_string()),
        "{user_frames:?}\n{}",
        run.stderr
    );
    let profile = memprof::HeapProfile::from_pprof(&std::fs::read(&pprof).unwrap()).unwrap();
    let mut located = 0;
    for stack in profile.samples.keys() {
        for frame in stack.iter().filter(|f| is_users(&f.function)) {
            assert!(
                frame.file.is_some() && frame.line.is_some(),
                "{frame:?} in {stack:?}"
            );
            located += 1;
        }
    }
    assert!(located >= 2, "{:?}", profile.samples);
}
