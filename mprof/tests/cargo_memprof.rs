//! `cargo memprof`: on a copy of tests/fixtures/cargo-memprof (a workspace
//! with a path dependency, inherited fields, a build script writing to
//! OUT_DIR, include_str!, a #[path] module) and on a copy of a registry
//! crate the workspace depends on (either). Every test checks that the copy
//! it ran in holds, outside target/, exactly the files it held before.
//!
//! The builds share one target directory (CARGO_MEMPROF_TARGET_DIR), so
//! memprof is built once for all of them; each copy builds its own crates.

#[path = "common/signals.rs"]
mod signals;
#[path = "common/cargo_memprof.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use support::*;

#[test]
fn run_on_a_workspace_prints_the_users_paths_and_lines_and_rebuilds_what_changed() {
    let dir = fixture("run", 1);
    let first = run(&dir, &["run", "--offline"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .starts_with("annotated 5 functions in 3 files\n"),
        "{}",
        first.stderr
    );
    // The program's stdout is its own; the report follows cargo's lines on
    // stderr.
    assert_eq!(first.stdout, "alpha,beta,gamma,delta 1000 4096\n");
    let out = &first.stderr;
    assert!(out.contains("\nSummary: 4 functions ran"), "{out}");
    assert!(
        out.contains("Filename: app/src/main.rs   Function: app::main   Calls: 1"),
        "{out}"
    );
    assert!(out.contains("Filename: helper/src/lib.rs   Function: helper::squares   Calls: 1"));
    assert!(out.contains("Filename: app/src/report/format.rs   Function: app::format::line"));
    // Line 16 of the user's main.rs, 1000 u64s, and the first line as written.
    assert!(out.contains("     16      9.3 KiB       7.8 KiB      7.8 KiB             1       let table = helper::squares(generated::ROWS);"), "{out}");
    assert!(
        out.contains("     15      1.5 KiB           0 B     11.9 KiB             1   fn main() {"),
        "{out}"
    );
    assert!(!out.contains("#[::memprof::profile]"));
    assert_rows_are_the_users_lines(out, &dir);

    // `mprof report` prints the kept report as the run did.
    let report_again = || {
        let again = Command::new(env!("CARGO_BIN_EXE_mprof"))
            .args(["report", "target/memprof/report.json", "--top", "10"])
            .current_dir(&*dir)
            .output()
            .unwrap();
        assert!(again.status.success(), "{again:?}");
        String::from_utf8(again.stdout).unwrap()
    };
    let again = report_again();
    assert_eq!(again, &out[out.find("Summary: ").unwrap()..]);
    // docs/cargo-memprof.md's "Where the report goes" shows both.
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/cargo-memprof.md"
    ))
    .unwrap();
    let block = doc
        .split("```")
        .find(|b| b.starts_with("\n$ cargo memprof run > out.txt\n"))
        .unwrap();
    let (ran, reported) = block.split_once("$ mprof report").unwrap();
    let shown = |part: &str| -> Vec<String> {
        let lines = part
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty() && *l != "..." && !l.starts_with("$ "));
        lines.map(str::to_owned).collect()
    };
    let lines = |text: &str| -> Vec<String> { text.lines().map(str::to_owned).collect() };
    let doc_name = "docs/cargo-memprof.md";
    assert_printed_in_order(&shown(ran), &lines(out), doc_name, out);
    assert_printed_in_order(&shown(reported), &lines(&again), doc_name, &again);

    // MEMPROF_OUTPUT takes the report elsewhere (nothing is rebuilt).
    let elsewhere = TempDir::new("cargo-memprof-output");
    let file = elsewhere.join("report.txt");
    let second = run_with(
        &dir,
        &["run", "--offline"],
        &[("MEMPROF_OUTPUT", file.to_str().unwrap())],
    );
    assert_eq!(second.code, 0);
    assert!(!second.stderr.contains("Compiling"), "{}", second.stderr);
    assert_eq!(second.stdout, "alpha,beta,gamma,delta 1000 4096\n");
    assert!(!second.stderr.contains("Summary: "), "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!(
            "cargo-memprof: the report is in {} (its JSON: ",
            file.display()
        )),
        "{}",
        second.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), report_again());

    let lib = dir.join("helper/src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("// changed\n");
    std::fs::write(&lib, text).unwrap();
    let third = run(&dir, &["run", "--offline"]);
    let compiled: Vec<&str> = third
        .stderr
        .lines()
        .filter(|l| l.contains("Compiling"))
        .collect();
    assert_eq!(compiled.len(), 2, "{}", third.stderr);
    assert!(compiled[0].contains("Compiling helper v0.3.1 "));
    assert!(compiled[1].contains("Compiling app v0.3.1 "));

    // A file deleted from the tree goes from the copy too.
    let extra = dir.join("app/tests/extra.rs");
    std::fs::create_dir_all(extra.parent().unwrap()).unwrap();
    std::fs::write(&extra, "#[test]\nfn extra() {}\n").unwrap();
    let copied = shadow_tree(&dir).join("app/tests/extra.rs");
    assert_eq!(run(&dir, &["run", "--offline"]).code, 0);
    assert!(copied.is_file());
    std::fs::remove_dir_all(extra.parent().unwrap()).unwrap();
    assert_eq!(run(&dir, &["run", "--offline"]).code, 0);
    assert!(!copied.exists() && !copied.parent().unwrap().exists());
}

