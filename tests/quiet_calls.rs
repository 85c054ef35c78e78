//! Quiet calls: once 64 calls in a row of a function on one thread moved
//! nothing, that thread's later calls run as written, counted in `Calls`
//! and the `fn` row only; the first quiet call that moves the heap is
//! recorded whole in the `fn` row, and the thread's calls take their rows
//! again (docs/reference.md, "Calls that move nothing go quiet").

#[path = "support/child.rs"]
mod child;

#[path = "support/tables.rs"]
mod tables;

use child::{is_child, run_child};
use memprof::profile;
use std::hint::black_box;
use tables::{figures, row, table};

#[profile]
fn scan(bytes: &[u8], at: usize) -> bool {
    let b = bytes[at % bytes.len()];
    b == b'\n'
}

#[profile]
fn maybe_grow(grow: bool) -> usize {
    let v: Vec<u8> = if grow { vec![1; 1000] } else { Vec::new() };
    black_box(v).len()
}

#[test]
fn a_function_that_moves_nothing_keeps_its_calls_and_loses_its_statement_counts() {
    let text = b"line\nline\n";
    let newlines = (0..10_000).filter(|&i| scan(black_box(text), i)).count();
    assert_eq!(newlines, 2_000);
    let t = table("quiet_calls::scan");
    assert_eq!(t.calls, 10_000);
    assert_eq!(figures(&t, "fn scan"), (0, 0, 10_000));
    // The calls before the thread's quiet ones: those the runtime enters
    // (the first 3, with a table of their own in a test binary, and the one
    // that lets the kernel enter the rest), then 64 that moved nothing.
    let rowed = row(&t, "let b = bytes").occurrences;
    assert_eq!(rowed, 4 + 64);
    assert_eq!(figures(&t, "b == b'\\n'"), (0, 0, rowed));
}

#[profile]
fn checked_byte(bytes: &[u8], at: usize) -> u8 {
    #[cold]
    #[inline(never)]
    fn out_of_range(at: usize) -> ! {
        panic!("{at} out of range")
    }
    if at >= bytes.len() {
        out_of_range(at);
    }
    bytes[at]
}

#[profile]
fn counted(x: u64) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static SEEN: AtomicU64 = AtomicU64::new(0);
    #[profile]
    fn twice(x: u64) -> u64 {
        x * 2
    }
    let seen = SEEN.fetch_add(1, Relaxed);
    twice(x) + seen - seen
}

#[test]
fn items_declared_in_a_quiet_body_are_one_item_for_every_call() {
    // Its `static` keeps one count and its profiled `fn` one table, whether
    // a call runs with rows or quietly, as written.
    std::thread::spawn(|| {
        let sum: u64 = (0..1_000).map(counted).sum();
        assert_eq!(sum, 999 * 1_000);
    })
    .join()
    .unwrap();
    let t = table("quiet_calls::counted");
    assert_eq!(t.calls, 1_000);
    assert_eq!(row(&t, "let seen = SEEN").occurrences, 68);
    let inner = table("quiet_calls::counted::twice");
    assert_eq!(inner.calls, 1_000);
    assert_eq!(figures(&inner, "fn twice"), (0, 0, 1_000));
}

#[profile]
#[inline(always)]
fn low_bit(x: u64) -> u64 {
    let y = x & 1;
    black_box(y)
}

#[test]
fn a_function_with_a_helper_fn_inside_goes_quiet_too() {
    // Its body and the helper in it are copied as written together (the
    // shape of lz4_flex's `slice_copy`).
    std::thread::spawn(|| {
        let sum: u64 = (0..1_000)
            .map(|i| u64::from(checked_byte(b"ab", i % 2)))
            .sum();
        assert_eq!(sum, 500 * u64::from(b'a' + b'b'));
    })
    .join()
    .unwrap();
    let t = table("quiet_calls::checked_byte");
    assert_eq!(t.calls, 1_000);
    assert_eq!(figures(&t, "fn checked_byte"), (0, 0, 1_000));
    assert_eq!(row(&t, "if at >= bytes.len()").occurrences, 68);
    assert_eq!(figures(&t, "bytes[at]"), (0, 0, 68));
}

