//! What a profiled call and a profiled statement cost, next to the same code
//! unprofiled, in whatever profile this is built in. Run by
//! benches/call_cost.rs; prints one `name value` line per figure, in
//! nanoseconds.
//!
//! The loop's statements again in an `async fn`, polled once.
//!
//! Then the 1-thread call again, after 10,000 threads came and went and
//! with 2,000 alive.
//!
//! Usage: `memprof-call-cost <calls> <rounds>`.

use std::hint::black_box;

/// Defines `$name` with `$body`, and `$profiled` with the same body under
/// `#[memprof::profile]`: the same code, compared.
macro_rules! with_and_without_profile {
    ($name:ident, $profiled:ident, fn($arg:ident: u64) -> u64 $body:block) => {
        #[inline(never)]
        fn $name($arg: u64) -> u64 $body

        #[inline(never)]
        #[memprof::profile]
        fn $profiled($arg: u64) -> u64 $body
    };
    ($name:ident, $profiled:ident, async fn($arg:ident: u64) -> u64 $body:block) => {
        async fn $name($arg: u64) -> u64 $body

        #[memprof::profile]
        async fn $profiled($arg: u64) -> u64 $body
    };
}

// The 3-statement function.
with_and_without_profile!(plain, profiled, fn(x: u64) -> u64 {
    let a = x * 3;
    let b = a ^ (a >> 7);
    b + 1
});

// A loop whose body binds a local, so that its block has a scope-end row:
// three probes per iteration.
with_and_without_profile!(plain_loop, profiled_loop, fn(n: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        let x = black_box(i ^ sum);
        sum = sum.wrapping_add(x);
    }
    sum
});

// A recursive function, which keeps one body under `MEMPROF=off` (see
// `off_branch` in memprof-macros): the case that costs most there.
#[inline(never)]
fn plain_depth(n: u64) -> u64 {
    if n == 0 {
        return black_box(0);
    }
    let below = plain_depth(black_box(n - 1));
    below + n
}

#[inline(never)]
#[memprof::profile]
fn profiled_depth(n: u64) -> u64 {
    if n == 0 {
        return black_box(0);
    }
    let below = profiled_depth(black_box(n - 1));
    below + n
}

// The loop again in an `async fn`, polled to its end at once: what its
// statements cost where a task runs them.
with_and_without_profile!(plain_async_loop, profiled_async_loop, async fn(n: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        let x = black_box(i ^ sum);
        sum = sum.wrapping_add(x);
    }
    sum
});

/// Polls `future` once, which ends it.
fn ready<F: std::future::Future<Output = u64>>(future: F) -> u64 {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    thread_local! {
        static WAKER: std::task::Waker = std::task::Waker::from(std::sync::Arc::new(Noop));
    }
    let mut future = std::pin::pin!(future);
    WAKER.with(|waker| {
        match future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
        {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => unreachable!("the loops never wait"),
        }
    })
}

/// Levels per call of the recursion.
const DEPTH: u64 = 16;

/// Iterations per call of the loops.
const LOOP: u64 = 1000;

/// Probes per iteration of `profiled_loop`: two statements and the body's
/// closing brace.
const PROBES_PER_ITERATION: f64 = 3.0;

/// Statements per iteration of `profiled_loop`, as its reader counts them:
/// what a statement of a loop body costs, its share of the closing brace and
/// of the body's cursor included.
const STATEMENTS_PER_ITERATION: f64 = 2.0;

