//! Signals as a program started from a terminal has them.

use std::process::Command;

/// `command` with SIGINT and SIGTERM at their default actions in the
/// program it starts, as a program started from a terminal has them: a
/// runner that starts the tests from a shell without job control leaves
/// SIGINT ignored, an ignored signal stays ignored across `exec`, and
/// memprof keeps it so (as the program would), so that a test sending it
/// would wait for ever.
pub fn default_signals(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure calls only `signal`, which
    // is async-signal-safe, and touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        })
    }
}