#[test]
fn an_inline_always_function_goes_quiet_in_optimized_builds() {
    std::thread::spawn(|| {
        let sum: u64 = (0..1_000).map(low_bit).sum();
        assert_eq!(sum, 500);
    })
    .join()
    .unwrap();
    let t = table("quiet_calls::low_bit");
    assert_eq!(t.calls, 1_000);
    assert_eq!(figures(&t, "fn low_bit"), (0, 0, 1_000));
    // Unoptimized, it keeps one body (see the macro's `off_branch`): every
    // call steps its statements.
    let rowed = if cfg!(debug_assertions) { 1_000 } else { 68 };
    assert_eq!(row(&t, "let y = x & 1").occurrences, rowed);
}

struct Reader {
    at: u64,
}

impl Reader {
    #[profile]
    fn peek(&mut self) -> u64 {
        self.at += 1;
        self.at
    }
}

struct Delegate {
    read: Reader,
}

impl Delegate {
    #[profile]
    fn peek(&mut self) -> u64 {
        self.read.peek()
    }
}

#[test]
fn a_method_that_calls_its_namesake_on_a_field_goes_quiet_in_optimized_builds() {
    // serde_json's `Deserializer::peek` (`self.read.peek()`): taken for a
    // recursion by its name, it keeps its copy as written in optimized
    // builds only; `&mut self` is no `mut` argument.
    std::thread::spawn(|| {
        let mut d = Delegate {
            read: Reader { at: 0 },
        };
        let sum: u64 = (0..1_000).map(|_| d.peek()).sum();
        assert_eq!(sum, 500_500);
    })
    .join()
    .unwrap();
    let t = table("quiet_calls::Delegate::peek");
    assert_eq!(t.calls, 1_000);
    let rowed = if cfg!(debug_assertions) { 1_000 } else { 68 };
    assert_eq!(row(&t, "self.read.peek()").occurrences, rowed);
    let inner = table("quiet_calls::Reader::peek");
    assert_eq!(inner.calls, 1_000);
    assert_eq!(row(&inner, "self.at += 1").occurrences, 68);
}

#[profile]
fn shared(x: u64) -> u64 {
    let y = x ^ 1;
    black_box(y)
}

#[test]
fn a_function_gone_quiet_on_one_thread_is_quiet_on_the_others() {
    let run = || {
        let sum: u64 = (0..100).map(shared).sum();
        assert_eq!(sum, 4_950);
    };
    std::thread::spawn(run).join().unwrap();
    std::thread::spawn(run).join().unwrap();
    let t = table("quiet_calls::shared");
    assert_eq!(t.calls, 200);
    assert_eq!(row(&t, "fn shared").occurrences, 200);
    // The first thread: 4 calls the runtime entered, 64 with rows until the
    // function went quiet. The second: only its first 3 calls, which print
    // a table of their own in a test binary, took rows.
    assert_eq!(row(&t, "let y = x ^ 1").occurrences, 68 + 3);
}

#[test]
fn the_quiet_call_that_allocates_is_counted_whole_and_ends_the_quiet() {
    std::thread::spawn(|| {
        for _ in 0..100 {
            assert_eq!(maybe_grow(false), 0);
        }
        assert_eq!(maybe_grow(true), 1000);
        assert_eq!(maybe_grow(true), 1000);
        assert_eq!(maybe_grow(false), 0);
    })
    .join()
    .unwrap();
    let t = table("quiet_calls::maybe_grow");
    assert_eq!(t.calls, 103);
    // Both allocating calls: 1,000 bytes each, freed within the call.
    let fn_row = row(&t, "fn maybe_grow");
    assert_eq!(fn_row.occurrences, 103);
    assert_eq!((fn_row.increment, fn_row.peak), (Some(0), Some(1000)));
    assert_eq!(
        (fn_row.allocations, fn_row.allocated_bytes),
        (Some(2), Some(2000))
    );
    // The first was quiet: its statements' rows saw the second only, and
    // the calls with rows (4 the runtime entered, 64 until quiet, the last two).
    let grow = row(&t, "let v: Vec<u8>");
    assert_eq!(grow.occurrences, 4 + 64 + 2);
    assert_eq!((grow.increment, grow.peak), (Some(1000), Some(1000)));
    assert_eq!(
        (grow.allocations, grow.allocated_bytes),
        (Some(1), Some(1000))
    );
}

#[profile]
fn keep_one(keep: bool) -> Vec<u8> {
    let v: Vec<u8> = if keep { vec![7; 1 << 18] } else { Vec::new() };
    black_box(v)
}

