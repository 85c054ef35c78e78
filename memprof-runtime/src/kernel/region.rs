//! The kernel's work: thread-scope regions on a thread's [`Counters`], a
//! row's update when an execution closes, and the statement step.
//!
//! PERF: plain loads and stores of state only the calling thread writes,
//! through the `owned` helpers, so that this stays a few instructions where
//! it is compiled without optimization too (the pure-Rust fallback).

use super::layout::{
    CALL_KERNEL, CallHead, Counters, CursorHead, FnHead, Globals, LineCell, NO_CELL, Slot,
};
use super::owned::{get, load_i64, load_u32, load_u64, max, set};
use core::cell::Cell;
use core::sync::atomic::{Ordering, fence};

/// Figures for one closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// Net bytes allocated while open.
    pub increment: i64,
    /// Highest rise above the start.
    pub peak: u64,
    /// Allocations while open.
    pub allocations: u64,
    /// Bytes those allocations asked for (a `realloc`'s new size).
    pub allocated: u64,
    /// The count when the region closed (context terms for thread scope, the
    /// process total for process scope).
    pub end: i64,
}

impl Counters {
    /// Allocations plus frees on this thread so far, counted ones only: it
    /// moves with every event that moves a figure (a `realloc` is both).
    #[inline(always)]
    pub(crate) fn events(&self) -> u64 {
        get(&self.allocs).wrapping_add(get(&self.deallocs))
    }

    /// This thread's net count: bytes allocated minus bytes freed.
    #[inline(always)]
    pub(crate) fn net(&self) -> i64 {
        // SAFETY: `slot` points at a slot that outlives every use through
        // this thread's counters (see `alloc`).
        let slot: &Slot = unsafe { &*get(&self.slot) };
        // Only this thread stores to its slot.
        load_i64(&slot.net)
    }
}

/// Opens a thread-scope region on `t`: its start, and the enclosing
/// region's watermark to restore at its close.
#[inline(always)]
pub fn open_in(t: &Counters) -> (i64, i64) {
    let adjust = get(&t.adjust_net);
    let peak = get(&t.peak);
    let net = t.net();
    let saved = max(peak + adjust, get(&t.carry));
    set(&t.hi, max(get(&t.hi), peak));
    set(&t.peak, net);
    set(&t.carry, i64::MIN);
    (net + adjust, saved)
}

/// The calling context's allocation count, for a region's start (see
/// [`close_in`]).
#[inline(always)]
pub fn allocs_in(t: &Counters) -> u64 {
    get(&t.allocs).wrapping_add(get(&t.adjust_allocs))
}

/// The calling context's bytes allocated so far, for a region's start (see
/// [`close_in`]).
#[inline(always)]
pub fn allocated_in(t: &Counters) -> u64 {
    get(&t.allocated).wrapping_add(get(&t.adjust_allocated))
}

/// Closes the thread-scope region that [`open_in`] opened on `t`, when the
/// context's allocation count was `allocs` ([`allocs_in`]) and its bytes
/// allocated `allocated` ([`allocated_in`]).
#[inline(always)]
pub fn close_in(t: &Counters, start: i64, saved: i64, allocs: u64, allocated: u64) -> RegionStats {
    let adjust = get(&t.adjust_net);
    let watermark = max(get(&t.peak) + adjust, get(&t.carry));
    set(&t.carry, max(saved, watermark));
    let end = t.net() + adjust;
    let increment = end - start;
    let rise = max(watermark - start, increment);
    RegionStats {
        increment,
        peak: if rise > 0 { rise as u64 } else { 0 },
        allocations: allocs_in(t).wrapping_sub(allocs),
        allocated: allocated_in(t).wrapping_sub(allocated),
        end,
    }
}

