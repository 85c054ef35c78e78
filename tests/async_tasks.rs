//! `async fn` is counted per poll: a task that moves between threads keeps
//! one exact count, and other work on those threads never leaks into it.

use memprof::{measure, profile};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Returns `Pending` once, so the caller can move the task elsewhere.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

#[profile]
async fn moves_between_threads() -> usize {
    let a = vec![1u8; 1000];
    YieldOnce(false).await;
    let b = vec![2u8; 3000];
    drop(a);
    let both = YieldOnce(false).await;
    black_box_unit(both);
    b.len()
}

fn black_box_unit(x: ()) {
    std::hint::black_box(x)
}

fn assert_send<T: Send>(_: &T) {}

/// A waker made once, so that polling allocates nothing of its own.
fn noop_waker() -> &'static Waker {
    static WAKER: std::sync::OnceLock<Waker> = std::sync::OnceLock::new();
    WAKER.get_or_init(|| Waker::from(Arc::new(Noop)))
}

fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(noop_waker()))
}

#[test]
fn a_task_polled_on_three_threads_counts_only_itself() {
    noop_waker();
    let mut fut = Box::pin(moves_between_threads());
    assert_send(&fut);

    // First poll here, with unrelated allocations around it on this thread.
    let noise = vec![0u8; 50_000];
    assert!(poll_once(&mut fut).is_pending());
    drop(noise);

    // Second poll on another thread, which allocates heavily before and after.
    let mut fut = std::thread::spawn(move || {
        let noise = vec![0u8; 70_000];
        assert!(poll_once(&mut fut).is_pending());
        drop(noise);
        fut
    })
    .join()
    .unwrap();

    // Last poll on a third thread.
    let out = std::thread::spawn(move || {
        let noise = vec![0u8; 90_000];
        let out = poll_once(&mut fut);
        drop(noise);
        drop(fut);
        out
    })
    .join()
    .unwrap();
    assert_eq!(out, Poll::Ready(3000));

    let report = memprof::report();
    let t = report.function("moves_between_threads").unwrap_or_else(|| {
        panic!(
            "{:?}",
            report.functions.iter().map(|f| &f.name).collect::<Vec<_>>()
        )
    });
    let fig = |text: &str| {
        let r = t.line_containing(text).unwrap();
        (r.increment.unwrap(), r.peak.unwrap(), r.occurrences)
    };
    assert_eq!(fig("let a = vec!"), (1000, 1000, 1));
    assert_eq!(fig("let b = vec!"), (3000, 3000, 1));
    assert_eq!(fig("drop(a)"), (-1000, 0, 1));
    // The await statement spans two polls on two threads; nothing of theirs.
    assert_eq!(fig("YieldOnce(false).await;"), (0, 0, 1));
    // The whole call: `b` is freed when the call ends, peak is a + b.
    assert_eq!(fig("async fn moves_between_threads"), (0, 4000, 1));
}

#[test]
fn measure_around_polls_sees_the_polls_allocations() {
    #[profile]
    async fn allocate_and_keep() -> Vec<u8> {
        let v = vec![0u8; 2048];
        YieldOnce(false).await;
        v
    }

    noop_waker();
    let mut fut = Box::pin(allocate_and_keep());
    let (pending, first) = measure(|| poll_once(&mut fut).is_pending());
    assert!(pending);
    assert_eq!((first.increment, first.peak), (2048, 2048));
    let (out, second) = measure(|| poll_once(&mut fut));
    match out {
        Poll::Ready(v) => assert_eq!(v.len(), 2048),
        Poll::Pending => panic!("still pending"),
    }
    assert_eq!((second.increment, second.peak), (0, 0));
}

#[profile]
async fn allocates_across_an_await() -> usize {
    let before = vec![3u8; 500];
    let pair = (vec![4u8; 700], YieldOnce(false).await, vec![5u8; 900]);
    let n = before.len() + pair.0.len() + pair.2.len();
    drop(pair);
    for i in 0..3 {
        let turn = vec![6u8; 100 * (i + 1)];
        YieldOnce(false).await;
        drop(turn);
    }
    n
}

/// Polls `fut` once on a new thread that allocated `noise` bytes before,
/// and hands it back.
fn poll_on_a_new_thread<F: Future<Output = usize> + Send + Unpin + 'static>(
    mut fut: F,
    noise: usize,
) -> (F, Poll<usize>) {
    std::thread::spawn(move || {
        let noise = vec![0u8; noise];
        let out = poll_once(&mut fut);
        drop(noise);
        (fut, out)
    })
    .join()
    .unwrap()
}

/// The statements of an `async fn` step through the kernel while their
/// block has a row open, on whichever thread polls them: a statement
/// whose allocations straddle an `.await` that moved the task counts both
/// threads' parts, and a loop's rows, open across polls on five threads,
/// count each turn once.
#[test]
fn rows_open_across_polls_on_other_threads_stay_exact() {
    noop_waker();
    let mut fut = Box::pin(allocates_across_an_await());
    let mut out = Poll::Pending;
    for k in 0..5 {
        assert!(out.is_pending(), "ready after {k} polls");
        (fut, out) = poll_on_a_new_thread(fut, 10_000 * (k + 1));
    }
    assert_eq!(out, Poll::Ready(2100));

    let report = memprof::report();
    let t = report.function("allocates_across_an_await").unwrap();
    let fig = |text: &str| {
        let r = t.line_containing(text).unwrap();
        (r.increment.unwrap(), r.peak.unwrap(), r.occurrences)
    };
    assert_eq!(fig("let before = vec!"), (500, 500, 1));
    assert_eq!(fig("let pair = (vec!"), (1600, 1600, 1));
    assert_eq!(fig("let n = before"), (0, 0, 1));
    assert_eq!(fig("drop(pair)"), (-1600, 0, 1));
    assert_eq!(fig("let turn = vec!"), (600, 300, 3));
    assert_eq!(fig("YieldOnce(false).await;"), (0, 0, 3));
    assert_eq!(fig("drop(turn);"), (-600, 0, 3));
    assert_eq!(fig("async fn allocates_across_an_await"), (0, 2100, 1));
}
