//! What allocation sites (`MEMPROF_SITES`) charge a call's rows to: the
//! function, the row, and the table the call records into (the thread's
//! aggregate, or a per-call table of its own), for the calls the runtime
//! entered and those the kernel did.

use super::frame::Frame;
use super::thread::ThreadFn;
use crate::kernel::layout::CallHead;
use crate::owned::{get, load_u64};
use crate::region::Scope;
use crate::sites::Key;

impl Frame {
    /// The key of row `cell` of a call the runtime entered; `None` for a
    /// process-scope call (sites follow the calling thread's allocations).
    pub(crate) fn site_key(&self, cell: u32) -> Option<Key> {
        (self.meta.scope == Scope::Thread).then(|| Key {
            meta: std::ptr::from_ref(self.meta) as usize,
            cell,
            serial: get(&self.state().sites_serial),
            generation: get(&self.state().sites_generation),
        })
    }
}

/// The key of row `cell` of a call the kernel entered, from its head.
///
/// # Safety
/// `head` is a kernel-entered call of this thread, still open.
pub(crate) unsafe fn kernel_call_key(head: &CallHead, cell: u32) -> Option<Key> {
    // SAFETY: a kernel-entered call's aggregate, which outlives the call.
    let thread_fn = unsafe { get(&head.thread_fn).cast::<ThreadFn>().as_ref() }?;
    // The kernel records nested calls wherever the outermost call does:
    // the aggregate, or that call's own table.
    let serial = if std::ptr::eq(get(&head.cells), thread_fn.cells) {
        0
    } else {
        thread_fn.target_serial.get()
    };
    Some(Key {
        meta: std::ptr::from_ref(thread_fn.meta()) as usize,
        cell,
        serial,
        generation: load_u64(&thread_fn.generation),
    })
}
