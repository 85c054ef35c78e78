//! GPU memory: device allocations counted as they happen (`cupti`, into the
//! `ledger`), or NVML (`nvml-wrapper`) sampled at statement boundaries.
//!
//! Counting is the default: a statement then reads counters, and its peak is
//! exact. NVML still opens first, to find and name the devices. Where CUPTI
//! cannot be had (no library, another profiler subscribed) or
//! `MEMPROF_GPU_SAMPLE=statement` asks for it, the columns come from NVML as
//! described below, with one note saying why when CUPTI failed.
//!
//! NVML is opened once, at the first profiled call or measurement. No library
//! (`libnvidia-ml.so.1` absent: the normal case without a GPU), no driver, or
//! no device: GPU sampling stays off and nothing is said, unless the user
//! asked for a device by `MEMPROF_GPU`. A device that fails later (a GPU lost
//! mid-run) prints one warning and sampling stops; the program goes on.
//!
//! NVML calls are slow (microseconds each, under a driver-wide lock), so an
//! NVML sample is taken only at a statement boundary, where it serves as
//! both the end of one statement and the start of the next: exact
//! attribution at one sample per executed statement. Sampling runs
//! untracked: NVML's and nvml-wrapper's own allocations never show in any
//! heap figure. Sections: state and opening; NVML samples and their
//! watermark; the driver's view while counting; GPU regions (what the
//! layers above call). Beside it: `nvml` (what a sample reads), `cupti`
//! and `ledger` (counting).

mod cupti;
mod cupti_ffi;
mod ledger;
mod nvml;

use crate::alloc::untracked;
use crate::config::{GpuMemory, GpuSample, GpuSelection};
use crate::gpu_rule::{self, Whose, WhyDevice};
use ledger::LEDGER;
use nvml::{Gpu, Source, WIDENED};
use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

const UNREAD: u8 = 0;
const READY: u8 = 1;
const ABSENT: u8 = 2;
const LOST: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNREAD);
static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
/// The driver's view failed while counting: set once, after one note.
static DRIVER_LOST: AtomicBool = AtomicBool::new(false);
/// Device allocations are counted (CUPTI subscribed); set once, at open.
static COUNTED: AtomicBool = AtomicBool::new(false);

/// Whether GPU sampling is on. After the first call, one relaxed load.
#[inline]
pub(crate) fn active() -> bool {
    match STATE.load(Relaxed) {
        READY => true,
        UNREAD => open_once(),
        _ => false,
    }
}

#[cold]
fn open_once() -> bool {
    let ready = untracked(|| GPU.get_or_init(open).is_some());
    // A device lost in the meantime stays lost.
    let _ = STATE.compare_exchange(UNREAD, if ready { READY } else { ABSENT }, Relaxed, Relaxed);
    STATE.load(Relaxed) == READY
}

/// The header line for tables with GPU columns, while sampling is on.
pub(crate) fn description() -> Option<&'static str> {
    if STATE.load(Relaxed) != READY {
        return None;
    }
    let gpu = GPU.get()?.as_ref()?;
    // Counted columns are CUPTI's, whatever NVML's view shows now.
    Some(if WIDENED.load(Relaxed) && !counted() {
        gpu.widened_description.as_str()
    } else {
        gpu.description.as_str()
    })
}

