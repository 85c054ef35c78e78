//! Quiet calls under `cargo memprof`, whose builds have frame pointers:
//! each allocation and free of a quiet call is placed on the statement that
//! made it, so a function whose calls go quiet keeps, on every line,
//! Increment, Allocs and Allocated equal to a run where every call takes
//! its rows (`MEMPROF_QUIET=off`), and stays quiet when its calls grow a
//! buffer now and then, or allocate on every call once 1,024 of them did;
//! and a call whose loop has turned 65,536 times, seldom allocating, stops
//! stepping its rows, which keep the same figures, while one whose loop
//! allocates on every turn keeps stepping them (docs/reference.md, "Calls
//! that move nothing go quiet").

#[path = "common/cargo_memprof.rs"]
mod support;

use serde_json::Value;
use support::*;

/// Three functions that grow a vector now and then: one directly, one
/// through the first (a quiet call inside a quiet call) and itself, one at
/// the bottom of a recursion; and one that allocates on every call.
const MAIN: &str = r#"#[inline(never)]
fn push_one(v: &mut Vec<u64>, x: u64) {
    let y = x * 2;
    v.push(y);
}

fn push_two(v: &mut Vec<u64>, x: u64) {
    let z = x + 1;
    push_one(v, z);
    v.push(z);
}

#[inline(never)]
fn nest(v: &mut Vec<u64>, n: u32) {
    if n == 0 {
        v.push(1);
    } else {
        nest(v, n - 1);
    }
}

#[inline(never)]
fn keep(all: &mut Vec<Vec<u64>>, i: u64) {
    let v = vec![i; 4];
    all.push(v);
}

#[inline(never)]
fn fill(all: &mut Vec<Vec<u64>>, n: u64) -> usize {
    let mut total = 0;
    for i in 0..n {
        let v = vec![i; 4];
        all.push(v);
        let w = vec![i; 2];
        all.push(w);
        let t = vec![0u8; 8];
        total += t.len() + format!("{i}").len();
    }
    total
}

#[inline(never)]
fn scan(all: &mut Vec<Vec<u64>>, n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        let x = i.wrapping_mul(2_654_435_761) >> 7;
        sum ^= x;
        if i % 1000 == 0 {
            all.push(vec![i; 4]);
        }
    }
    sum
}

fn main() {
    let mut e = Vec::with_capacity(140_000);
    let filled = fill(&mut e, 70_000);
    let mut f = Vec::with_capacity(1_000);
    let scanned = scan(&mut f, 200_000);
    let mut a = Vec::with_capacity(1000);
    for i in 0..3000 {
        push_one(&mut a, i);
    }
    let mut b = Vec::with_capacity(1001);
    for i in 0..3000 {
        push_two(&mut b, i);
    }
    let mut c = Vec::new();
    for i in 0..20_000 {
        if i % 1000 == 0 {
            c = Vec::new();
        }
        nest(&mut c, 3);
    }
    let mut d = Vec::with_capacity(20_000);
    for i in 0..20_000 {
        keep(&mut d, i);
    }
    println!("{} {} {} {} {filled} {scanned}", a.len(), b.len(), c.len(), d.len());
    // Still in use at the report.
    std::mem::forget(a);
    std::mem::forget(d);
}
"#;

/// The report.json of a release run, with `env` set.
fn report(dir: &std::path::Path, env: &[(&str, &str)]) -> Value {
    report_of(dir, &["run", "--release", "-q"], env)
}

/// The report.json of a run of `cargo memprof` with `args`, with `env` set.
fn report_of(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Value {
    let run = run_with(dir, args, env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("3000 6000 1000 20000 898890 20164822656"),
        "{}",
        run.stdout
    );
    let text = std::fs::read_to_string(dir.join("target/memprof/report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The fixture as a package named `name`: its report.json from a run as
/// `cargo memprof` makes it, then from one where every call takes its rows
/// (`MEMPROF_QUIET=off`).
fn reports(name: &str) -> (Value, Value) {
    let dir = fixture(name);
    (report(&dir, &[]), report(&dir, &[("MEMPROF_QUIET", "off")]))
}

/// The fixture as a package named `name`.
fn fixture(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), MAIN).unwrap();
    dir
}

/// A function's table by the end of its path.
fn function<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no table of {name}"))
}

/// Each line's Increment, Allocs and Allocated (null where none).
fn event_columns(function: &Value) -> Vec<(u64, Value, Value, Value)> {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["line"].as_u64().unwrap(),
                l["increment"].clone(),
                l["allocations"].clone(),
                l["allocated_bytes"].clone(),
            )
        })
        .collect()
}

