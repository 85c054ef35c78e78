//! cargo-memprof's signals while cargo and the program run. Ctrl-C reaches
//! them through the terminal's process group, so this process only waits
//! for them to end and then prints the report. A SIGTERM or SIGINT sent to
//! this process alone (`kill $!`) is passed on to its child: cargo, and
//! then the program, which `cargo run` execs in cargo's place. So the
//! program writes its report and ends, as it would by itself, and this
//! process prints that report, instead of ending and leaving the program
//! running with no one to print it.

use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

/// The child's pid; 0 before it is started.
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // NOTE: a signal the kernel sent (Ctrl-C: `si_code` > 0) reached the
    // whole process group, the child too; one sent by a process (`kill`,
    // `si_code` <= 0) reached this process only.
    // SAFETY: `info` is the kernel's, valid during the handler; `kill` is
    // async-signal-safe.
    unsafe {
        let sent = !info.is_null() && (*info).si_code <= 0;
        let child = CHILD.load(Relaxed);
        if sent && child > 0 {
            libc::kill(child, signal);
        }
    }
}

/// Installs the handler for SIGTERM and SIGINT, before the child starts.
/// The child, which execs, starts with their default dispositions.
pub fn install() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed `sigaction` is valid; `forward` is an
        // async-signal-safe three-argument handler, as SA_SIGINFO wants.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The child to pass signals on to.
pub fn child_started(pid: u32) {
    CHILD.store(pid as i32, Relaxed);
}