/// Whether nothing was allocated or freed in the context since a region
/// opened at `start` with `allocs` ([`open_in`], [`allocs_in`]): then the
/// count is still `start`, the allocation count still `allocs`, and the
/// region closes with zero figures (see [`close_quiet_in`]).
///
/// PERF: a free without an allocation always moves the count (no block has
/// zero bytes), and a `realloc` counts as an allocation, so the two
/// comparisons see every event. Allocations are far rarer than statements:
/// this is how most statements close.
#[inline(always)]
pub fn quiet_in(t: &Counters, start: i64, allocs: u64) -> bool {
    t.net() + get(&t.adjust_net) == start && allocs_in(t) == allocs
}

/// [`close_in`] for a region that [`quiet_in`]: restores the enclosing
/// region's watermark, `saved`, which is all that the full close changes
/// then (the region's own watermark is its start, and `saved` is at least
/// that).
#[inline(always)]
pub fn close_quiet_in(t: &Counters, saved: i64) {
    set(&t.carry, saved);
}

impl LineCell {
    /// An execution of the row starts (owner only).
    #[inline(always)]
    pub(crate) fn opened(&self) {
        // SAFETY: only the owning thread touches `open`.
        unsafe { *self.open.get() += 1 }
    }

    #[inline(always)]
    pub(crate) fn begin_write(&self) -> u32 {
        let seq = load_u32(&self.seq);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        seq
    }

    #[inline(always)]
    pub(crate) fn end_write(&self, seq: u32) {
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// An execution of the row ends (owner only): adds its figures under the
    /// recursion rule (see `open`).
    ///
    /// PERF: the owner reads its own figures with plain loads and stores
    /// only what changed: a statement that allocated nothing stores its
    /// occurrence and the two sequence numbers.
    #[inline(always)]
    pub(crate) fn closed(&self, stats: &RegionStats, mem_usage: i64) {
        self.closed_with(stats, mem_usage, None);
    }

    /// [`LineCell::closed`] for an execution in which nothing was allocated
    /// or freed: its occurrence and its Mem usage, the only figures such an
    /// execution can move.
    #[inline(always)]
    pub(crate) fn closed_quiet(&self, mem_usage: i64) {
        use Ordering::Relaxed;
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open.get() };
        *open = open.saturating_sub(1);
        let seq = self.begin_write();
        self.occurrences
            .store(load_u64(&self.occurrences) + 1, Relaxed);
        if mem_usage > load_i64(&self.mem_usage) {
            self.mem_usage.store(mem_usage, Relaxed);
        }
        self.end_write(seq);
    }

    /// [`LineCell::closed`] with the execution's GPU figures, (increment,
    /// usage, peak), if any: one write for both.
    #[inline(always)]
    pub(crate) fn closed_with(
        &self,
        stats: &RegionStats,
        mem_usage: i64,
        gpu: Option<(i64, i64, u64)>,
    ) {
        use Ordering::Relaxed;
        let (increment, peak) = (stats.increment, stats.peak);
        let (allocations, allocated) = (stats.allocations, stats.allocated);
        // SAFETY: only the owning thread touches `open`.
        let open = unsafe { &mut *self.open.get() };
        let nested = *open > 1;
        *open = open.saturating_sub(1);
        let seq = self.begin_write();
        self.occurrences
            .store(load_u64(&self.occurrences) + 1, Relaxed);
        if !nested {
            if increment != 0 {
                self.increment
                    .store(load_i64(&self.increment) + increment, Relaxed);
            }
            if peak > load_u64(&self.peak) {
                self.peak.store(peak, Relaxed);
            }
            if allocations != 0 {
                self.allocations
                    .store(load_u64(&self.allocations) + allocations, Relaxed);
                self.allocated
                    .store(load_u64(&self.allocated) + allocated, Relaxed);
            }
        }
        if mem_usage > load_i64(&self.mem_usage) {
            self.mem_usage.store(mem_usage, Relaxed);
        }
        if let Some((increment, usage, peak)) = gpu {
            if !nested {
                if increment != 0 {
                    self.gpu_increment
                        .store(load_i64(&self.gpu_increment) + increment, Relaxed);
                }
                if peak > load_u64(&self.gpu_peak) {
                    self.gpu_peak.store(peak, Relaxed);
                }
            }
            if usage > load_i64(&self.gpu_usage) {
                self.gpu_usage.store(usage, Relaxed);
            }
        }
        self.end_write(seq);
    }
}

