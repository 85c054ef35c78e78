//! `#[profile]` on an `impl` block profiles each method with a body as if
//! the attribute were written on it: one table per method, named by its path,
//! starting at the method (not at the block). `const fn`s and other items are
//! left as written; a method's own `#[profile(..)]` wins.
//!
//! A buffer whose contents nothing reads passes through `black_box`: an
//! optimized build (`cargo test --release`) removes such an allocation, and
//! its table then rightly shows nothing.

// The point is to allocate on the heap.
#![allow(clippy::useless_vec)]

use memprof::profile;
use std::hint::black_box;

fn table(name: &str) -> memprof::FunctionReport {
    let report = memprof::report();
    let found = report.functions.iter().find(|f| f.name == name);
    found
        .unwrap_or_else(|| {
            let names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
            panic!("no table named {name}; tables: {names:?}")
        })
        .clone()
}

/// (line, increment, peak, occurrences) of each row with figures.
fn rows(name: &str) -> Vec<(u32, i64, u64, u64)> {
    table(name)
        .lines
        .iter()
        .filter_map(|l| Some((l.line, l.increment?, l.peak?, l.occurrences)))
        .collect()
}

pub struct Buffer {
    data: Vec<u8>,
}

#[profile]
impl Buffer {
    // Associated items are left as written.
    const NEW_LINE: u32 = line!() + 2;
    /// Documented: the doc comment stays out of the table.
    pub fn new() -> Self {
        Buffer { data: Vec::new() }
    }

    const FILL_LINE: u32 = line!() + 1;
    pub fn fill(&mut self, n: usize) {
        let chunk = black_box(vec![1u8; n]);
        self.data.extend_from_slice(&chunk);
    }

    // Its own arguments win over the block's (none), and it is instrumented
    // once.
    const COPY_LINE: u32 = line!() + 2;
    #[profile(limit = "1 KiB")]
    pub fn copy(&self) -> usize {
        let copy = self.data.clone();
        copy.len()
    }

    const KEEP_LINE: u32 = line!() + 2;
    #[memprof::profile(max_retained = "0 B")]
    pub fn keep(&self) -> &'static [u8] {
        self.data.clone().leak()
    }

    // Left as written: a `const fn` cannot be instrumented.
    pub const fn capacity_hint() -> usize {
        Self::HINT
    }

    const HINT: usize = 64;
}
const NEW_LINE: u32 = Buffer::NEW_LINE;
const FILL_LINE: u32 = Buffer::FILL_LINE;
const COPY_LINE: u32 = Buffer::COPY_LINE;
const KEEP_LINE: u32 = Buffer::KEEP_LINE;

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("should have panicked");
    *err.downcast::<String>().expect("a formatted message")
}

#[test]
fn every_method_with_a_body_gets_its_own_table() {
    let mut buffer = Buffer::new();
    buffer.fill(100);
    buffer.fill(28);
    assert_eq!(Buffer::capacity_hint(), 64);

    // Doc comment, then `fn`: the table starts at the method's signature,
    // not at the block or the doc comment.
    let new = table("impl_blocks::Buffer::new");
    assert_eq!(new.calls, 1);
    assert_eq!(new.lines[0].line, NEW_LINE);
    assert_eq!(new.lines[0].contents.trim(), "pub fn new() -> Self {");
    assert_eq!(new.lines.last().unwrap().line, NEW_LINE + 2);

    // Two calls. The first: a 100-byte chunk, the Vec grown from nothing to
    // 100 bytes, the chunk freed at `}`. The second: a 28-byte chunk, the
    // Vec grown to 200 bytes (+100 by `realloc`), the chunk freed.
    assert_eq!(table("impl_blocks::Buffer::fill").calls, 2);
    assert_eq!(
        rows("impl_blocks::Buffer::fill"),
        [
            (FILL_LINE, 100 + 100, 100 + 100, 2),
            (FILL_LINE + 1, 100 + 28, 100, 2),
            (FILL_LINE + 2, 100 + 100, 100, 2),
            (FILL_LINE + 3, -100 - 28, 0, 2),
        ]
    );

    // No table for what was left as written.
    let report = memprof::report();
    assert!(
        report
            .functions
            .iter()
            .all(|f| !f.name.contains("capacity_hint")),
        "{:?}",
        report.functions
    );
}