#[test]
fn test_on_a_registry_crate_copy() {
    let metadata = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let either = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "either")
        .expect("the workspace depends on either (through rayon)");
    let manifest = Path::new(either["manifest_path"].as_str().unwrap());
    let dir = copy_of(manifest.parent().unwrap(), "either");
    let run = run(&dir, &["test", "--offline", "--lib"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.starts_with("annotated "), "{}", run.stderr);
    assert!(run.stdout.contains("test result: ok."));
    assert!(run.stdout.contains("Summary: "), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("Filename: src/lib.rs   Function: either::")
    );
    assert_eq!(run.stdout.matches("\nFilename: ").count(), 10);
    assert_rows_are_the_users_lines(&run.stdout, &dir);
}

/// Each row of each table shows the line of the user's file it names.
fn assert_rows_are_the_users_lines(out: &str, dir: &Path) {
    let mut file: Option<Vec<String>> = None;
    let mut column = 0;
    let mut checked = 0;
    for row in out.lines() {
        if let Some(rest) = row.strip_prefix("Filename: ") {
            let name = rest.split("   ").next().unwrap();
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            file = Some(text.lines().map(str::to_owned).collect());
            continue;
        }
        let Some(lines) = &file else { continue };
        if row.starts_with(" Line #") {
            column = row.find("Line Contents").unwrap();
            continue;
        }
        let Some(number) = row.get(..7).and_then(|n| n.trim().parse::<usize>().ok()) else {
            continue;
        };
        let contents = row.get(column..).unwrap_or("").trim();
        if contents.ends_with('…') {
            continue;
        }
        assert_eq!(lines[number - 1].trim(), contents, "{row}");
        checked += 1;
    }
    assert!(checked >= 10, "{checked} rows checked");
}

/// `row` with its Mem usage blanked when it is a table's row: the heap a
/// test binary holds when a test starts depends on the harness.
fn without_mem_usage(row: &str) -> String {
    let numbered = row
        .get(..7)
        .is_some_and(|n| n.trim().parse::<u32>().is_ok());
    match row.get(7..20) {
        Some(_) if numbered => format!("{}{:13}{}", &row[..7], "", &row[20..]),
        _ => row.to_owned(),
    }
}

