//! Odd but valid functions: `#[profile]` must compile them and leave their
//! behaviour exactly as it was, with right tables.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The odd shapes are the point; these lints are about the user code itself.
#![allow(
    clippy::useless_vec,
    clippy::needless_return,
    clippy::boxed_local,
    clippy::never_loop,
    clippy::identity_op,
    dead_code
)]

use memprof::profile;
use std::fmt::Debug;
use std::hint::black_box;
use std::pin::Pin;

fn table(name: &str) -> memprof::FunctionReport {
    let report = memprof::report();
    report
        .function(name)
        .unwrap_or_else(|| panic!("no table for {name}"))
        .clone()
}

fn row(name: &str, text: &str) -> (i64, u64, u64) {
    let t = table(name);
    let r = t
        .line_containing(text)
        .unwrap_or_else(|| panic!("no row {text:?} in\n{t}"));
    (r.increment.unwrap(), r.peak.unwrap(), r.occurrences)
}

// ---- receivers, traits, generics ------------------------------------------

struct Counter {
    items: Vec<String>,
}

impl Counter {
    #[profile]
    fn new() -> Self {
        Counter { items: Vec::new() }
    }

    #[profile]
    fn by_ref(&self) -> usize {
        self.items.len()
    }

    #[profile]
    fn by_mut(&mut self, s: &str) {
        self.items.push(s.to_owned());
    }

    #[profile]
    fn by_value(self) -> Vec<String> {
        self.items
    }

    #[profile]
    fn boxed(self: Box<Self>) -> usize {
        self.items.len()
    }

    #[profile]
    fn pinned(self: Pin<&mut Self>) -> usize {
        self.items.len()
    }

    #[profile]
    pub(crate) fn crate_visible(&self) -> bool {
        self.items.is_empty()
    }
}

mod nested {
    #[memprof::profile]
    pub(super) fn super_visible() -> u8 {
        7
    }
}

trait Shape {
    fn area(&self) -> f64;

    #[profile]
    fn describe(&self) -> String {
        let area = self.area();
        format!("area {area:.1}")
    }
}

struct Square(f64);

impl Shape for Square {
    #[profile]
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}

#[profile]
fn generic_bounds<T: Clone + Debug, U>(t: &T, u: U) -> (Vec<T>, U)
where
    U: Into<u64> + Copy,
{
    let v = vec![t.clone(); 3];
    (v, u)
}

// A statement and a tail, each with its own row.
#[allow(clippy::let_and_return)]
#[profile]
fn lifetimes<'a, 'b: 'a>(a: &'a str, _b: &'b str) -> &'a str {
    let first = a.split(' ').next().unwrap_or("");
    first
}

#[profile]
fn impl_trait_arg(items: impl IntoIterator<Item = u32>) -> impl Iterator<Item = u32> {
    let collected: Vec<u32> = items.into_iter().collect();
    collected.into_iter().map(|x| x * 2)
}

#[profile]
fn never_returns(msg: &str) -> ! {
    let owned = msg.to_owned();
    panic!("{owned}")
}

#[profile]
unsafe fn unsafe_read(p: *const u32) -> u32 {
    // SAFETY: the caller passes a valid pointer.
    unsafe { *p }
}

#[profile]
extern "C" fn c_abi(x: i32) -> i32 {
    x + 1
}

/// Documented.
#[inline]
#[must_use]
#[profile]
#[allow(clippy::let_and_return)]
fn with_attributes(x: u32) -> u32 {
    let y = x * 3;
    y
}

#[cfg(any())]
#[profile]
fn configured_out() -> u32 {
    compile_error!("never compiled")
}

