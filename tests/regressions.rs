//! Regression tests, each named after what broke.

/// memprof once depended on serde_json, whose `PartialEq<Value>` impls for
/// the integer types are visible to every crate in the graph: with memprof
/// as a dependency, ordinary comparisons like these stopped compiling in
/// arrayvec's and smallvec's own tests. This file must keep compiling.
#[test]
fn depending_on_memprof_does_not_break_type_inference() {
    let bytes: Vec<u8> = Vec::new();
    assert_eq!(&*bytes, &[]);
    let sizes: [usize; 0] = [];
    assert_eq!(&sizes[..], &[]);
    // Use memprof, so that it and its dependencies are surely linked.
    let (_, m) = memprof::measure(|| 1 + 1);
    assert_eq!(m.increment, 0);
}

/// A 2,000-statement function once crashed rustc (a stack overflow in the
/// debug-info builder): a guard `let` per statement nested 3,000 scopes.
/// Guards now open no scope that outlives their statement where they can
/// avoid it. `benches/compile_cost.rs` builds the full-size case in a dev
/// profile; this one keeps a long function in every test run.
mod long_function {
    macro_rules! long_body {
        ($name:ident $(#[$attr:meta])*; $($i:literal)*) => {
            $(#[$attr])*
            pub fn $name(x: u64) -> u64 {
                let mut a = x;
                $(
                    let v = a.rotate_left($i).wrapping_mul(2 * $i + 1);
                    a ^= v;
                )*
                a
            }
        };
    }
    macro_rules! both {
        ($($i:literal)*) => {
            long_body!(profiled #[memprof::profile]; $($i)*);
            long_body!(plain; $($i)*);
        };
    }
    both!(
        1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58
        59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86
        87 88 89 90 91 92 93 94 95 96 97 98 99 100
    );

    #[test]
    fn a_long_function_builds_and_runs_as_before() {
        for x in [0, 1, 7, u64::MAX] {
            assert_eq!(profiled(x), plain(x));
        }
    }
}

/// Moving a `let` initializer into a block once risked turning borrows of a
/// place into moves: `let _ = x` must not drop `x`, `ref` patterns and partial
/// moves must leave the rest of the value usable.
mod place_initializers {
    struct Loud<'a>(&'a std::cell::Cell<u32>);
    impl Drop for Loud<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    struct Pair {
        a: String,
        b: String,
    }

    #[memprof::profile]
    fn underscore_keeps_the_value(drops: &std::cell::Cell<u32>) -> u32 {
        let guard = Loud(drops);
        let _ = guard;
        let seen = drops.get();
        drop(guard);
        seen
    }

    #[memprof::profile]
    #[allow(clippy::toplevel_ref_arg)]
    fn ref_and_partial_moves(pair: Pair) -> (usize, String) {
        let ref whole = pair.a;
        let n = whole.len();
        let Pair { a, .. } = pair;
        (n + a.len(), pair.b)
    }

    #[test]
    fn place_initializers_keep_their_meaning() {
        let drops = std::cell::Cell::new(0);
        assert_eq!(underscore_keeps_the_value(&drops), 0);
        assert_eq!(drops.get(), 1);
        let pair = Pair {
            a: "ab".into(),
            b: "c".into(),
        };
        assert_eq!(ref_and_partial_moves(pair), (4, "c".to_owned()));
    }
}

/// Found by the corpus: aho-corasick and memchr end functions with blocks
/// that `#[cfg]` chooses among.
mod tail_chosen_by_cfg {
    // The tail is whichever block survives, after `#[profile]` ran.
    #[memprof::profile]
    #[allow(unused_braces)]
    fn tail_chosen_by_cfg(n: u8) -> Option<Vec<u8>> {
        let v = vec![n; 100];
        #[cfg(not(all(unix, windows)))]
        {
            Some(v)
        }
        #[cfg(all(unix, windows))]
        {
            None
        }
    }

    #[memprof::profile]
    fn first_tail_candidate_without_cfg(n: u8) -> u8 {
        let x = n + 1;
        {
            x
        }
        #[cfg(all(unix, windows))]
        {
            0
        }
    }

    /// pulldown-cmark's `create_lut` and `iterate_special_bytes`: the
    /// block configured out comes first.
    #[memprof::profile]
    #[allow(unused_braces)]
    fn second_candidate_runs(n: usize) -> Vec<u8> {
        #[cfg(all(unix, windows))]
        {
            Vec::new()
        }
        #[cfg(not(all(unix, windows)))]
        {
            vec![7; n]
        }
    }

    /// The tail's figures once went to the first candidate's row, the
    /// block configured out, and the one that ran had none.
    #[test]
    fn the_candidate_that_runs_has_the_row() {
        assert_eq!(second_candidate_runs(64).len(), 64);
        assert_eq!(second_candidate_runs(64).len(), 64);
        let report = memprof::report();
        let f = report.function("second_candidate_runs").unwrap();
        let braces: Vec<_> = f
            .lines
            .iter()
            .filter(|l| l.contents.trim() == "{")
            .map(|l| (l.occurrences, l.increment))
            .collect();
        assert_eq!(braces, [(0, None), (2, Some(128))], "{f}");
        let inner = f.line_containing("vec![7; n]").unwrap();
        assert_eq!((inner.occurrences, inner.increment), (2, Some(128)), "{f}");
    }

    #[test]
    fn a_tail_chosen_by_cfg_compiles_and_counts() {
        assert_eq!(tail_chosen_by_cfg(3), Some(vec![3; 100]));
        assert_eq!(first_tail_candidate_without_cfg(1), 2);
        let report = memprof::report();
        let t = report.function("tail_chosen_by_cfg").unwrap();
        let row = t.line_containing("let v = vec!").unwrap();
        assert_eq!((row.increment, row.occurrences), (Some(100), 1));
        // The tail returns the buffer: the call keeps it.
        let fn_row = t.line_containing("fn tail_chosen_by_cfg").unwrap();
        assert_eq!(fn_row.increment, Some(100));
    }
}

/// A block configured out (`#[cfg(any())]`) once kept its probe, and so a
/// row with Occurrences 1 for code that is not there.
mod configured_out {
    use memprof::profile;

    #[profile]
    fn with_a_block_configured_out() -> u32 {
        let mut n = 1;
        #[cfg(any())]
        {
            n += 1;
        }
        n += 2;
        n
    }

    #[test]
    fn a_block_configured_out_has_no_row() {
        assert_eq!(with_a_block_configured_out(), 3);
        let report = memprof::report();
        let f = report.function("with_a_block_configured_out").unwrap();
        let block = f.lines.iter().find(|l| l.contents.trim() == "{").unwrap();
        assert_eq!((block.occurrences, block.increment), (0, None), "{f}");
        let after = f.line_containing("n += 2").unwrap();
        assert_eq!(after.occurrences, 1, "{f}");
    }
}

/// What a `for` loop's item frees at the end of an iteration once went to
/// the `for` row, with the body's `}` blank: it goes to the `}`, as the
/// body's own locals' frees do, whether or not the body has locals.
mod loop_items {
    use memprof::profile;
    use std::hint::black_box;

    pub struct Record {
        a: Vec<u8>,
        b: Vec<u8>,
    }

    fn records() -> Vec<Record> {
        (0..4)
            .map(|_| Record {
                a: black_box(vec![0; 1000]),
                b: black_box(vec![0; 500]),
            })
            .collect()
    }

    #[profile]
    fn consumes(records: Vec<Record>) -> usize {
        let mut total = 0;
        for r in records {
            total += r.a.len() + r.b.len();
        }
        total
    }

    #[profile]
    fn consumes_with_a_local(records: Vec<Record>) -> usize {
        let mut total = 0;
        for r in records {
            let a = r.a.len();
            total += a + r.b.len();
        }
        total
    }

    /// (increment, occurrences) of the body's `}` and the `for` row.
    fn rows(function: &str) -> [(i64, u64); 2] {
        let report = memprof::report();
        let f = report.function(function).unwrap();
        // The last `}` but the function's own.
        let brace = f.lines[..f.lines.len() - 1]
            .iter()
            .rfind(|l| l.contents.trim() == "}")
            .unwrap();
        let for_row = f.line_containing("for r in records").unwrap();
        [
            (brace.increment.unwrap(), brace.occurrences),
            (for_row.increment.unwrap(), for_row.occurrences),
        ]
    }

    #[test]
    fn a_loop_item_is_freed_at_the_body_s_closing_brace() {
        let outer = 4 * size_of::<Record>() as i64;
        assert_eq!(consumes(records()), 6000);
        assert_eq!(rows("consumes"), [(-6000, 4), (-6000 - outer, 1)]);
        assert_eq!(consumes_with_a_local(records()), 6000);
        assert_eq!(
            rows("consumes_with_a_local"),
            [(-6000, 4), (-6000 - outer, 1)]
        );
    }
}