#[test]
fn readme_shows_what_cargo_memprof_test_prints() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = &readme[readme
        .find("## Every function, without editing a line")
        .unwrap()..];
    let block = section.split("```").nth(3).unwrap();
    let shown: Vec<&str> = block.lines().skip(1).collect();
    let dir = fixture("readme", 16);
    let run = run(&dir, &["test", "--offline"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(shown[0], run.stderr.lines().next().unwrap());
    // Every other line shown is printed, in that order.
    let printed: Vec<String> = run.stdout.lines().map(without_mem_usage).collect();
    let shown: Vec<String> = shown[1..]
        .iter()
        .filter(|l| **l != "...")
        .map(|l| without_mem_usage(l))
        .collect();
    assert_printed_in_order(&shown, &printed, "the README", &run.stdout);
}

#[test]
fn a_failing_test_shows_its_tables_and_cargos_status() {
    let dir = fixture("failing", 2);
    let failing = |report: Option<&str>| {
        let _turn = turn();
        let before = snapshot(&dir);
        let mut command = command(&dir, &["test", "--offline", "-p", "helper"]);
        command.env("FIXTURE_FAIL", "1");
        if let Some(report) = report {
            command.env("MEMPROF_REPORT", report);
        }
        let out = command.output().unwrap();
        assert!(before == snapshot(&dir));
        out
    };
    // By default the test binaries print no tables of their own: the
    // failing test's output is its panic, and the merged report's summary
    // and heaviest tables follow cargo's, the failing test's among them.
    let run = failing(None);
    assert_eq!(run.status.code(), Some(101));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let own = stdout
        .split("---- tests::squares_has_n stdout ----")
        .nth(1)
        .and_then(|rest| rest.split("\nfailures:").next())
        .unwrap();
    assert!(!own.contains("Function:"), "{own}");
    let summary = stdout.split("Summary: ").nth(1).unwrap();
    assert!(
        summary.contains("Function: helper::tests::squares_has_n"),
        "{stdout}"
    );
    // MEMPROF_REPORT=auto asks for each test's first calls' tables: libtest
    // shows the failing test's own.
    let run = failing(Some("auto"));
    assert_eq!(run.status.code(), Some(101));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("---- tests::squares_has_n stdout ----"),
        "{stdout}"
    );
    // Its own table's first row is the user's line: the test's macro, which
    // read the copy's, leaves out the attribute annotating put in front.
    let own = stdout
        .split("---- tests::squares_has_n stdout ----")
        .nth(1)
        .and_then(|rest| rest.split("\nfailures:").next())
        .unwrap();
    assert!(
        own.contains("Function: helper::tests::squares_has_n"),
        "{own}"
    );
    assert!(
        own.contains("             1       fn squares_has_n() {\n"),
        "{own}"
    );
    assert!(!stdout.contains("#[::memprof::profile]"), "{stdout}");
}