/// A line's Increment, Allocs and Allocated, by its contents.
fn line(function: &Value, contents: &str) -> (i64, u64, u64) {
    let line = line_of(function, contents);
    (
        line["increment"].as_i64().unwrap(),
        line["allocations"].as_u64().unwrap(),
        line["allocated_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn quiet_calls_keep_every_lines_increment_allocs_and_allocated() {
    let dir = fixture("quiet-events");
    let quiet = report(&dir, &[]);
    let rows = report(&dir, &[("MEMPROF_QUIET", "off")]);
    for name in ["::push_one", "::push_two", "::nest", "::keep"] {
        let (q, r) = (function(&quiet, name), function(&rows, name));
        assert_eq!(q["calls"], r["calls"], "{name}");
        // Most calls ran quiet, and every event was placed.
        let quiet_calls = q["quiet_calls"].as_u64().unwrap();
        assert!(
            quiet_calls * 10 > q["calls"].as_u64().unwrap() * 9,
            "{name}: {q}"
        );
        assert_eq!(q["quiet_unplaced"], 0, "{name}");
        assert_eq!(r["quiet_calls"], 0, "{name}");
        assert_eq!(event_columns(q), event_columns(r), "{name}");
    }
    // The figures themselves: 8-byte elements, each buffer doubled when
    // full. `push_one` grows `a` from 1,000 to 2,000 and 4,000 elements;
    // `b` takes two pushes a call of `push_two`, `push_one`'s first: its
    // own grows `b` from 1,001 to 2,002, `push_one`'s to 4,004 and 8,008.
    let push_one = function(&quiet, "::push_one");
    assert_eq!(
        line(push_one, "v.push(y);"),
        (
            8_000 + 16_000 + 16_016 + 32_032,
            4,
            16_000 + 32_000 + 32_032 + 64_064
        )
    );
    let push_two = function(&quiet, "::push_two");
    assert_eq!(
        line(push_two, "push_one(v, z);"),
        (16_016 + 32_032, 2, 32_032 + 64_064)
    );
    assert_eq!(line(push_two, "v.push(z);"), (8_008, 1, 16_016));
    // `nest` fills a new vector to 1,000 elements 20 times, each through
    // 9 buffers (4 to 1,024 elements, 2,044 in all), 8,192 bytes kept: 180
    // quiet calls of its four levels moved the heap, 720 of 80,000, and it
    // stayed quiet. The recursion's every level runs `nest(v, n - 1);`,
    // which holds each growth once, as its innermost call's `v.push(1);`
    // does.
    let nest = function(&quiet, "::nest");
    let grown = (20 * 8_192, 20 * 9, 20 * 8 * 2_044);
    assert_eq!(line(nest, "v.push(1);"), grown);
    assert_eq!(line(nest, "nest(v, n - 1);"), grown);
    // `keep` allocates 32 bytes on each of its 20,000 calls: after 1,024
    // of them with rows it went quiet all the same, and its line still
    // holds every call's allocation.
    let keep = function(&quiet, "::keep");
    assert_eq!(
        line(keep, "let v = vec![i; 4];"),
        (640_000, 20_000, 640_000)
    );
    assert_eq!(
        line(function(&rows, "::keep"), "let v = vec![i; 4];").1,
        20_000
    );

    // With every allocation's site (`--sites`), Live: the blocks in use
    // that quiet calls allocated are on the lines that allocated them, as
    // in the run with rows, though their stacks' open rows are only the
    // callers'. `main` forgets `a` (`push_one` grew it to 4,000 elements)
    // and `d` (`keep`'s 20,000 vectors of 4).
    let sites = [("MEMPROF_SITES", "1")];
    let quiet = report(&dir, &sites);
    let rows = report(&dir, &[sites[0], ("MEMPROF_QUIET", "off")]);
    for name in ["::push_one", "::push_two", "::nest", "::keep"] {
        let (q, r) = (function(&quiet, name), function(&rows, name));
        assert!(q["quiet_calls"].as_u64().unwrap() > 0, "{name}: {q}");
        assert_eq!(live_columns(q), live_columns(r), "{name}");
    }
    let live = |f: &Value, contents: &str| {
        let l = line_of(f, contents);
        (l["in_use_allocations"].clone(), l["in_use_bytes"].clone())
    };
    let keep = function(&quiet, "::keep");
    assert_eq!(
        live(keep, "let v = vec![i; 4];"),
        (20_000.into(), 640_000.into())
    );
    assert_eq!(
        live(keep, "fn keep(all: &mut Vec<Vec<u64>>, i: u64) {"),
        (20_000.into(), 640_000.into())
    );
    assert_eq!(live(keep, "all.push(v);"), (0.into(), 0.into()));
    let push_one = function(&quiet, "::push_one");
    assert_eq!(live(push_one, "v.push(y);"), (1.into(), 32_000.into()));
    assert_eq!(live(push_one, "let y = x * 2;"), (0.into(), 0.into()));
}

/// A line by its contents, trimmed.
fn line_of<'a>(function: &'a Value, contents: &str) -> &'a Value {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["contents"].as_str().unwrap().trim() == contents)
        .unwrap_or_else(|| panic!("no line {contents}"))
}