#[test]
fn methods_traits_and_generics_behave_as_before() {
    let mut c = Counter::new();
    c.by_mut("one");
    c.by_mut("two");
    assert_eq!(c.by_ref(), 2);
    assert!(!c.crate_visible());
    let mut pinned = Counter::new();
    pinned.by_mut("x");
    assert_eq!(Pin::new(&mut pinned).pinned(), 1);
    assert_eq!(Box::new(pinned).boxed(), 1);
    assert_eq!(c.by_value(), ["one", "two"]);
    assert_eq!(nested::super_visible(), 7);
    assert_eq!(Square(2.0).describe(), "area 4.0");
    assert_eq!(generic_bounds(&"x", 5u8), (vec!["x"; 3], 5));
    assert_eq!(lifetimes("hello world", "b"), "hello");
    assert_eq!(impl_trait_arg([1, 2]).collect::<Vec<_>>(), [2, 4]);
    // SAFETY: a valid pointer.
    assert_eq!(unsafe { unsafe_read(&41) }, 41);
    assert_eq!(c_abi(1), 2);
    assert_eq!(with_attributes(2), 6);
    let err = std::panic::catch_unwind(|| never_returns("stop")).unwrap_err();
    assert_eq!(err.downcast_ref::<String>().unwrap(), "stop");

    // Exact figures survive the odd shapes: `by_mut` ran three times, on two
    // counters: strings of 3, 3 and 1 bytes, and each counter's Vec growing
    // once to 4 slots of 24 bytes.
    assert_eq!(
        row("by_mut", "self.items.push"),
        (3 + 3 + 1 + 2 * 96, 99, 3)
    );
    assert_eq!(row("generic_bounds", "let v = vec!"), (48, 48, 1));
    assert_eq!(table("Counter::by_ref").calls, 1);
    let described = table("describe");
    assert!(described.name.contains("Shape"), "{}", described.name);
}

// ---- control flow ------------------------------------------------------------

#[profile]
fn control_flow(input: &[Option<u32>]) -> Result<u32, String> {
    let mut total = 0;
    'outer: for (i, item) in input.iter().enumerate() {
        let Some(value) = item else {
            continue;
        };
        if let Some(first) = input.first()
            && first.is_some()
            && *value > 100
        {
            break 'outer;
        }
        match value {
            0 => continue,
            v if v % 2 == 0 => total += v,
            v => total += v * 2,
        }
        let found = loop {
            break i;
        };
        total += found as u32;
        unsafe {
            let p: *const u32 = &total;
            total = *p;
        }
    }
    let labeled = 'block: {
        if total > 1000 {
            break 'block total;
        }
        total + 1
    };
    let parsed: u32 = "12".parse().map_err(|_| "bad".to_owned())?;
    macro_rules! twice {
        ($e:expr) => {
            $e * 2
        };
    }
    fn helper(x: u32) -> u32 {
        x + 1
    }
    struct Local(u32);
    let total = Local(helper(labeled + twice!(parsed))).0;
    let shadowed = total;
    let shadowed = shadowed + 0;
    Ok(shadowed)
}

#[test]
fn control_flow_is_unchanged() {
    let input = [Some(1), None, Some(0), Some(4), Some(200)];
    // 1 doubled, index 0; 0 skipped; 4 plus index 3; 200 breaks: 9, then
    // 9 + 1 + helper(2 * 12) = 35.
    assert_eq!(control_flow(&input), Ok(35));
    assert_eq!(control_flow(&[]), Ok(26));
    assert_eq!(
        row("control_flow", "let Some(value) = item else"),
        (0, 0, 5)
    );
    // A match arm written as an expression is no statement: no figures.
    let t = table("control_flow");
    assert_eq!(t.line_containing("0 => continue").unwrap().increment, None);
}

#[profile]
fn tail_borrows_locals(v: &[String]) -> usize {
    let joined = v.join(",");
    joined.split(',').filter(|s| !s.is_empty()).count()
}

#[test]
fn a_tail_expression_may_borrow_locals() {
    assert_eq!(tail_borrows_locals(&["a".into(), "".into(), "c".into()]), 2);
}

// ---- panics and recursion ------------------------------------------------------

#[profile]
fn may_panic(fail: bool) -> usize {
    let v = black_box(vec![0u8; 100]);
    if fail {
        panic!("failing on purpose");
    }
    v.len()
}

#[test]
fn panics_pass_through_and_later_calls_are_still_right() {
    assert_eq!(may_panic(false), 100);
    let err = std::panic::catch_unwind(|| may_panic(true)).unwrap_err();
    assert_eq!(*err.downcast_ref::<&str>().unwrap(), "failing on purpose");
    assert_eq!(may_panic(false), 100);
    assert_eq!(table("may_panic").calls, 3);
    assert_eq!(row("may_panic", "let v = black_box(vec!"), (300, 100, 3));
    assert_eq!(row("may_panic", "v.len()"), (0, 0, 2));
    // Nothing is poisoned: measure and other tables still work after it.
    let ((), m) = memprof::measure(|| drop(black_box(vec![0u8; 10])));
    assert_eq!((m.increment, m.peak), (0, 10));
}

