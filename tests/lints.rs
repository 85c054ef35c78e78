//! Generated code must not trip lints in the user's crate: this file denies
//! warnings, `unused_qualifications` and clippy's default set, and profiles
//! functions of every shape. rustc and `cargo clippy --all-targets` check it.

#![deny(warnings, unused_qualifications, clippy::all)]

use memprof::profile;

#[profile]
fn unit() {}

#[profile]
fn returns_early(x: u32) -> u32 {
    if x == 0 {
        return 1;
    }
    let y = x * 2;
    y + 1
}

#[profile]
fn diverges() -> u32 {
    panic!("never")
}

#[profile]
fn loops_forever_until(n: u32) -> u32 {
    let mut i = 0;
    loop {
        i += 1;
        if i == n {
            break i;
        }
    }
}

#[profile]
fn question_mark(s: &str) -> Result<u32, std::num::ParseIntError> {
    let n: u32 = s.parse()?;
    Ok(n)
}

#[profile]
fn with_macro_statements(v: &mut Vec<u32>) {
    v.push(1);
    assert!(!v.is_empty());
    if v.len() > 10 {
        unreachable!("too long");
    }
    todo_later();
}

fn todo_later() {}

#[profile]
fn impl_return() -> impl Iterator<Item = u32> {
    let v = vec![1, 2, 3];
    v.into_iter()
}

#[profile]
fn never() -> ! {
    std::process::exit(0)
}

#[profile]
async fn async_fn(x: u32) -> u32 {
    let y = async { x + 1 }.await;
    y
}

struct S;

impl S {
    #[profile]
    fn method(&self) -> &Self {
        self
    }
}

struct Profiled(Vec<u8>);

#[profile]
impl Profiled {
    const EMPTY: Self = Profiled(Vec::new());

    fn len(&self) -> usize {
        self.0.len()
    }

    const fn zero() -> usize {
        0
    }

    #[profile(limit = "1 MiB")]
    fn filled(n: usize) -> Self {
        let v = vec![1; n];
        Profiled(v)
    }
}

impl Default for Profiled {
    fn default() -> Self {
        Self::EMPTY
    }
}

// Arguments taken by value are moved into the body (see ownership.rs):
// `mut`, patterns, `self` and `mut self`, with and without the body kept as
// written for `MEMPROF=off` (a body with an item has no such copy).
#[profile]
fn consumes(mut v: Vec<u8>, (a, mut b): (String, String), _unused: Vec<u8>) -> usize {
    v.push(1);
    b.push_str(&a);
    v.len() + b.len()
}

#[profile]
fn consumes_with_item(mut v: Vec<u8>) -> usize {
    fn helper(v: &mut Vec<u8>) {
        v.push(2);
    }
    helper(&mut v);
    v.len()
}

struct Owner(Vec<u8>);

impl Owner {
    #[profile]
    fn into_len(self) -> usize {
        self.0.len()
    }

    #[profile]
    fn grown(mut self) -> Self {
        self.0.push(3);
        self
    }

    #[profile]
    fn described(self) -> String {
        format!("{} bytes", self.0.len())
    }
}

// `#[cfg]` picks one of two `return`s, and the first is the one left (as in
// serde_json's `OccupiedEntry::remove`): nothing of ours may follow it.
// `self` by value keeps one body; the free function has two.
impl Owner {
    #[profile]
    fn taken(self) -> Vec<u8> {
        #[cfg(test)]
        return self.0;
        #[cfg(not(test))]
        return Vec::new();
    }
}

#[profile]
fn configured_return(x: u32) -> u32 {
    #[cfg(test)]
    return x + 1;
    #[cfg(not(test))]
    return x;
}

// The same with the second `return` the one left (serde_json's
// `Map::remove` without `preserve_order`), `&mut self` and generic.
impl Owner {
    #[profile]
    fn removed<Q: Into<u8>>(&mut self, key: Q) -> Option<u8> {
        #[cfg(not(test))]
        return self.0.first().copied();
        #[cfg(test)]
        return self.0.pop().filter(|&b| b == key.into());
    }

    #[profile]
    fn drained(self) -> Vec<u8> {
        #[cfg(not(test))]
        return Vec::new();
        #[cfg(test)]
        return self.0;
    }
}

// Recursive, so its copy as written is kept in optimized builds only, and
// returned from (`cargo test --release` checks these).
#[profile]
fn configured_recursion(x: u32) -> u32 {
    #[cfg(not(test))]
    return x;
    #[cfg(test)]
    return if x == 0 {
        0
    } else {
        configured_recursion(x - 1) + 1
    };
}

impl Owner {
    #[profile]
    #[inline(always)]
    fn first_byte(&self) -> Option<u8> {
        #[cfg(not(test))]
        return None;
        #[cfg(test)]
        return self.0.first().copied();
    }
}

#[profile]
fn configured_second_return(x: u32) -> u32 {
    #[cfg(not(test))]
    return x;
    #[cfg(test)]
    return x + 2;
}

#[test]
fn lint_clean_functions_run() {
    assert_eq!(Owner(vec![5]).removed(5u8), Some(5));
    assert_eq!(Owner(vec![6]).drained(), [6]);
    assert_eq!(configured_second_return(1), 3);
    assert_eq!(configured_recursion(3), 3);
    assert_eq!(Owner(vec![7]).first_byte(), Some(7));
    assert_eq!(Owner(vec![4]).taken(), [4]);
    assert_eq!(configured_return(1), 2);
    assert_eq!(consumes(vec![0], ("a".into(), "b".into()), Vec::new()), 4);
    assert_eq!(consumes_with_item(Vec::new()), 1);
    assert_eq!(Owner(vec![1]).grown().into_len(), 2);
    assert_eq!(Owner(vec![1]).described(), "1 bytes");
    unit();
    assert_eq!(returns_early(0), 1);
    assert_eq!(returns_early(2), 5);
    assert_eq!(loops_forever_until(3), 3);
    assert_eq!(question_mark("7"), Ok(7));
    let mut v = Vec::new();
    with_macro_statements(&mut v);
    assert_eq!(impl_return().sum::<u32>(), 6);
    assert!(std::panic::catch_unwind(diverges).is_err());
    let _ = S.method();
    let _keep: fn() -> ! = never;
    drop(async_fn(1));
    assert_eq!(Profiled::filled(3).len(), 3);
    assert_eq!(Profiled::default().len(), Profiled::zero());
}
