//! A failing test shows what failed: its tables, the same whatever tests
//! ran before it in the process, and a failed budget's message before the
//! tables of the calls made during it. Each checked in a child run of this
//! test binary (see `support/child.rs`), whose captured output libtest shows.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

#[path = "support/child.rs"]
mod child;

use child::is_child;
use memprof::profile;
use std::hint::black_box;

#[profile]
fn shared_by_two_tests(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_shared_first() {
    if is_child() {
        for n in 1..=3 {
            shared_by_two_tests(n * 100);
        }
    }
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_shared_second() {
    if is_child() {
        shared_by_two_tests(4000);
        panic!("the second test fails");
    }
}

/// What libtest shows of the failed test `name` when the child runs the
/// tests that `filter` selects, one at a time: its captured output, with
/// what differs from run to run (the thread's id, the heap in the Mem usage
/// column) blanked.
fn failure_shown(filter: &[&str], name: &str) -> Vec<String> {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(filter)
        .args(["--ignored", "--test-threads=1"])
        .env("MEMPROF_CHILD", "1")
        .env_remove("MEMPROF")
        .env_remove("MEMPROF_REPORT")
        .env_remove("MEMPROF_UNIT")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout
        .lines()
        .skip_while(|l| *l != format!("---- {name} stdout ----"))
        .take_while(|l| !l.starts_with("note: run with `RUST_BACKTRACE"))
        .map(|l| {
            if let Some((thread, rest)) = l.split_once("' (")
                && let Some((_, after)) = rest.split_once(") panicked at ")
            {
                return format!("{thread}' (..) panicked at {after}");
            }
            let numbered = l.get(..7).is_some_and(|n| n.trim().parse::<u32>().is_ok());
            match l.get(7..20) {
                Some(_) if numbered => format!("{}{:13}{}", &l[..7], "", &l[20..]),
                _ => l.to_owned(),
            }
        })
        .collect()
}

#[test]
fn a_failing_test_shows_the_same_tables_whatever_ran_before_it() {
    // Regression: "first 3 calls" was counted per process, so a test that
    // ran after another calling the same function showed no table.
    let alone = failure_shown(&["child_shared_second", "--exact"], "child_shared_second");
    let after_another = failure_shown(&["child_shared_"], "child_shared_second");
    assert_eq!(alone, after_another);
    let l = line_of("fn shared_by_two_tests");
    let title = "Filename: tests/failing_tests.rs   Function: failing_tests::shared_by_two_tests";
    assert_eq!(
        alone,
        [
            "---- child_shared_second stdout ----".to_owned(),
            title.to_owned(),
            String::new(),
            " Line #    Mem usage     Increment         Peak   Occurrences   Line Contents"
                .to_owned(),
            "============================================================================="
                .to_owned(),
            format!(
                "{:>7}                                                         #[profile]",
                l - 1
            ),
            format!(
                "{l:>7}                        0 B      3.9 KiB             1   \
                 fn shared_by_two_tests(n: usize) -> usize {{"
            ),
            format!(
                "{:>7}                    3.9 KiB      3.9 KiB             1       let v = vec![0u8; n];",
                l + 1
            ),
            format!(
                "{:>7}                        0 B          0 B             1       v.len()",
                l + 2
            ),
            format!(
                "{:>7}                   -3.9 KiB          0 B             1   }}",
                l + 3
            ),
            String::new(),
            String::new(),
            format!(
                "thread 'child_shared_second' (..) panicked at tests/failing_tests.rs:{}:9:",
                line_of("panic!(\"the second test fails\")")
            ),
            "the second test fails".to_owned(),
        ]
    );
}

/// The line of this file that holds `text`.
fn line_of(text: &str) -> u32 {
    let source = include_str!("failing_tests.rs");
    let at = source.find(text).unwrap();
    source[..at].matches('\n').count() as u32 + 1
}

#[profile]
fn helper_in_budget(n: usize) -> usize {
    let v = black_box(vec![1u8; n]);
    v.len()
}

#[profile(limit = "1 KiB")]
fn over_budget_with_helpers() -> usize {
    let a = helper_in_budget(100);
    let b = helper_in_budget(200);
    let big = black_box(vec![0u8; 4096]);
    a + b + big.len()
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_budget_with_helpers() {
    if is_child() {
        over_budget_with_helpers();
    }
}

#[test]
fn a_failed_budget_shows_its_message_before_the_tables_of_its_callees() {
    // Regression: a budget failure came after 72 lines of its callees'
    // tables.
    let shown = failure_shown(
        &["child_budget_with_helpers", "--exact"],
        "child_budget_with_helpers",
    );
    assert!(
        shown[2].starts_with("thread 'child_budget_with_helpers' (..) panicked at "),
        "{shown:#?}"
    );
    let (h, b) = (
        line_of("fn helper_in_budget"),
        line_of("fn over_budget_with_helpers"),
    );
    let header = [
        " Line #    Mem usage     Increment         Peak   Occurrences   Line Contents",
        "=============================================================================",
    ];
    let helper = |n: usize| {
        let mut table = vec![
            "Filename: tests/failing_tests.rs   Function: failing_tests::helper_in_budget"
                .to_owned(),
            String::new(),
        ];
        table.extend(header.map(str::to_owned));
        let n = format!("{n} B");
        let minus = format!("-{n}");
        table.extend([
            format!("{:>7}{:57}#[profile]", h - 1, ""),
            format!(
                "{h:>7}{:13}{:>14}{n:>13}{:>14}   fn helper_in_budget(n: usize) -> usize {{",
                "", "0 B", 1
            ),
            format!(
                "{:>7}{:13}{n:>14}{n:>13}{:>14}       let v = black_box(vec![1u8; n]);",
                h + 1,
                "",
                1
            ),
            format!(
                "{:>7}{:13}{:>14}{:>13}{:>14}       v.len()",
                h + 2,
                "",
                "0 B",
                "0 B",
                1
            ),
            format!(
                "{:>7}{:13}{minus:>14}{:>13}{:>14}   }}",
                h + 3,
                "",
                "0 B",
                1
            ),
            String::new(),
        ]);
        table
    };
    let mut expected = vec![
        format!(
            "memory limit exceeded in failing_tests::over_budget_with_helpers (tests/failing_tests.rs:{b}): \
             peak 4.0 KiB > limit 1.0 KiB"
        ),
        String::new(),
        "Filename: tests/failing_tests.rs   Function: failing_tests::over_budget_with_helpers"
            .to_owned(),
        String::new(),
    ];
    expected.extend(header.map(str::to_owned));
    expected.extend([
        format!("{:>7}{:57}#[profile(limit = \"1 KiB\")]", b - 1, ""),
        format!("{b:>7}{:13}{:>14}{:>13}{:>14}   fn over_budget_with_helpers() -> usize {{", "", "0 B", "4.0 KiB", 1),
        format!("{:>7}{:13}{:>14}{:>13}{:>14}       let a = helper_in_budget(100);", b + 1, "", "0 B", "100 B", 1),
        format!("{:>7}{:13}{:>14}{:>13}{:>14}       let b = helper_in_budget(200);", b + 2, "", "0 B", "200 B", 1),
        format!(
            "{:>7}{:13}{:>14}{:>13}{:>14}       let big = black_box(vec![0u8; 4096]);   <-- peak over the limit",
            b + 3, "", "4.0 KiB", "4.0 KiB", 1
        ),
        format!("{:>7}{:13}{:>14}{:>13}{:>14}       a + b + big.len()", b + 4, "", "0 B", "0 B", 1),
        format!("{:>7}{:13}{:>14}{:>13}{:>14}   }}", b + 5, "", "-4.0 KiB", "0 B", 1),
        String::new(),
        "(memprof: the tables of calls made during it, held back so that this one comes first:)"
            .to_owned(),
        String::new(),
    ]);
    expected.extend(helper(100));
    expected.extend(helper(200));
    expected.push(String::new());
    assert_eq!(shown[3..], expected, "{shown:#?}");
}
