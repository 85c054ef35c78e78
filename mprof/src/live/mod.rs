//! Talking to a running program built with memprof and started with
//! `MEMPROF_LIVE=1`: finding its socket by pid (the runtime's `live_rule`)
//! and asking it for a snapshot (`client`); `mprof snapshot` (`snapshot`).

pub mod client;
pub mod snapshot;