/// Goes quiet on `keep_one`, lets `other` allocate and hold its block,
/// then keeps what a quiet call of `keep_one` allocated.
#[profile]
fn keeps_after_another_thread(at: &std::sync::Barrier) -> usize {
    let mut empty = 0;
    for _ in 0..100 {
        empty += keep_one(false).len();
    }
    at.wait();
    at.wait();
    let kept = keep_one(true);
    at.wait();
    kept.len() + empty
}

#[test]
fn a_quiet_calls_mem_usage_is_read_in_thread_scope_as_its_callers_rows_are() {
    let at = std::sync::Arc::new(std::sync::Barrier::new(2));
    let other = std::thread::spawn({
        let at = at.clone();
        move || {
            at.wait();
            let held = black_box(vec![1u8; 4 << 20]);
            at.wait();
            at.wait();
            drop(held);
        }
    });
    let at_here = at.clone();
    let kept = std::thread::spawn(move || keeps_after_another_thread(&at_here))
        .join()
        .unwrap();
    other.join().unwrap();
    assert_eq!(kept, 1 << 18);
    let caller = table("quiet_calls::keeps_after_another_thread");
    let line = row(&caller, "let kept = keep_one(true)");
    let t = table("quiet_calls::keep_one");
    assert_eq!(t.calls, 101);
    let fn_row = row(&t, "fn keep_one");
    // The last call was quiet and kept 256 KiB (more than the binary's
    // other tests hold at once): its Mem usage is the heap as the caller's
    // line reads it after the call (the heap when the caller began plus
    // this thread's count since), not the process heap, which held the
    // other thread's 4 MiB as well.
    assert_eq!(fn_row.increment, Some(1 << 18));
    assert_eq!(fn_row.mem_usage, line.mem_usage);
    assert_eq!(line.increment, Some(1 << 18));
}

#[profile]
fn add_one(x: u64) -> u64 {
    let y = x + 1;
    black_box(y)
}

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_calls_add_one() {
    if !is_child() {
        return;
    }
    let sum: u64 = (0..1000).map(add_one).sum();
    assert_eq!(sum, 500_500);
    let t = table("quiet_calls::add_one");
    let rowed = row(&t, "let y = x + 1").occurrences;
    println!(
        "calls {} fn {} rowed {rowed}",
        t.calls,
        row(&t, "fn add_one").occurrences
    );
}

#[test]
fn memprof_quiet_off_keeps_every_calls_rows() {
    let (out, _) = run_child("child_calls_add_one", &[("MEMPROF_QUIET", "off")]);
    assert!(out.contains("calls 1000 fn 1000 rowed 1000\n"), "{out}");
    let (out, _) = run_child("child_calls_add_one", &[]);
    assert!(out.contains("calls 1000 fn 1000 rowed 68\n"), "{out}");
}

// The shape of serde_json's `tri!`, its own `?`.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(e) => return Err(e),
        }
    };
}

#[profile(expr_macros(tri))]
fn plus_one(x: Result<u64, ()>) -> Result<u64, ()> {
    let value = tri!(x);
    Ok(value + 1)
}

#[profile]
fn plus_two(x: Result<u64, ()>) -> Result<u64, ()> {
    let value = tri!(x);
    Ok(value + 2)
}

#[test]
fn a_body_calling_a_macro_named_item_free_goes_quiet() {
    // `cargo memprof` names the crate's item-free macros so; without the
    // name, the macro might define an item, and the body keeps one copy:
    // every call steps its rows.
    std::thread::spawn(|| {
        let sum: u64 = (0..1_000).map(|i| plus_one(Ok(i)).unwrap()).sum();
        assert_eq!(sum, 999 * 500 + 1_000);
        let sum: u64 = (0..1_000).map(|i| plus_two(Ok(i)).unwrap()).sum();
        assert_eq!(sum, 999 * 500 + 2_000);
    })
    .join()
    .unwrap();
    let named = table("quiet_calls::plus_one");
    assert_eq!(named.calls, 1_000);
    assert_eq!(figures(&named, "fn plus_one"), (0, 0, 1_000));
    assert_eq!(row(&named, "let value = tri!(x)").occurrences, 68);
    let unnamed = table("quiet_calls::plus_two");
    assert_eq!(row(&unnamed, "let value = tri!(x)").occurrences, 1_000);
}
