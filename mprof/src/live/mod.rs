//! Talking to a running program built with memprof and started with
//! `MEMPROF_LIVE=1`: finding its socket by pid (the runtime's `live_rule`)
//! and asking it for a snapshot (`client`), from a socket it trusts as the
//! program's (`trust`); `mprof snapshot` (`snapshot`).

pub mod client;
pub mod snapshot;
pub mod trust;