#[test]
fn fn_narrows_to_matching_functions() {
    let dir = fixture("fn", 3);
    let run = run(&dir, &["run", "--offline", "--fn", "squares$"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("annotated 1 function in 1 file; left as written: 4 by --fn/--skip-fn\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Summary: 1 function ran"));
    assert_eq!(run.stderr.matches("\nFilename: ").count(), 1);
}

#[test]
fn skip_fn_leaves_matching_functions_as_written() {
    let dir = fixture("skip", 4);
    let run = run(&dir, &["run", "--offline", "--skip-fn", "^app::"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("annotated 2 functions in 1 file; left as written: 3 by --fn/--skip-fn\n")
    );
    assert!(run.stderr.contains("Summary: 1 function ran"));
    assert!(!run.stderr.contains("app::"));
}

#[test]
fn top_limits_the_tables() {
    let dir = fixture("top", 5);
    let run = run(&dir, &["run", "--offline", "--top", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr.matches("\nFilename: ").count(), 2);
    // Highest peak first.
    assert!(
        run.stderr
            .contains("\nFilename: app/src/main.rs   Function: app::main")
    );
    assert!(
        run.stderr
            .contains("\nFilename: helper/src/lib.rs   Function: helper::squares")
    );
}

#[test]
fn json_and_html_keep_every_function() {
    let dir = fixture("json", 6);
    let out = TempDir::new("out");
    let (json, html) = (out.join("report.json"), out.join("report.html"));
    let run = run(
        &dir,
        &[
            "--json",
            json.to_str().unwrap(),
            "run",
            "--offline",
            "--html",
            html.to_str().unwrap(),
            "--top",
            "1",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let functions = report["functions"].as_array().unwrap();
    assert_eq!(functions.len(), 4);
    let main = functions.iter().find(|f| f["name"] == "app::main").unwrap();
    assert_eq!(main["file"], "app/src/main.rs");
    assert_eq!(main["lines"][0]["line"], 15);
    assert_eq!(main["lines"][0]["contents"], "fn main() {");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("app::format::line") && page.contains("helper::squares"));
}

#[test]
fn dep_profiles_a_registry_dependency_under_its_own_name() {
    let dir = fixture("dep", 7);
    let run = run(&dir, &["run", "--offline", "--dep", "either"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stderr;
    let row = out
        .lines()
        .find(|l| {
            l.starts_with("Filename: either-1.")
                && l.contains("/src/lib.rs   Function: either::Either")
        })
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("::either"), "{row}");
}

#[test]
fn a_build_error_names_the_function_and_the_users_path() {
    let dir = fixture("broken", 8);
    let lib = dir.join("helper/src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\npub fn broken() -> u32 {\n    \"not a number\"\n}\n");
    std::fs::write(&lib, text).unwrap();
    let run = run(&dir, &["run", "--offline"]);
    assert_eq!(run.code, 101, "{}", run.stderr);
    let bug = run
        .stderr
        .lines()
        .find(|l| l.starts_with("cargo-memprof: the annotated copy does not build"))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(bug.ends_with("in helper::broken; if the original does, this is memprof's bug: leave them as written with --skip-fn '^helper::broken$'"), "{bug}");
    let after = run.stderr.split(bug).nth(1).unwrap();
    assert!(after.contains("--> helper/src/lib.rs:16:"), "{after}");
    assert!(!run.stderr.contains("target/memprof"), "{}", run.stderr);
}

/// A library's own allocator: wrapped in memprof's when its package is
/// profiled; a conflict, said in one line, when it is not.
#[test]
fn a_libraries_own_global_allocator_is_counted_through_or_told_why_not() {
    let dir = fixture("own-allocator", 29);
    let lib = dir.join("helper/src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\n#[global_allocator]\nstatic OWN: std::alloc::System = std::alloc::System;\n");
    std::fs::write(&lib, text).unwrap();
    let run_all = run(&dir, &["run", "--offline"]);
    assert_eq!(run_all.code, 0, "{}", run_all.stderr);
    // The same figure as with memprof's own allocator (see the sites test).
    assert!(
        run_all.stderr.contains(
            "     16      9.3 KiB       7.8 KiB      7.8 KiB             1       let table = helper::squares(generated::ROWS);"
        ),
        "{}",
        run_all.stderr
    );
    let run = run(&dir, &["run", "--offline", "-p", "app"]);
    assert_eq!(run.code, 101, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "cargo-memprof: a crate the build links has a #[global_allocator] of its own, and it is not profiled: profile its package too (-p)"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("memprof's bug"), "{}", run.stderr);
}

#[test]
fn ctrl_c_during_the_build_leaves_the_tree_as_it_was() {
    use std::os::unix::process::CommandExt;
    let dir = fixture("sigint", 9);
    let _turn = turn();
    let before = snapshot(&dir);
    let hold = dir.join("target").join("hold");
    let mut child = signals::default_signals(&mut command(&dir, &["run", "--offline"]))
        .env("FIXTURE_HOLD", &hold)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The build script writes the file, then waits to be interrupted.
    let mut waited = 0;
    while !hold.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before its build script ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
        assert!(waited < 6000, "the build script never started");
    }
    // SAFETY: signals the child's own process group, made above.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let status = child.wait().unwrap();
    // cargo was interrupted; cargo-memprof returns its status, 128 + SIGINT.
    assert_eq!(status.code(), Some(130));
    assert!(before == snapshot(&dir), "the user's tree changed");
}

#[test]
fn not_in_a_package_is_one_line_and_exit_2() {
    let dir = TempDir::new("empty");
    let run = run(&dir, &["test"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cargo-memprof: not in a cargo package: no Cargo.toml here or above\n"
    );
}

#[test]
fn unknown_package_is_one_line_and_exit_2() {
    let dir = fixture("unknown-package", 10);
    let run = run(&dir, &["test", "--offline", "-p", "nosuch"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cargo-memprof: no package named `nosuch` in this workspace\n"
    );
}

#[test]
fn unknown_dependency_is_one_line_and_exit_2() {
    let dir = fixture("unknown-dep", 11);
    let run = run(&dir, &["run", "--offline", "--dep", "nosuch"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cargo-memprof: no dependency named `nosuch` from the default registry: --dep takes a dependency's package name\n"
    );
}

/// memprof's runtime depends on memchr (through backtrace and object): a
/// copy of memchr annotated, which depends on memprof, would depend on
/// itself. Cargo said so in many lines, with exit 101.
#[test]
fn a_dependency_of_memprof_itself_is_one_line_and_exit_2() {
    let dir = fixture("memprof-dep", 28);
    let run = run(&dir, &["run", "--offline", "--dep", "memchr"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "cargo-memprof: --dep memchr: memprof itself depends on memchr (through backtrace), so an annotated copy would depend on itself; profile it in its own workspace\n"
    );
}

#[test]
fn fn_matching_nothing_is_one_line_and_exit_2() {
    let dir = fixture("no-fn", 12);
    let run = run(&dir, &["run", "--offline", "--fn", "^nothing$"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cargo-memprof: --fn `^nothing$` matches no function of the selected packages\n"
    );
}

#[test]
fn help_fits_one_screen() {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-memprof"))
        .args(["memprof", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("Usage: cargo memprof [OPTIONS] <COMMAND>"),
        "{help}"
    );
    assert!(help.lines().count() <= 40, "{help}");
    assert!(
        help.contains("\n      --sites[=<sample[:SIZE]>]  "),
        "{help}"
    );
}

#[test]
fn memprof_settings_reach_the_printed_tables() {
    let dir = fixture("settings", 13);
    let _turn = turn();
    let before = snapshot(&dir);
    let out = command(&dir, &["run", "--offline", "--top", "1"])
        .env("MEMPROF_COLUMNS", "allocs")
        .env("MEMPROF_UNIT", "B")
        .output()
        .unwrap();
    assert!(before == snapshot(&dir));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains(
            "\n Line #   Mem usage   Increment       Peak   Occurrences   Allocs   Line Contents\n"
        ),
        "{report}"
    );
    // 1000 u64s, in bytes.
    assert!(report.contains("8000 B"), "{report}");
}

#[test]
fn a_pattern_that_is_not_a_regex_is_one_line_and_exit_2() {
    let dir = fixture("bad-regex", 14);
    let run = run(&dir, &["run", "--offline", "--skip-fn", "app::(main"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cargo-memprof: --skip-fn `app::(main` is not a regular expression: unclosed group\n"
    );
}

#[test]
fn run_starts_the_program_where_you_are() {
    let dir = fixture("cwd", 15);
    let here = dir.join("helper");
    let _turn = turn();
    let before = snapshot(&dir);
    let out = command(&here, &["run", "--offline", "-p", "app"])
        .env("FIXTURE_CWD", "1")
        .output()
        .unwrap();
    assert!(before == snapshot(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cwd = here.canonicalize().unwrap();
    assert!(
        stdout.contains(&format!("\ncwd {}\n", cwd.display())),
        "{stdout}"
    );
}
