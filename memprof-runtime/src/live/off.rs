//! `live` where it is not built (Windows): no `MEMPROF_LIVE` socket, no
//! `MEMPROF_SNAPSHOT_EVERY` snapshots, no report written when a signal
//! ends the program. The channel is a Unix socket served by a pthread
//! with every signal blocked, woken by a signal handler's self-pipe:
//! nothing of it has a Windows counterpart here. `MEMPROF_JSON` is still
//! written at a normal exit (`output`).

use std::sync::Once;

/// Says once, at the first profiled call, that the variables that ask for
/// the channel are not served here.
pub(crate) fn start() {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        crate::alloc::untracked(|| {
            let config = crate::settings::get();
            if config.enabled && (config.live || config.snapshot_every.is_some()) {
                crate::stdio::warning!(
                    "memprof: MEMPROF_LIVE and MEMPROF_SNAPSHOT_EVERY are served on Unix \
                     only; ignored here (MEMPROF_JSON is written at exit)"
                );
            }
        });
    });
}

/// Nothing to remove at exit: no socket was made.
pub(crate) fn at_exit() {}
