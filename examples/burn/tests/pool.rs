//! cubecl's memory pools, the code its CUDA runtime runs, here over CPU
//! bytes (`BytesStorage`): memprof's `Pool` columns read them per line, as
//! `watch_cubecl_pool` reads the GPU's. No GPU needed. On the CPU the pools'
//! pages are heap blocks, so the heap columns see the reserve too: a line
//! that grows the pool has a heap Increment equal to its reserved growth.

use cubecl_runtime::logging::ServerLogger;
use cubecl_runtime::memory_management::{
    MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, MemoryManagementOptions,
};
use cubecl_runtime::server::IoError;
use cubecl_runtime::storage::BytesStorage;
use memprof::{PoolUsage, profile};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

const MIB: u64 = 1 << 20;

static POOLS: Mutex<Option<MemoryManagement<BytesStorage>>> = Mutex::new(None);

fn pools() -> MutexGuard<'static, Option<MemoryManagement<BytesStorage>>> {
    POOLS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A tensor's storage: a slice of one of the pools' pages, freed when the
/// handle drops.
fn reserve(bytes: u64) -> Result<cubecl_runtime::memory_management::SliceHandle, IoError> {
    pools().as_mut().expect("pools made").reserve(bytes)
}

#[profile]
fn tensors() -> Result<(), IoError> {
    let a = reserve(3 * MIB)?;
    let b = reserve(MIB)?;
    drop(a);
    let c = reserve(2 * MIB)?;
    drop((b, c));
    Ok(())
}

#[test]
fn cubecls_pools_read_per_line() {
    // As cubecl sets up a device: its default pools over a page size limit.
    *pools() = Some(MemoryManagement::from_configuration(
        BytesStorage::default(),
        &MemoryDeviceProperties {
            max_page_size: 512 * MIB,
            alignment: 32,
        },
        MemoryConfiguration::default(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::new("CPU bytes"),
    ));
    memprof::watch_pool("cubecl (CPU bytes)", || {
        let usage = pools().as_ref()?.memory_usage();
        Some(PoolUsage {
            allocated: usage.bytes_in_use,
            reserved: usage.bytes_reserved,
        })
    });
    tensors().unwrap();
    let report = memprof::report();
    let f = report.function("tensors").expect("a table");
    let row = |text: &str| f.line_containing(text).expect("a row");
    let pool = |text: &str| {
        let r = row(text);
        (
            r.pool_allocated.expect("pool figures"),
            r.pool_increment.expect("pool figures"),
            r.pool_reserved.expect("pool figures"),
        )
    };
    // Allocated: the slices' bytes, as tensors hold them; reserved: whole
    // pages, kept when the slices drop. The 3 MiB slice takes a 32 MiB
    // page, the 1 MiB one a page of another pool (8 MiB), and the 2 MiB one
    // reuses the freed room.
    assert_eq!(pool("let a ="), (3 * MIB, 3 * MIB as i64, 32 * MIB));
    assert_eq!(pool("let b ="), (4 * MIB, MIB as i64, 40 * MIB));
    assert_eq!(pool("drop(a)"), (MIB, -3 * MIB as i64, 40 * MIB));
    assert_eq!(pool("let c ="), (3 * MIB, 2 * MIB as i64, 40 * MIB));
    assert_eq!(pool("drop((b, c))"), (0, -3 * MIB as i64, 40 * MIB));
    assert_eq!(pool("fn tensors"), (0, 0, 40 * MIB));
    // On the CPU the pages are heap blocks: the heap grows by the reserve
    // (and the pools' own bookkeeping), not by the tensors' bytes.
    let heap = |text: &str| row(text).increment.expect("heap figures");
    for (text, page) in [("let a =", 32 * MIB), ("let b =", 8 * MIB)] {
        let bookkeeping = heap(text) - page as i64;
        assert!(
            (0..4096).contains(&bookkeeping),
            "{text}: {bookkeeping} B\n{f}"
        );
    }
    assert_eq!(heap("let c ="), 0, "{f}");
    assert_eq!(heap("drop((b, c))"), 0, "{f}");
}
