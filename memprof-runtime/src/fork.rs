//! `fork` while other threads run memprof code: `fork` copies only the
//! calling thread, so a lock another thread held at that moment stays held
//! in the child forever, and a row it was writing stays half written, which
//! `report()`'s sequence-number reads would wait out forever.
//!
//! As glibc and jemalloc do, `pthread_atfork` handlers, registered with the
//! exit hook at the first profiled call: before the fork, the forking
//! thread takes every lock a child may need (the settings' first read, each
//! function's list of aggregates, the call edges, the quiet calls' events,
//! the `MEMPROF_OUTPUT` file), so that no
//! other thread is inside one; after it, the parent and the child each
//! release their copy, and the child first ends the row writes its lost
//! threads left open.
//!
//! The child has no `memprof-live` thread: it stops listening on its copy
//! of the parent's socket and puts its signals back (`live::forked_child`).
//!
//! NOTE: not covered, as in any Rust program: the standard library's own
//! locks (a thread inside `println!` as another forks leaves stdout locked
//! in the child; one starting or ending a thread leaves the lock that
//! `std::process::exit` takes), and the GPU ledger, as CUDA does not
//! survive `fork`.

use crate::calls::ListsHeldForFork;
use std::cell::RefCell;
use std::sync::Once;

/// What the forking thread holds from `prepare` until `parent` or `child`.
struct Held {
    // NOTE: dropped in declaration order, the reverse of the order taken.
    _quiet_events: crate::quiet_events::HeldForFork,
    _edges: crate::calls::edges::EdgesHeldForFork,
    _sites: Option<crate::sites::HeldForFork>,
    _output: Option<std::sync::MutexGuard<'static, std::fs::File>>,
    lists: ListsHeldForFork,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Registers the handlers, once.
pub(crate) fn register() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        #[cfg(unix)]
        // SAFETY: three `extern "C"` functions that never unwind.
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
        }
    });
}

/// Runs `f`, whose panic (a bug of ours) must not unwind into libc.
fn guarded(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::alloc::untracked(f)));
}

extern "C" fn prepare() {
    guarded(|| {
        // A child's first profiled call or exit reads the settings: read
        // them here (waiting for a thread reading them now) so that the
        // child does not find their first read under way.
        let _ = crate::settings::get();
        let lists = ListsHeldForFork::lock();
        let output = crate::sink::hold_file_for_fork();
        let sites = crate::sites::hold_for_fork();
        let edges = crate::calls::edges::EdgesHeldForFork::lock();
        let quiet_events = crate::quiet_events::hold_for_fork();
        let _ = HELD.try_with(|held| {
            *held.borrow_mut() = Some(Held {
                _quiet_events: quiet_events,
                _edges: edges,
                _sites: sites,
                _output: output,
                lists,
            })
        });
    });
}

extern "C" fn parent() {
    guarded(|| {
        let _ = HELD.try_with(|held| drop(held.borrow_mut().take()));
    });
}

extern "C" fn child() {
    guarded(|| {
        crate::live::forked_child();
        let _ = HELD.try_with(|held| {
            if let Some(held) = held.borrow_mut().take() {
                held.lists.end_lost_writes();
                // Unlocks the child's copies: their owner is this thread.
                drop(held);
            }
        });
    });
}