/// Nanoseconds of the calling thread's CPU time so far.
///
/// NOTE: CPU time, not wall time: on a shared machine two threads may not
/// both get a core, and time spent waiting for one is not the calls' cost;
/// contention between the two (shared cache lines) does show in CPU time.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU nanoseconds per call of `f` over `calls` calls on each of `threads`
/// threads started together (the mean over the threads).
fn per_call(f: fn(u64) -> u64, calls: u64, threads: usize) -> f64 {
    let run = move || {
        let start = thread_cpu_ns();
        let mut acc = 0u64;
        for i in 0..calls {
            acc = acc.wrapping_add(f(black_box(i)));
        }
        black_box(acc);
        (thread_cpu_ns() - start) as f64 / calls as f64
    };
    if threads == 1 {
        return run();
    }
    let total: f64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(run)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total / threads as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let calls = args.next().unwrap_or(2_000_000);
    let rounds = args.next().unwrap_or(9) as usize;
    // Warm up: the first call of each function sets up its thread's state.
    per_call(profiled, 1000, 1);
    per_call(profiled, 1000, 2);
    per_call(plain, 1000, 1);
    // Interleaved rounds; each figure is the median of the within-round
    // differences, which keeps it steady on a shared machine.
    let (mut one, mut two, mut one_plain, mut probe) = (vec![], vec![], vec![], vec![]);
    let (mut loop_statement, mut pointer) = (vec![], vec![]);
    // The same functions called through pointers the compiler cannot see
    // through, as a callback or a trait object would call them.
    let plain_ptr = black_box(plain as fn(u64) -> u64);
    let profiled_ptr = black_box(profiled as fn(u64) -> u64);
    let (mut depth_plain, mut depth_ratio) = (vec![], vec![]);
    let mut async_statement = vec![];
    for _ in 0..rounds {
        let p1 = per_call(plain, calls, 1);
        let m1 = per_call(profiled, calls, 1);
        let p2 = per_call(plain, calls, 2);
        let m2 = per_call(profiled, calls, 2);
        let lp = per_call(|_| plain_loop(LOOP), calls / LOOP, 1) / LOOP as f64;
        let lm = per_call(|_| profiled_loop(LOOP), calls / LOOP, 1) / LOOP as f64;
        one.push(m1 - p1);
        two.push(m2 - p2);
        one_plain.push(p1);
        probe.push((lm - lp) / PROBES_PER_ITERATION);
        loop_statement.push((lm - lp) / STATEMENTS_PER_ITERATION);
        pointer.push(per_call(profiled_ptr, calls, 1) - per_call(plain_ptr, calls, 1));
        let dp = per_call(|_| plain_depth(DEPTH), calls / DEPTH, 1);
        let dm = per_call(|_| profiled_depth(DEPTH), calls / DEPTH, 1);
        depth_plain.push(dp / DEPTH as f64);
        depth_ratio.push(dm / dp);
        let ap = per_call(|_| ready(plain_async_loop(LOOP)), calls / LOOP, 1) / LOOP as f64;
        let am = per_call(|_| ready(profiled_async_loop(LOOP)), calls / LOOP, 1) / LOOP as f64;
        async_statement.push((am - ap) / STATEMENTS_PER_ITERATION);
    }
    let (one, two) = (median(one), median(two));
    println!("plain_call {:.2}", median(one_plain));
    println!("call_overhead {one:.2}");
    println!("call_overhead_2_threads {two:.2}");
    println!("probe {:.2}", median(probe));
    println!("loop_statement {:.2}", median(loop_statement));
    println!("call_overhead_fn_pointer {:.2}", median(pointer));
    println!("recursive_plain_level {:.2}", median(depth_plain));
    println!("recursive_ratio {:.3}", median(depth_ratio));
    println!("async_loop_statement {:.2}", median(async_statement));

    // The same call after 10,000 threads came and went (each allocating,
    // none making a profiled call), then with 2,000 threads alive: a call's
    // entry sums the process's heap, whose cost must not follow them.
    let overhead = || {
        median(
            (0..rounds)
                .map(|_| per_call(profiled, calls, 1) - per_call(plain, calls, 1))
                .collect(),
        )
    };
    for n in 0..10_000 {
        std::thread::spawn(move || black_box(vec![0u8; n % 100 + 1]).len())
            .join()
            .unwrap();
    }
    println!("call_overhead_after_10000_threads {:.2}", overhead());
    let all = std::sync::Arc::new(std::sync::Barrier::new(2_001));
    let live: Vec<_> = (0..2_000)
        .map(|_| {
            let all = std::sync::Arc::clone(&all);
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    let held = black_box(vec![0u8; 64]);
                    all.wait();
                    all.wait();
                    drop(held);
                })
                .unwrap()
        })
        .collect();
    all.wait();
    println!("call_overhead_2000_live_threads {:.2}", overhead());
    all.wait();
    live.into_iter().for_each(|h| h.join().unwrap());
}
