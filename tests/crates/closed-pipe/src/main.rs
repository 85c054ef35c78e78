//! A profiled program that prints call tables and exit tables (as
//! `MEMPROF_REPORT` says), a `memit!` line when its argument is `memit`, and a
//! line of its own written the way a program that expects `| head` writes:
//! ignoring a failed write.

use std::io::Write;

#[memprof::profile]
fn step(n: usize) -> usize {
    let v = vec![0u8; n];
    v.len()
}

fn main() {
    let mut total = 0;
    for n in 0..200 {
        total += step(n);
    }
    if std::env::args().nth(1).as_deref() == Some("memit") {
        total += memprof::memit!(vec![0u8; 4096].len());
    }
    let _ = writeln!(std::io::stdout().lock(), "total {total}");
}
