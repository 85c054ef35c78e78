//! A running program watched from outside: the channel that `mprof
//! snapshot` and `mprof top` connect to (`MEMPROF_LIVE`), numbered
//! snapshots written by themselves (`MEMPROF_SNAPSHOT_EVERY`), and
//! `MEMPROF_JSON` written when SIGTERM or SIGINT ends the program.
//!
//! All three are served by one thread, `memprof-live`, started at the
//! first profiled call only where one of the variables is set: without
//! them nothing listens, no signal handler is installed and no thread is
//! started. It is a bare pthread with every signal blocked (as the
//! timeline's sampler), and runs everything inside [`untracked`], so that
//! none of its work or memory shows in any figure. It waits in `poll` on
//! the socket (`socket`) and on the pipe that the signal handler writes to
//! (`signals`), with a timeout when a snapshot is due, or when the debug
//! information that snapshots' sites were symbolized with is to be let go
//! of (`snapshot`). While it serves a client it waits on that pipe too
//! (`connection`): no client, slow or hostile, holds a signal up.
//!
//! The profiled program never waits for it: a snapshot reads the rows as
//! `report()` does (each row behind its sequence number, which a writer
//! never waits on), and takes a function's list of thread aggregates,
//! which profiled calls take only at a thread's first call of the function
//! and at its end.
//!
//! After `fork`, the child has no `memprof-live` thread: it closes its copy
//! of the listening socket, puts the signal dispositions back as they were
//! before memprof, and never removes the parent's socket (`forked_child`).

mod abort;
mod connection;
mod signals;
mod snapshot;
mod socket;

use crate::alloc::untracked;
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The process that started the thread; a child of `fork` is another.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// Starts the thread if `MEMPROF_LIVE`, `MEMPROF_SNAPSHOT_EVERY` or
/// `MEMPROF_JSON` asks for it; once, at the first profiled call.
pub(crate) fn start() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| untracked(start_now));
}

fn start_now() {
    let config = crate::settings::get();
    if !config.enabled {
        return;
    }
    let listening = config.live && socket::listen();
    let every = config.snapshot_every;
    let handled = (config.json.is_some() || listening) && signals::install();
    if !listening && !handled && every.is_none() {
        return;
    }
    OWNER.store(std::process::id(), Relaxed);
    if !spawn() {
        crate::stdio::warning!("memprof: cannot start the memprof-live thread; not listening");
        socket::close_and_remove();
        signals::uninstall();
    }
}

/// The thread's loop: waits for a connection, a signal or the next
/// snapshot, and serves it.
fn serve_forever() {
    let mut schedule = snapshot::Schedule::new(crate::settings::get().snapshot_every);
    let mut let_go = snapshot::LetGo::new();
    loop {
        let mut fds = [
            libc::pollfd {
                fd: socket::LISTENING.load(Relaxed),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: signals::PIPE_READ.load(Relaxed),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = snapshot::earlier_timeout(schedule.timeout_ms(), let_go.timeout_ms());
        // SAFETY: two valid `pollfd`s; a negative fd is skipped by `poll`.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if ready < 0 {
            // Signals are blocked on this thread; an error here is not
            // transient, and spinning on it would burn a core.
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        if fds[1].revents & libc::POLLIN != 0 {
            signals::deliver_pending();
        }
        if fds[0].revents & libc::POLLIN != 0 {
            socket::serve_one(fds[1].fd);
        }
        let wrote = schedule.write_if_due();
        if ready > 0 || wrote {
            let_go.after_use();
        }
        let_go.let_go_if_due();
    }
}

/// Starts `memprof-live` as a bare pthread with every signal blocked, so
/// that no Rust thread bookkeeping allocates for it and the program's
/// signal handlers never run on it.
fn spawn() -> bool {
    extern "C" fn run(_: *mut libc::c_void) -> *mut libc::c_void {
        crate::os::name_own_thread(c"memprof-live");
        // A panic must not unwind into libc; there is nothing to serve
        // after one.
        let _ = std::panic::catch_unwind(|| untracked(serve_forever));
        std::ptr::null_mut()
    }
    // SAFETY: plain libc calls on locals that live across them; the
    // thread's entry point never unwinds.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 512 * 1024);
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        let mut thread: libc::pthread_t = std::mem::zeroed();
        let started = libc::pthread_create(&mut thread, &attr, run, std::ptr::null_mut()) == 0;
        if started {
            crate::os::name_started_thread(thread, c"memprof-live");
        }
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        started
    }
}

/// Whether this process is the one that started the thread (not a child
/// of `fork`).
fn is_owner() -> bool {
    OWNER.load(Relaxed) == std::process::id()
}

/// At exit: the socket goes, so that no file outlives the process.
pub(crate) fn at_exit() {
    if is_owner() {
        socket::close_and_remove();
    }
}

/// In a child of `fork` (async-signal-safe: `close` and `sigaction`
/// only): no thread serves the child, so it stops listening, without
/// removing the parent's socket, and its signals go back to what they
/// were before memprof.
pub(crate) fn forked_child() {
    if OWNER.load(Relaxed) == 0 {
        return;
    }
    let listening = socket::LISTENING.swap(-1, Relaxed);
    if listening >= 0 {
        // SAFETY: the child's copy of the listening socket, used by no one.
        unsafe { libc::close(listening) };
    }
    signals::uninstall();
    OWNER.store(0, Relaxed);
}