impl CallHead {
    /// Row `cell`. The macro numbers cells below the function's cell count.
    #[inline(always)]
    pub(crate) fn row(&self, cell: u32) -> &LineCell {
        // SAFETY: `cells` points at the function's rows, which outlive the
        // call.
        unsafe { row_at(get(&self.cells), cell) }
    }
}

/// Row `cell` of the rows at `cells`.
///
/// # Safety
/// `cells` points at a function's rows, which outlive the returned
/// reference, and `cell` is below their count (as generated code's are).
#[inline(always)]
unsafe fn row_at<'a>(cells: *const LineCell, cell: u32) -> &'a LineCell {
    // PERF: address arithmetic rather than `add`, which unoptimized builds
    // check in a call.
    let address = cells as usize + cell as usize * core::mem::size_of::<LineCell>();
    // SAFETY: as the caller promises.
    unsafe { &*(address as *const LineCell) }
}

/// The statement step: closes the cursor's open row, if any, and opens row
/// `next`, unless it is `NO_CELL`. Returns 0 when done, 1 when the call
/// takes the runtime's slow step instead (nothing was done then).
///
/// # Safety
/// `cursor` is null or points at a live cursor of the calling thread, whose
/// `call`, if not null, is a call entered on this thread and still open.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn step(cursor: *const CursorHead, next: u32) -> u32 {
    // SAFETY: as the caller promises.
    let Some(cursor) = (unsafe { cursor.as_ref() }) else {
        return 0;
    };
    let counters = get(&cursor.counters);
    if counters.is_null() {
        if cursor.call.is_null() {
            return 0;
        }
        set(&cursor.pending, next);
        return 1;
    }
    // SAFETY: a cursor's counters are its call's thread's, which live as
    // long as the thread.
    let t = unsafe { &*counters };
    // SAFETY: as the caller promises.
    let call = unsafe { &*cursor.call };
    let cell = get(&cursor.cell);
    if cell != NO_CELL && t.events() == get(&cursor.events) {
        // PERF: the fast path of almost every statement: nothing was
        // allocated or freed since the row's region opened. The next
        // row's region would open where this one started, under the same
        // enclosing watermark and allocation count: the cursor keeps
        // them, and the thread's counters stay as they are (their
        // `carry` holds nothing above the start, which every close reads
        // together with `peak`, at least the start since this region
        // opened).
        call.row(cell)
            .closed_quiet(get(&call.base) + get(&cursor.start));
        set(&cursor.cell, next);
        if next == NO_CELL {
            close_quiet_in(t, get(&cursor.saved));
        } else {
            call.row(next).opened();
        }
        return 0;
    }
    step_loud(cursor, call, t, next);
    0
}

/// [`step`] where the open row's region saw an allocation or a free, or
/// where no row is open: closes the region, if any, with its figures, and
/// opens row `next`'s.
///
/// PERF: out of line, so that [`step`]'s quiet path saves no registers.
#[inline(never)]
fn step_loud(cursor: &CursorHead, call: &CallHead, t: &Counters, next: u32) {
    if get(&cursor.cell) != NO_CELL {
        close_loud(cursor, call, t);
    }
    set(&cursor.cell, next);
    if next != NO_CELL {
        call.row(next).opened();
        let (start, saved) = open_in(t);
        set(&cursor.start, start);
        set(&cursor.saved, saved);
        set(&cursor.start_allocs, allocs_in(t));
        set(&cursor.start_allocated, allocated_in(t));
        set(&cursor.events, t.events());
    }
}