fn open() -> Option<Gpu> {
    let config = crate::settings::get();
    let explicit = match config.gpu {
        GpuSelection::Off => return None,
        GpuSelection::Auto => false,
        GpuSelection::Index(_) | GpuSelection::All => true,
    };
    let note = |why: &str| {
        if explicit {
            crate::stdio::warning!("memprof: no GPU columns: {why}");
        }
    };
    let mut builder = Nvml::builder();
    if let Some(path) = &config.nvml_lib {
        builder.lib_path(path.as_os_str());
    }
    let nvml = match builder.init() {
        Ok(nvml) => nvml,
        Err(NvmlError::LibloadingError(err)) => {
            note(&format!("cannot load NVML ({err})"));
            return None;
        }
        Err(err) => {
            note(&format!("NVML did not start ({err})"));
            return None;
        }
    };
    // NOTE: NVML stays open for the life of the process; devices borrow it.
    let nvml: &'static Nvml = Box::leak(Box::new(nvml));
    let count = match nvml.device_count() {
        Ok(0) => {
            note("NVML shows no device");
            return None;
        }
        Ok(count) => count,
        Err(err) => {
            note(&format!("NVML cannot count devices ({err})"));
            return None;
        }
    };
    let indices: Vec<u32> = match config.gpu {
        GpuSelection::Index(index) if index < count => vec![index],
        GpuSelection::Index(index) => {
            crate::stdio::warning!(
                "memprof: ignoring MEMPROF_GPU={index}: NVML shows {count} device(s), \
                 numbered from 0; using all of them"
            );
            (0..count).collect()
        }
        _ => (0..count).collect(),
    };
    let mut devices = Vec::with_capacity(indices.len());
    let mut names = Vec::with_capacity(indices.len());
    for &index in &indices {
        match nvml.device_by_index(index) {
            Ok(device) => {
                let name = device.name().unwrap_or_else(|_| "unnamed".to_owned());
                names.push(format!("{index} ({name})"));
                devices.push(device);
            }
            Err(err) => {
                note(&format!("NVML cannot open device {index} ({err})"));
                return None;
            }
        }
    }
    let asked = match config.gpu_memory {
        GpuMemory::Auto => gpu_rule::Asked::Auto,
        GpuMemory::Process => gpu_rule::Asked::Process,
        GpuMemory::Device => gpu_rule::Asked::Device,
    };
    let whose = gpu_rule::at_start(asked, gpu_rule::pids_match_nvml());
    let source = match whose {
        Whose::Process => Source::Process,
        Whose::Device(_) => Source::Device,
    };
    let plural = if names.len() == 1 {
        "device"
    } else {
        "devices"
    };
    let names = names.join(", ");
    let devices_description = |why: WhyDevice| {
        format!(
            "GPU: memory used on {plural} {names}, all processes ({})",
            why.words()
        )
    };
    let description = match whose {
        Whose::Process => format!("GPU: this process's memory on {plural} {names}"),
        Whose::Device(why) => devices_description(why),
    };
    let widened_description = devices_description(WhyDevice::Unlisted);
    let mut gpu = Gpu {
        nvml,
        devices,
        source,
        pid: std::process::id(),
        description,
        widened_description,
        baseline: None,
        driver_description: None,
        driver_widened_description: None,
    };
    if source == Source::Process {
        gpu.baseline = gpu.device_used().ok();
    }
    if config.gpu_sample == GpuSample::Allocations {
        match cupti::subscribe(config.cupti_lib.as_deref()) {
            Ok(()) => {
                // NOTE: NVML numbers devices by PCI bus, CUDA by speed
                // unless CUDA_DEVICE_ORDER=PCI_BUS_ID: with one device, or
                // all of them (the default), the two agree.
                LEDGER.select(indices);
                COUNTED.store(true, Relaxed);
                // NVML stays for the driver's view, read at call entry and
                // exit: its header line moves to that view.
                let nvml_view = std::mem::replace(
                    &mut gpu.description,
                    format!("GPU: device allocations counted (CUPTI) on {plural} {names}"),
                );
                gpu.driver_description = Some(nvml_view.replacen("GPU:", "GPU driver view:", 1));
                gpu.driver_widened_description = Some(gpu.widened_description.replacen(
                    "GPU:",
                    "GPU driver view:",
                    1,
                ));
            }
            Err(why) => crate::stdio::warning!(
                "memprof: GPU columns sampled from NVML at each call's entry and exit, \
                 for its row alone (MEMPROF_GPU_SAMPLE=statement samples every line, at \
                 microseconds a statement): {why}"
            ),
        }
    }
    // A device that answers nothing now is no better than none.
    match gpu.read() {
        Ok(_) => Some(gpu),
        Err(err) => {
            note(&format!("NVML cannot read GPU memory ({err})"));
            None
        }
    }
}

thread_local! {
    /// Highest sample taken on this thread since the innermost open
    /// measurement started; `i64::MIN` when none is open.
    static HIGH: Cell<i64> = const { Cell::new(i64::MIN) };
}

/// Whether device allocations are counted (CUPTI) rather than sampled.
#[inline]
pub(crate) fn counted() -> bool {
    COUNTED.load(Relaxed)
}

/// Whether statements get GPU figures: always when counting (a few loads
/// a statement); from NVML only where `MEMPROF_GPU_SAMPLE=statement` asks,
/// as an NVML read takes microseconds (27 µs on an H100) and a hot loop
/// would run thousands of times slower. Otherwise NVML is read at each
/// call's entry and exit, for its row alone.
#[inline]
pub(crate) fn per_statement() -> bool {
    counted() || crate::settings::get().gpu_sample == GpuSample::Statement
}

/// GPU bytes now, or `None` when sampling is off or the device failed:
/// this thread's counted bytes when counting, else an NVML sample.
pub(crate) fn sample() -> Option<i64> {
    if STATE.load(Relaxed) != READY {
        return None;
    }
    if counted() {
        return Some(ledger::thread_net());
    }
    let gpu = GPU.get()?.as_ref()?;
    match untracked(|| gpu.read()) {
        Ok(bytes) => {
            let bytes = bytes.min(i64::MAX as u64) as i64;
            let _ = HIGH.try_with(|h| h.set(h.get().max(bytes)));
            Some(bytes)
        }
        Err(err) => {
            lose(err);
            None
        }
    }
}

#[cold]
fn lose(err: NvmlError) {
    if STATE.swap(LOST, Relaxed) == READY {
        untracked(|| {
            crate::stdio::warning!(
                "memprof: GPU sampling stopped, NVML failed: {err}; tables go on without GPU columns"
            );
        });
    }
}

