//! A call's rows as allocation sites see them (`MEMPROF_SITES`): each row
//! of a synchronous call is open in `sites` while it runs, under a key that
//! names the table it records into.

use super::frame::Frame;
use crate::alloc;
use crate::owned::get;

impl Frame {
    /// What `sites` charges the allocations of row `cell` to.
    pub(super) fn site_key(&self, cell: u32) -> crate::sites::Key {
        crate::sites::Key {
            meta: std::ptr::from_ref(self.meta) as usize,
            cell,
            serial: get(&self.state().sites_serial),
            generation: get(&self.state().sites_generation),
        }
    }

    /// Row `cell` starts running: `sites` charges it from now on.
    pub(crate) fn site_row_opened(&self, cell: u32) {
        if crate::sites::opened(self.site_key(cell)) {
            alloc::route_to_sites(true);
        }
    }

    /// The row that started last stops running.
    pub(crate) fn site_row_closed(&self) {
        if crate::sites::closed() {
            alloc::route_to_sites(false);
        }
    }
}