/// Closes the cursor's open row's region, which saw an allocation or a
/// free, and records its figures.
#[inline(always)]
fn close_loud(cursor: &CursorHead, call: &CallHead, t: &Counters) {
    let stats = close_in(
        t,
        get(&cursor.start),
        get(&cursor.saved),
        get(&cursor.start_allocs),
        get(&cursor.start_allocated),
    );
    call.row(get(&cursor.cell))
        .closed(&stats, get(&call.base) + stats.end);
}

/// The process's net heap: the overflow plus the slots claimed now, so
/// that its cost follows the threads that hold one (a few at most), not
/// every thread there ever was. The runtime reads it through this too
/// (`alloc::process_net`).
#[inline(always)]
pub fn process_net(g: &Globals) -> i64 {
    // SAFETY: `Globals` points at the runtime's statics.
    let (claimed, overflow) = unsafe { (&*g.claimed, &*g.overflow) };
    let mut claimed = claimed.load(Ordering::Relaxed);
    let mut sum = overflow.net.load(Ordering::Relaxed);
    while claimed != 0 {
        let i = claimed.trailing_zeros() as usize;
        // SAFETY: the runtime sets bits only for slots that exist.
        sum += unsafe { &*g.slots.add(i) }.net.load(Ordering::Relaxed);
        claimed &= claimed - 1;
    }
    sum
}

/// Takes `size` bytes (a multiple of 16) off the thread's side stack, or
/// returns null when it has no room (or none yet).
#[inline(always)]
fn push(t: &Counters, size: usize) -> *mut u8 {
    let top = get(&t.stack_top);
    if (get(&t.stack_end) as usize).wrapping_sub(top as usize) < size || top.is_null() {
        return core::ptr::null_mut();
    }
    set(&t.stack_top, top.wrapping_add(size));
    top
}

/// The side stack's room for what the kernel puts there: a call's head, and
/// a cursor's.
pub const CALL_ROOM: usize = core::mem::size_of::<CallHead>().next_multiple_of(16);
pub const CURSOR_ROOM: usize = core::mem::size_of::<CursorHead>().next_multiple_of(16);

