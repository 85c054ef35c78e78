//! Calls of profiled functions: what the macro emits for each function
//! ([`FnMeta`]), one call's state ([`Frame`]) and what it reads beside the
//! heap (`beside`), its statement cursors, the thread's side stack where
//! synchronous calls keep both (`stack`), the per-thread aggregates the
//! calls record into, and `async fn` polling.
//!
//! Nothing here prints: a finished call hands its own table, if it has one,
//! to the layer above.

mod beside;
mod cursor;
mod edge;
pub(crate) mod edges;
mod frame;
mod meta;
pub(crate) mod polled_rows;
mod polling;
pub(crate) mod rows_events;
mod sites;
pub(crate) mod stack;
mod task;
mod thread;

pub use cursor::{Cursor, TailGuard};
pub use frame::AUTO_CALL_TABLES;
pub(crate) use frame::{CallFacts, Frame};
#[cfg(unix)]
pub(crate) use meta::ListsHeldForFork;
pub use meta::{FnMeta, Registration, is_off};
pub(crate) use meta::{
    call_ended_at_exit, exit_report_stale, exit_report_taken, exit_report_taken_already,
    exit_report_written, switch_on_entry,
};
pub(crate) use sites::kernel_call_key;
pub use task::Instrumented;
pub(crate) use thread::open_here;