/// Each line's Live: allocations and bytes in use (null where none).
fn live_columns(function: &Value) -> Vec<(u64, Value, Value)> {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["line"].as_u64().unwrap(),
                l["in_use_allocations"].clone(),
                l["in_use_bytes"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_long_loops_rows_take_its_events_and_keep_their_figures() {
    let (events, rows) = reports("rows-events");
    check_rows_events(&events, &rows);
}

/// The same in the dev profile, where the blocks' cursors are made out of
/// line (the function's code unoptimized, memprof's runtime optimized), so
/// the frame that anchors the loop's events is the cursor's caller's.
#[test]
fn a_long_loops_rows_take_its_events_in_the_dev_profile_too() {
    let dir = fixture("rows-events-dev");
    let events = report_of(&dir, &["run", "-q"], &[]);
    let rows = report_of(&dir, &["run", "-q"], &[("MEMPROF_QUIET", "off")]);
    check_rows_events(&events, &rows);
}

/// `scan`'s rows took its events past 65,536 turns and `fill`'s did not,
/// each line's figures those of the run where every call took its rows.
fn check_rows_events(events: &Value, rows: &Value) {
    let occurrences =
        |f: &Value, contents: &str| line_of(f, contents)["occurrences"].as_u64().unwrap();
    // `scan`: one call, 200,000 turns, an allocation every 1,000th. Past
    // 65,536 blocks entered (its loop's turns and its `if`'s), with 66
    // allocations, its rows stopped stepping.
    let (e, r) = (function(events, "::scan"), function(rows, "::scan"));
    assert_eq!(e["calls"], 1);
    assert_eq!(e["events_calls"], 1, "{e}");
    assert_eq!(r["events_calls"], 0, "{r}");
    assert_eq!(e["quiet_unplaced"], 0, "{e}");
    // Every line that ran before that holds the same figures as in the
    // rows run; the one after the loop ran only after, and moved nothing:
    // no figures (as a line that ran only in quiet calls and moved
    // nothing), 0 in the rows run.
    let (ec, rc) = (event_columns(e), event_columns(r));
    assert_eq!(ec.len(), rc.len());
    let mut unstepped = Vec::new();
    for (el, rl) in ec.iter().zip(&rc) {
        if el.1.is_null() && !rl.1.is_null() {
            assert_eq!((&rl.1, &rl.2, &rl.3), (&0.into(), &0.into(), &0.into()));
            unstepped.push(line_text(e, el.0));
        } else {
            assert_eq!(el, rl);
        }
    }
    assert_eq!(unstepped, ["sum", "}"]);
    // 200 vectors of 4 `u64`s, kept; the loop's row holds them, and so does
    // the `fn` row.
    assert_eq!(line(e, "all.push(vec![i; 4]);"), (6_400, 200, 6_400));
    assert_eq!(line(e, "for i in 0..n {"), (6_400, 200, 6_400));
    // Statements' Occurrences count the turns before the rows stopped
    // stepping, the rows run's every turn.
    assert_eq!(occurrences(r, "sum ^= x;"), 200_000);
    let stepped = occurrences(e, "sum ^= x;");
    assert!((65_000..=65_536).contains(&stepped), "{stepped}");

    // `fill` allocates three times a turn: it keeps its rows, every turn
    // stepped, its figures those of the rows run.
    let (e, r) = (function(events, "::fill"), function(rows, "::fill"));
    assert_eq!(e["events_calls"], 0, "{e}");
    assert_eq!(event_columns(e), event_columns(r));
    assert_eq!(occurrences(e, "all.push(v);"), 70_000);
    assert_eq!(
        line(e, "let v = vec![i; 4];"),
        (2_240_000, 70_000, 2_240_000)
    );
}

/// A line's contents, trimmed, by its number.
fn line_text(function: &Value, number: u64) -> String {
    function["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == number)
        .unwrap()["contents"]
        .as_str()
        .unwrap()
        .trim()
        .to_owned()
}