/// A synchronous call's entry, when the function's `fast` permit is set and
/// this thread has its aggregate and room on its side stack: finds the
/// thread's counters from the thread pointer, puts the call's head and its
/// body's cursor on the side stack, takes the rows, opens the call's region
/// and, unless `first` is `NO_CELL`, row `first`'s: the body's first
/// statement, whose step this saves. Returns the body's cursor, whose call's
/// `mode` is `CALL_KERNEL`, or null when the runtime's entry is to run
/// instead (nothing was done then).
///
/// # Safety
/// `meta` is a function's head and `g` the runtime's globals.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn enter(meta: *const FnHead, g: *const Globals, first: u32) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    let (meta, g) = unsafe { (&*meta, &*g) };
    let no = core::ptr::null_mut();
    if !meta.fast.load(Ordering::Relaxed) {
        return no;
    }
    // SAFETY: as the caller promises.
    let offset = unsafe { &*g.tls_offset }.load(Ordering::Relaxed);
    let tp = super::thread::pointer();
    if offset == 0 || tp == 0 {
        return no;
    }
    // SAFETY: a non-zero offset leads from the thread pointer to this
    // thread's counters (see `tls`), which live as long as the thread.
    let t = unsafe { &*(tp.wrapping_add_signed(offset) as *const Counters) };
    let index = (meta.id.load(Ordering::Relaxed) as usize).wrapping_sub(1);
    if index >= get(&t.fns_len) {
        return no;
    }
    // SAFETY: `fns` holds `fns_len` entries (see `calls::thread`).
    let thread_fn = unsafe { *get(&t.fns).add(index) };
    if thread_fn.is_null() {
        return no;
    }
    // SAFETY: a listed aggregate lives as long as this thread.
    let tf = unsafe { &*thread_fn };
    let depth = get(&tf.depth);
    if depth == 0 && load_u64(&tf.generation) != meta.generation.load(Ordering::Relaxed) {
        return no;
    }
    let record = push(t, CALL_ROOM + CURSOR_ROOM).cast::<CallHead>();
    if record.is_null() {
        return no;
    }
    let top = record
        .cast::<u8>()
        .wrapping_add(CALL_ROOM)
        .cast::<CursorHead>();
    let cells = if depth == 0 {
        set(&tf.target, tf.cells);
        tf.cells
    } else {
        get(&tf.target)
    };
    set(&tf.depth, depth + 1);
    // PERF: the region first, then each head written once, whole. The first
    // row's region, if any, opens where the call's just did: its enclosing
    // watermark is that start, and the thread's counters are already as an
    // open leaves them.
    let (start, saved) = open_in(t);
    let allocs = allocs_in(t);
    let allocated = allocated_in(t);
    // PERF: the rows from `cells` as it is, not through the head written
    // below, whose store the loads would wait for.
    // SAFETY: the function's rows, from the thread's aggregate; row 0 is
    // the `fn` line's.
    unsafe { row_at(cells, 0) }.opened();
    if first != NO_CELL {
        // SAFETY: as above; generated code passes only cells below the count.
        unsafe { row_at(cells, first) }.opened();
    }
    // SAFETY: fresh room on this thread's side stack, aligned to 16.
    unsafe {
        top.write(CursorHead {
            call: record,
            cell: Cell::new(first),
            pending: Cell::new(NO_CELL),
            counters: Cell::new(t as *const Counters),
            start: Cell::new(start),
            saved: Cell::new(start),
            start_allocs: Cell::new(allocs),
            start_allocated: Cell::new(allocated),
            events: Cell::new(t.events()),
        });
        record.write(CallHead {
            counters: Cell::new(t as *const Counters),
            cells: Cell::new(cells),
            base: Cell::new(process_net(g) - start),
            flags: Cell::new(0),
            mode: Cell::new(CALL_KERNEL),
            outermost: Cell::new(depth == 0),
            thread_fn: Cell::new(thread_fn),
            start: Cell::new(start),
            saved: Cell::new(saved),
            start_allocs: Cell::new(allocs),
            start_allocated: Cell::new(allocated),
        })
    };
    top
}

/// Ends a call if [`enter`] entered it (returns 0): closes its body's
/// cursor `top`, records its `fn` row, leaves the function's aggregate and
/// takes both off the side stack. Returns 1, having done nothing, for a call
/// the runtime entered.
///
/// # Safety
/// `top` is the body's cursor of the innermost open synchronous call of this
/// thread.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn exit(top: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    let call = unsafe { (*top).call };
    // SAFETY: as the caller promises.
    if get(&unsafe { &*call }.mode) != CALL_KERNEL {
        return 1;
    }
    // SAFETY: as the caller promises; `enter` set both pointers.
    let (cursor, call, t, tf) = unsafe {
        let call = &*call;
        (&*top, call, &*get(&call.counters), &*get(&call.thread_fn))
    };
    let start = get(&call.start);
    if quiet_in(t, start, get(&call.start_allocs)) {
        // PERF: nothing was allocated or freed during the call, so neither
        // during the body's open row, which started where the call did: one
        // test for both regions.
        let cell = get(&cursor.cell);
        if cell != NO_CELL {
            call.row(cell).closed_quiet(get(&call.base) + start);
        }
        close_quiet_in(t, get(&call.saved));
        call.row(0).closed_quiet(get(&call.base) + start);
    } else {
        exit_loud(cursor, call, t);
    }
    set(&tf.depth, get(&tf.depth) - 1);
    if get(&call.outermost) {
        tf.calls.store(load_u64(&tf.calls) + 1, Ordering::Relaxed);
    }
    // Everything above the frame (its blocks' cursors) is gone already.
    set(&t.stack_top, call as *const CallHead as *mut u8);
    0
}