#[test]
fn a_method_s_own_arguments_win() {
    // Not through `new` and `fill`, whose tables the test above checks.
    let small = Buffer { data: vec![1; 128] };
    assert_eq!(small.copy(), 128);
    let big = Buffer {
        data: vec![1; 2048],
    };
    let message = panic_message(move || {
        big.copy();
    });
    assert_eq!(
        message.lines().next().unwrap(),
        format!(
            "memory limit exceeded in impl_blocks::Buffer::copy (tests/impl_blocks.rs:{COPY_LINE}): \
             peak 2.0 KiB > limit 1.0 KiB"
        )
    );
    // Instrumented once: one call each, and the rows of the method's own
    // attribute, `fn`, statements and `}`.
    let copy = table("impl_blocks::Buffer::copy");
    assert_eq!(copy.calls, 2);
    assert_eq!(copy.lines[0].line, COPY_LINE - 1);
    assert_eq!(
        copy.lines[0].contents.trim(),
        "#[profile(limit = \"1 KiB\")]"
    );
    assert_eq!(
        rows("impl_blocks::Buffer::copy"),
        [
            (COPY_LINE, 0, 2048, 2),
            (COPY_LINE + 1, 128 + 2048, 2048, 2),
            (COPY_LINE + 2, 0, 0, 2),
            (COPY_LINE + 3, -128 - 2048, 0, 2),
        ]
    );

    let message = panic_message(move || {
        small.keep();
    });
    assert_eq!(
        message.lines().next().unwrap(),
        format!(
            "memory limit exceeded in impl_blocks::Buffer::keep (tests/impl_blocks.rs:{KEEP_LINE}): \
             retained 128 B > max_retained 0 B"
        )
    );
}

// ---- trait and generic impls, with the block's arguments -----------------------

pub trait Shape {
    fn corners(&self) -> Vec<(u32, u32)>;

    fn describe(&self) -> String {
        format!("{} corners", self.corners().len())
    }
}

pub struct Square(u32);

const CORNERS_LINE: u32 = line!() + 3;
#[profile(gpu = false)]
impl Shape for Square {
    fn corners(&self) -> Vec<(u32, u32)> {
        let s = self.0;
        vec![(0, 0), (s, 0), (s, s), (0, s)]
    }
}

pub struct Stack<T> {
    items: Vec<T>,
}

const PUSH_N_LINE: u32 = line!() + 3;
#[profile(scope = "thread")]
impl<T: Clone> Stack<T> {
    pub fn push_n(&mut self, item: T, n: usize) {
        let more = vec![item; n];
        self.items.extend(more);
    }
}

#[test]
fn trait_and_generic_impls_are_profiled_by_their_paths() {
    // The trait's default method is the trait's, and not profiled.
    assert_eq!(Square(2).corners()[2], (2, 2));
    assert_eq!(Square(3).describe(), "4 corners");
    let name = "<impl_blocks::Square as impl_blocks::Shape>::corners";
    assert_eq!(table(name).calls, 2);
    // Two calls of four 8-byte pairs, returned: 32 bytes each.
    assert_eq!(
        rows(name),
        [
            (CORNERS_LINE, 64, 32, 2),
            (CORNERS_LINE + 1, 0, 0, 2),
            (CORNERS_LINE + 2, 64, 32, 2),
            (CORNERS_LINE + 3, 0, 0, 2),
        ]
    );

    let mut stack = Stack { items: Vec::new() };
    stack.push_n(7u64, 3);
    let mut words = Stack { items: Vec::new() };
    words.push_n('x', 2);
    assert_eq!((stack.items.len(), words.items.len()), (3, 2));
    // Both instances share one table, as a generic function's do. `extend`
    // reserves at least 4 items (32 bytes of u64, 16 of char) and frees the
    // `more` buffer (24 and 8 bytes).
    let name = "impl_blocks::Stack<_>::push_n";
    assert_eq!(table(name).calls, 2);
    assert_eq!(
        rows(name),
        [
            (PUSH_N_LINE, 32 + 16, 24 + 32, 2),
            (PUSH_N_LINE + 1, 24 + 8, 24, 2),
            (PUSH_N_LINE + 2, (32 - 24) + (16 - 8), 32, 2),
            (PUSH_N_LINE + 3, 0, 0, 2),
        ]
    );
}
