// Every argument shape and tail that drop order depends on, defined twice by
// `twins!`: as written (`plain`) and under `#[profile]` (`profiled`). Each
// edition's crate includes this file and compares the two drop logs; rustc
// builds both under the crate's `forbid` lints.

use std::cell::RefCell;
use std::sync::Mutex;

thread_local! {
    static LOG: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Logs its name when dropped.
pub struct D(pub &'static str);

impl D {
    pub fn get(&self) -> usize {
        self.0.len()
    }

    pub fn touch(&self) {}
}

impl Drop for D {
    fn drop(&mut self) {
        let name = self.0;
        LOG.with(|log| log.borrow_mut().push(name));
    }
}

/// What dropped since the last call, in order.
pub fn take_log() -> Vec<&'static str> {
    LOG.with(|log| std::mem::take(&mut *log.borrow_mut()))
}

pub struct Parts {
    pub a: D,
    pub b: D,
    pub c: D,
}

macro_rules! twins {
    ($($body:tt)*) => {
        pub mod plain {
            use super::*;
            pub struct Shapes {
                pub m: Mutex<Vec<u8>>,
                pub d: D,
            }
            $($body)*
        }
        pub mod profiled {
            use super::*;
            pub struct Shapes {
                pub m: Mutex<Vec<u8>>,
                pub d: D,
            }
            #[memprof::profile]
            $($body)*
        }
    };
}

twins! {
    impl Shapes {
        pub fn arg_tail(_a: D) -> usize {
            let _l = D("local");
            D("temp").get()
        }

        pub fn one_line(_a: D) -> usize { let _l = D("local"); D("temp").get() }

        pub fn opaque(_a: D) -> impl std::fmt::Debug {
            let _l = D("local");
            D("temp").get()
        }

        pub fn mut_arg(mut a: D, _b: D) -> usize {
            a.0 = "changed";
            let _l = D("local");
            D("temp").get() + a.get()
        }

        pub fn wild(_a: D, _: D, _b: D) {
            let _l = D("local");
        }

        pub fn patterns((_x, _): (D, D), (_, _y): (D, D)) -> usize {
            let _l = D("local");
            D("temp").get()
        }

        pub fn rest(Parts { b: _b, .. }: Parts, _last: D) {
            let _l = D("local");
        }

        #[allow(clippy::toplevel_ref_arg)]
        pub fn by_ref(ref _a: D, _b: D) -> usize {
            let _l = D("local");
            D("temp").get()
        }

        pub fn early(_a: D, flag: bool) -> usize {
            let _l = D("local");
            if flag {
                return D("returned").get();
            }
            D("temp").get()
        }

        #[allow(clippy::needless_return)]
        pub fn returns_last(_a: D) -> usize {
            let _l = D("local");
            return D("temp").get();
        }

        pub fn unit_tail(_a: D) {
            let _l = D("local");
            D("temp").get();
        }

        pub fn cell_tail(c: RefCell<Vec<u8>>) -> usize {
            c.borrow().len()
        }

        pub fn mutex_tail(m: Mutex<Vec<u8>>) -> usize {
            m.lock().unwrap().len()
        }

        pub fn into_len(self) -> usize {
            self.m.lock().unwrap().len()
        }

        pub fn by_value(self, _a: D) -> usize {
            let _l = D("local");
            D("temp").get()
        }

        pub fn by_mut_value(mut self, _a: D) -> usize {
            self.d.0 = "changed self";
            let _l = D("local");
            D("temp").get()
        }

        #[allow(clippy::boxed_local)]
        pub fn boxed(self: Box<Self>, _a: D) -> usize {
            let _l = D("local");
            D("temp").get()
        }

        pub fn by_ref_self(&self, _a: D) -> usize {
            let _l = D("local");
            D("temp").get() + self.d.get()
        }

        pub fn loops(items: Vec<D>) {
            for _item in items {
                let _l = D("body local");
                D("body temp").touch()
            }
            for (_x, _) in [(D("x"), D("x_")), (D("y"), D("y_"))] {
                let _l = D("body local");
            }
        }

        pub fn panics(_a: D, _b: D) -> usize {
            let _l = D("local");
            panic!("on purpose")
        }
    }
}

fn shapes() -> (plain::Shapes, profiled::Shapes) {
    (
        plain::Shapes {
            m: Mutex::new(vec![1, 2]),
            d: D("self"),
        },
        profiled::Shapes {
            m: Mutex::new(vec![1, 2]),
            d: D("self"),
        },
    )
}

/// Runs `plain` then `profiled` (each given fresh values) and returns the
/// two drop logs.
fn twice<F: FnMut(bool)>(mut run: F) -> (Vec<&'static str>, Vec<&'static str>) {
    take_log();
    run(false);
    let plain = take_log();
    run(true);
    (plain, take_log())
}

macro_rules! same_drops {
    ($name:ident, |$p:ident| $plain:expr, $profiled:expr) => {
        #[test]
        fn $name() {
            let (plain, profiled) = twice(|$p| {
                if $p {
                    let _ = $profiled;
                } else {
                    let _ = $plain;
                }
            });
            assert!(!plain.is_empty());
            assert_eq!(plain, profiled);
        }
    };
}

same_drops!(
    arg_tail,
    |p| plain::Shapes::arg_tail(D("arg")),
    profiled::Shapes::arg_tail(D("arg"))
);
same_drops!(
    one_line,
    |p| plain::Shapes::one_line(D("arg")),
    profiled::Shapes::one_line(D("arg"))
);
same_drops!(
    opaque,
    |p| plain::Shapes::opaque(D("arg")),
    profiled::Shapes::opaque(D("arg"))
);
same_drops!(
    mut_arg,
    |p| plain::Shapes::mut_arg(D("a"), D("b")),
    profiled::Shapes::mut_arg(D("a"), D("b"))
);
same_drops!(
    wild,
    |p| plain::Shapes::wild(D("a"), D("_"), D("b")),
    profiled::Shapes::wild(D("a"), D("_"), D("b"))
);
same_drops!(
    patterns,
    |p| plain::Shapes::patterns((D("x"), D("x_")), (D("y_"), D("y"))),
    profiled::Shapes::patterns((D("x"), D("x_")), (D("y_"), D("y")))
);
same_drops!(
    rest,
    |p| plain::Shapes::rest(
        Parts {
            a: D("a"),
            b: D("b"),
            c: D("c")
        },
        D("last")
    ),
    profiled::Shapes::rest(
        Parts {
            a: D("a"),
            b: D("b"),
            c: D("c")
        },
        D("last")
    )
);
same_drops!(
    by_ref,
    |p| plain::Shapes::by_ref(D("a"), D("b")),
    profiled::Shapes::by_ref(D("a"), D("b"))
);
same_drops!(
    early,
    |p| plain::Shapes::early(D("a"), true),
    profiled::Shapes::early(D("a"), true)
);
same_drops!(
    not_early,
    |p| plain::Shapes::early(D("a"), false),
    profiled::Shapes::early(D("a"), false)
);
same_drops!(
    returns_last,
    |p| plain::Shapes::returns_last(D("a")),
    profiled::Shapes::returns_last(D("a"))
);
same_drops!(
    unit_tail,
    |p| plain::Shapes::unit_tail(D("a")),
    profiled::Shapes::unit_tail(D("a"))
);
same_drops!(
    by_value,
    |p| shapes().0.by_value(D("a")),
    shapes().1.by_value(D("a"))
);
same_drops!(
    by_mut_value,
    |p| shapes().0.by_mut_value(D("a")),
    shapes().1.by_mut_value(D("a"))
);
same_drops!(
    boxed,
    |p| Box::new(shapes().0).boxed(D("a")),
    Box::new(shapes().1).boxed(D("a"))
);
same_drops!(
    by_ref_self,
    |p| shapes().0.by_ref_self(D("a")),
    shapes().1.by_ref_self(D("a"))
);
same_drops!(
    loops,
    |p| plain::Shapes::loops(vec![D("item 1"), D("item 2")]),
    profiled::Shapes::loops(vec![D("item 1"), D("item 2")])
);
same_drops!(
    panics,
    |p| std::panic::catch_unwind(|| plain::Shapes::panics(D("a"), D("b"))),
    std::panic::catch_unwind(|| profiled::Shapes::panics(D("a"), D("b")))
);

#[test]
fn tails_that_borrow_an_argument_compile_and_run() {
    assert_eq!(plain::Shapes::cell_tail(RefCell::new(vec![1])), 1);
    assert_eq!(profiled::Shapes::cell_tail(RefCell::new(vec![1])), 1);
    assert_eq!(profiled::Shapes::mutex_tail(Mutex::new(vec![1, 2, 3])), 3);
    assert_eq!(shapes().1.into_len(), 2);
    take_log();
}