#[profile]
fn panics_often(fail: bool) -> usize {
    let v = black_box(vec![0u8; 64]);
    if fail {
        std::panic::panic_any(QuietPanic);
    }
    v.len()
}

/// The payload of `panics_often`, whose panics the hook leaves unprinted.
struct QuietPanic;

#[test]
fn ten_thousand_caught_panics_leave_later_figures_exact() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.payload().is::<QuietPanic>() {
            previous(info);
        }
    }));
    for _ in 0..10_000 {
        assert!(std::panic::catch_unwind(|| panics_often(true)).is_err());
    }
    assert_eq!(panics_often(false), 64);
    let t = table("panics_often");
    assert_eq!(t.calls, 10_001);
    // Each execution of `let v` counts its 64 bytes; unwinding freed them.
    assert_eq!(
        row("panics_often", "let v = black_box(vec!"),
        (64 * 10_001, 64, 10_001)
    );
    assert_eq!(row("panics_often", "v.len()"), (0, 0, 1));
    let ((), m) = memprof::measure(|| drop(black_box(vec![0u8; 10])));
    assert_eq!((m.increment, m.peak), (0, 10));
}

#[profile]
fn deep(n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    deep(n - 1) + 1
}

#[profile]
fn ping(n: u32) -> u32 {
    if n == 0 { 0 } else { pong(n - 1) + 1 }
}

#[profile]
fn pong(n: u32) -> u32 {
    if n == 0 { 0 } else { ping(n - 1) + 1 }
}

#[test]
fn recursion_ten_thousand_deep() {
    let (d, p) = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| (deep(10_000), ping(10_000)))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!((d, p), (10_000, 10_000));
    // Calls counts outermost calls: one each; every level is an occurrence.
    assert_eq!(table("deep").calls, 1);
    assert_eq!(row("deep", "fn deep"), (0, 0, 10_001));
    assert_eq!((table("ping").calls, table("pong").calls), (1, 1));
    assert_eq!(row("ping", "fn ping").2 + row("pong", "fn pong").2, 10_001);
}

// ---- async -------------------------------------------------------------------

struct Service {
    buffer: Vec<u8>,
}

impl Service {
    #[profile]
    async fn fill(&mut self, n: usize) -> usize {
        self.buffer.extend(std::iter::repeat_n(1u8, n));
        ready().await;
        self.buffer.len()
    }
}

trait Fetch {
    async fn fetch(&self) -> Vec<u8>;
}

impl Fetch for Service {
    #[profile]
    async fn fetch(&self) -> Vec<u8> {
        let copy = self.buffer.clone();
        ready().await;
        copy
    }
}

async fn ready() {}

#[profile]
async fn plain_async(n: usize) -> Result<Vec<u8>, std::num::ParseIntError> {
    let parsed: usize = "3".parse()?;
    ready().await;
    Ok(vec![0u8; n * parsed])
}

fn assert_send<T: Send>(_: &T) {}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn async_fns_stay_send_and_behave_as_before() {
    let fut = plain_async(2);
    assert_send(&fut);
    assert_eq!(block_on(fut).unwrap(), vec![0u8; 6]);
    let mut s = Service { buffer: Vec::new() };
    {
        let fut = s.fill(5);
        assert_send(&fut);
        assert_eq!(block_on(fut), 5);
    }
    let fut = s.fetch();
    assert_send(&fut);
    assert_eq!(block_on(fut), vec![1u8; 5]);
    assert_eq!(row("plain_async", "Ok(vec!"), (6, 6, 1));
}

macro_rules! which {
    () => {
        1
    };
}

/// A `macro_rules!` in the body shadows the outer one from its definition
/// on, and an item after it may call it: the body keeps its items where
/// they are written, so a call names the macro it names unprofiled.
#[profile]
fn shadows_a_macro() -> (u32, u32, u32) {
    let before = which!();
    macro_rules! which {
        () => {
            2
        };
    }
    fn after() -> u32 {
        which!() + 1
    }
    (before, which!(), after())
}

#[test]
fn a_macro_defined_in_the_body_shadows_from_its_definition_on() {
    assert_eq!(shadows_a_macro(), (1, 2, 3));
    assert_eq!(row("shadows_a_macro", "let before = which!()"), (0, 0, 1));
}