/// [`exit`]'s closes for a call during which something was allocated or
/// freed: its body's open row, if any (a step to no row), then its `fn`
/// row. Out of line, so that [`exit`]'s quiet path saves no registers.
#[inline(never)]
fn exit_loud(cursor: &CursorHead, call: &CallHead, t: &Counters) {
    if get(&cursor.cell) != NO_CELL {
        // SAFETY: the call's body cursor, live, which the kernel steps.
        unsafe { step(cursor, NO_CELL) };
    }
    let stats = close_in(
        t,
        get(&call.start),
        get(&call.saved),
        get(&call.start_allocs),
        get(&call.start_allocated),
    );
    call.row(0).closed(&stats, get(&call.base) + stats.end);
}

/// A cursor for a nested block of the call whose body's cursor is `top`, if
/// the kernel steps that call's statements: a cursor head on the side
/// stack, at row `first` (the block's first statement, whose step this
/// saves) unless that is `NO_CELL`. Null for any other call, or none (`top`
/// null: `MEMPROF=off`), or no room.
///
/// # Safety
/// `top` is null or the body's cursor of the innermost open synchronous call
/// of this thread.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn cursor(top: *const CursorHead, first: u32) -> *mut CursorHead {
    // SAFETY: as the caller promises.
    let Some(top) = (unsafe { top.as_ref() }) else {
        return core::ptr::null_mut();
    };
    let call = top.call;
    // PERF: any call whose statements the kernel steps (its body's cursor
    // has the thread's counters), whoever entered it: a call the runtime
    // entered (a thread's first calls, which print tables) may run the
    // longest loops of the program, a test function's.
    let counters = get(&top.counters);
    if counters.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: a cursor's counters are its call's thread's.
    let record = push(unsafe { &*counters }, CURSOR_ROOM).cast::<CursorHead>();
    if !record.is_null() {
        // SAFETY: `size` fresh bytes of this thread's side stack.
        unsafe {
            record.write(CursorHead {
                call,
                cell: Cell::new(NO_CELL),
                pending: Cell::new(NO_CELL),
                counters: Cell::new(counters),
                start: Cell::new(0),
                saved: Cell::new(0),
                start_allocs: Cell::new(0),
                start_allocated: Cell::new(0),
                events: Cell::new(0),
            })
        };
        if first != NO_CELL {
            // SAFETY: just written.
            unsafe { step(record, first) };
        }
    }
    record
}

/// The end of a block whose cursor [`cursor`] made: closes its open row and
/// takes it off the side stack (returns 0). Returns 1, having done nothing,
/// for a cursor the runtime made.
///
/// # Safety
/// `cursor` is null or the innermost cursor of this thread's open
/// synchronous calls.
#[cfg_attr(memprof_kernel, allow(dead_code))]
#[inline(always)]
pub unsafe fn cursor_end(cursor: *const CursorHead) -> u32 {
    // SAFETY: as the caller promises.
    let Some(head) = (unsafe { cursor.as_ref() }) else {
        return 0;
    };
    let counters = get(&head.counters);
    if counters.is_null() {
        return 1;
    }
    // SAFETY: a cursor's counters are its call's thread's.
    let t = unsafe { &*counters };
    // Everything above the innermost cursor is gone: if [`cursor`] made it,
    // it ends at the top of the side stack. A cursor the runtime made is a
    // larger record (see `probe`), or on the heap when the side stack is
    // full.
    if (cursor as usize).wrapping_add(CURSOR_ROOM) != get(&t.stack_top) as usize {
        return 1;
    }
    if get(&head.cell) != NO_CELL {
        // SAFETY: as the caller promises.
        unsafe { step(cursor, NO_CELL) };
    }
    set(&t.stack_top, cursor as *mut u8);
    0
}