/// Starts watching the highest sample on this thread from `start`; returns
/// what to pass to [`watch_end`].
pub(crate) fn watch_begin(start: i64) -> i64 {
    HIGH.try_with(|h| h.replace(start)).unwrap_or(i64::MIN)
}

/// Ends a watch: the highest sample since [`watch_begin`], with the
/// enclosing watch's own high restored (and raised by this one's).
pub(crate) fn watch_end(saved: i64) -> i64 {
    HIGH.try_with(|h| {
        let high = h.get();
        h.set(if saved == i64::MIN {
            i64::MIN
        } else {
            saved.max(high)
        });
        high
    })
    .unwrap_or(i64::MIN)
}

/// The driver's view (NVML) now, while counting, for call entries and exits
/// and `measure`: `None` when not counting (NVML's figures are then the
/// columns themselves) or when NVML fails, which stops only this view.
pub(crate) fn driver() -> Option<i64> {
    if !counted() || STATE.load(Relaxed) != READY || DRIVER_LOST.load(Relaxed) {
        return None;
    }
    let gpu = GPU.get()?.as_ref()?;
    match untracked(|| gpu.read()) {
        Ok(bytes) => Some(bytes.min(i64::MAX as u64) as i64),
        Err(err) => {
            if !DRIVER_LOST.swap(true, Relaxed) {
                untracked(|| {
                    crate::stdio::warning!("memprof: GPU driver view stopped, NVML failed: {err}");
                });
            }
            None
        }
    }
}

/// What [`driver`] reads, as a header line; `None` when not counting.
pub(crate) fn driver_description() -> Option<&'static str> {
    if !counted() || DRIVER_LOST.load(Relaxed) {
        return None;
    }
    let gpu = GPU.get()?.as_ref()?;
    match WIDENED.load(Relaxed) {
        true => gpu.driver_widened_description.as_deref(),
        false => gpu.driver_description.as_deref(),
    }
}

/// Where an open GPU region started: see [`begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuMark {
    start: i64,
    /// The enclosing region's watermark, restored at the close.
    saved: i64,
    /// Counts every thread's allocations (`scope = "process"`).
    process: bool,
    /// NVML: taken after the figures became the devices'; a region that
    /// straddles the change has no figures.
    widened: bool,
}

/// One closed GPU region's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuFigures {
    /// Bytes after minus before.
    pub(crate) increment: i64,
    /// Bytes after.
    pub(crate) usage: i64,
    /// Highest rise above the start: exact when counting, from samples
    /// otherwise.
    pub(crate) peak: u64,
}

/// Opens a GPU region, or `None` when the GPU is not watched. `process`:
/// count every thread's device allocations, not the calling thread's
/// (counting only; NVML's samples are process-wide anyway).
#[inline]
pub(crate) fn begin(process: bool) -> Option<GpuMark> {
    if counted() {
        let (start, saved) = if process {
            LEDGER.open_process()
        } else {
            ledger::open_thread()
        };
        return Some(GpuMark {
            start,
            saved,
            process,
            widened: false,
        });
    }
    let start = sample()?;
    Some(GpuMark {
        start,
        saved: watch_begin(start),
        process,
        widened: WIDENED.load(Relaxed),
    })
}

/// Closes a region that [`begin`] opened; `None` if the device failed since.
#[inline]
pub(crate) fn end(mark: GpuMark) -> Option<GpuFigures> {
    let (end, high) = if counted() {
        if !mark.process {
            let (increment, usage, peak) = ledger::close_thread(mark.start, mark.saved);
            return Some(GpuFigures {
                increment,
                usage,
                peak,
            });
        }
        LEDGER.close_process(mark.saved)
    } else {
        let end = sample();
        let high = watch_end(mark.saved);
        let end = end.filter(|_| mark.widened == WIDENED.load(Relaxed))?;
        (end, high.max(end))
    };
    Some(GpuFigures {
        increment: end - mark.start,
        usage: end,
        peak: (high - mark.start).max(0) as u64,
    })
}

/// Closes `mark`'s region, if any, and opens the next: one NVML sample
/// serves as the end of one and the start of the other.
#[inline]
pub(crate) fn step(mark: Option<GpuMark>, process: bool) -> (Option<GpuFigures>, Option<GpuMark>) {
    if counted() {
        return (mark.and_then(end), begin(process));
    }
    let now = sample();
    let widened = WIDENED.load(Relaxed);
    let figures = mark.and_then(|mark| {
        let high = watch_end(mark.saved);
        let end = now.filter(|_| mark.widened == widened)?;
        Some(GpuFigures {
            increment: end - mark.start,
            usage: end,
            peak: (high.max(end) - mark.start).max(0) as u64,
        })
    });
    let next = now.map(|start| GpuMark {
        start,
        saved: watch_begin(start),
        process,
        widened,
    });
    (figures, next)
}
