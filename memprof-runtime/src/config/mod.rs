//! Configuration as a value: `Config`, built from `MEMPROF_*` variables by
//! `Config::from_vars`, which unit tests call with variables of their own.
//! The process's own configuration is read once by `settings`.
//!
//! A malformed value yields one warning naming the variable and the accepted
//! values, and the default is used.

use crate::units::{SIZE_HELP, parse_size, unit_bytes};
use std::ffi::OsString;
use std::path::PathBuf;

/// How sites are recorded (`MEMPROF_SITES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SitesMode {
    Off,
    /// Every allocation's stack.
    All,
    /// A sample, one per this many bytes allocated on average.
    Sample(u64),
}

/// What `MEMPROF_SITES_TOP` defaults to: sites shown per line.
pub(crate) const DEFAULT_SITES_TOP: usize = 3;
/// What `MEMPROF_SITES=sample` samples: one per 32 KiB allocated on
/// average. A site's estimate then errs by about sqrt(32 KiB / its bytes)
/// (one standard deviation): 3 % at 32 MiB, 10 % at 3.2 MiB.
pub(crate) const DEFAULT_SITES_SAMPLE_MEAN: u64 = 32 << 10;
/// The seed of sampling unless `MEMPROF_SITES_SEED` sets one.
pub(crate) const DEFAULT_SITES_SEED: u64 = 0x6d65_6d70_726f_6621;

/// When tables are printed (`MEMPROF_REPORT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportMode {
    /// Default: a table after each of the first calls of a function, then one
    /// aggregated table at exit for functions called more often.
    Auto,
    /// A table after every outermost call.
    Call,
    /// One aggregated table per function at exit.
    Exit,
    /// Nothing is printed; use `memprof::report()`.
    Off,
}

/// The accepted `MEMPROF_UNIT` values, for its warning.
const UNIT_HELP: &str = "B, KB, MB, GB, KiB, MiB or GiB (binary: MB = MiB)";

/// A fixed unit for byte figures (`MEMPROF_UNIT`), named as sizes name
/// units: `KB`, `MB` and `GB` are `KiB`, `MiB` and `GiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    B,
    /// 2^10 bytes.
    KiB,
    /// 2^20 bytes.
    MiB,
    /// 2^30 bytes.
    GiB,
}

impl Unit {
    pub(crate) fn size(self) -> f64 {
        match self {
            Unit::B => 1.0,
            Unit::KiB => 1024.0,
            Unit::MiB => 1024.0 * 1024.0,
            Unit::GiB => 1024.0 * 1024.0 * 1024.0,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::B => "B",
            Unit::KiB => "KiB",
            Unit::MiB => "MiB",
            Unit::GiB => "GiB",
        }
    }
}

/// How byte figures are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderSettings {
    /// `None`: the largest binary unit that keeps the figure at least 1.
    pub unit: Option<Unit>,
    /// Digits after the point for units above bytes.
    pub precision: usize,
    /// Tables show only statement rows whose increment (either sign) or peak
    /// reaches this many bytes, and the `fn` row (`MEMPROF_MIN_INCREMENT`).
    pub min_increment: Option<u64>,
    /// Tables have an `Allocs` column: allocations per line
    /// (`MEMPROF_COLUMNS=allocs`). The counts are in reports and JSON
    /// either way.
    pub allocs: bool,
    /// Tables have an `Allocated` column: bytes allocated per line, freed
    /// or not (`MEMPROF_COLUMNS=allocated`). In reports and JSON either way.
    pub allocated: bool,
    /// Allocation sites shown per line under a table, where sites are
    /// recorded (`MEMPROF_SITES_TOP`). All are in reports and JSON.
    pub sites_top: usize,
}

impl Default for RenderSettings {
    fn default() -> Self {
        RenderSettings {
            unit: None,
            precision: 1,
            min_increment: None,
            allocs: false,
            allocated: false,
            sites_top: DEFAULT_SITES_TOP,
        }
    }
}

/// Where printed output goes (`MEMPROF_OUTPUT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Standard output (in a test binary through `print!`, so that libtest
    /// captures it). A failed write stops memprof's printing.
    Stdout,
    /// Standard error.
    Stderr,
    /// A file, created (or emptied) when memprof first writes to it.
    File(PathBuf),
}

/// Which GPUs are sampled (`MEMPROF_GPU`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpuSelection {
    /// Every device NVML shows, if any; silent when there is none.
    Auto,
    /// No GPU sampling.
    Off,
    /// One device, by NVML index.
    Index(u32),
    /// Every device, summed; a note when there is none.
    All,
}

/// How the per-line GPU columns are taken (`MEMPROF_GPU_SAMPLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpuSample {
    /// Device allocations counted as they happen (CUPTI), NVML's view read
    /// at call entry and exit; NVML at each statement where CUPTI is
    /// missing.
    Allocations,
    /// NVML read at each statement boundary: the driver's view per line.
    Statement,
}

/// What the GPU columns count (`MEMPROF_GPU_MEMORY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpuMemory {
    /// This process's memory where NVML's PIDs are ours, else the device's.
    Auto,
    /// This process's memory, as NVML lists it for our PID.
    Process,
    /// The device's used memory, all processes together (what
    /// `nvidia-smi --query-gpu=memory.used` shows).
    Device,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    /// `MEMPROF=off` turns `#[profile]` into a near no-op: no figures, no
    /// tables, no budgets.
    pub(crate) enabled: bool,
    /// `MEMPROF_QUIET=off`: every call takes its rows; none goes quiet
    /// (`kernel::quiet`).
    pub(crate) quiet: bool,
    pub(crate) report: ReportMode,
    pub(crate) render: RenderSettings,
    pub(crate) output: Output,
    /// Where to write `report().to_json()` at exit (`MEMPROF_JSON`).
    pub(crate) json: Option<PathBuf>,
    /// Where to write the heap profile in pprof's format at exit
    /// (`MEMPROF_PPROF`; see `pprof`).
    pub(crate) pprof: Option<PathBuf>,
    pub(crate) gpu: GpuSelection,
    pub(crate) gpu_memory: GpuMemory,
    pub(crate) gpu_sample: GpuSample,
    /// Where to load CUPTI from instead of the usual sonames
    /// (`MEMPROF_CUPTI_LIB`).
    pub(crate) cupti_lib: Option<PathBuf>,
    /// Where to load NVML from instead of `libnvidia-ml.so.1`
    /// (`MEMPROF_NVML_LIB`).
    pub(crate) nvml_lib: Option<PathBuf>,
    /// Listen for `mprof snapshot` and `mprof top` on a socket of the
    /// user's own (`MEMPROF_LIVE`; see `live`).
    pub(crate) live: bool,
    /// Write a numbered snapshot of the report this often
    /// (`MEMPROF_SNAPSHOT_EVERY`).
    pub(crate) snapshot_every: Option<std::time::Duration>,
    /// Allocation sites per line (`MEMPROF_SITES`) and the sampling seed
    /// (`MEMPROF_SITES_SEED`).
    pub(crate) sites: SitesMode,
    pub(crate) sites_seed: u64,
    /// The program is a test binary (see [`is_test_binary`]): under `auto`,
    /// no tables at exit, where libtest cannot capture them.
    pub(crate) test_binary: bool,
}

/// Whether `exe` is a test binary as cargo builds them: `<name>-<hash>` in a
/// `deps` folder, `<hash>` being 16 hex digits. `cargo test`, `cargo
/// nextest` and `cargo bench` run these; `cargo run` runs the copy cargo
/// puts beside `deps`, named `<name>`. (`cfg(test)` cannot tell: it is set
/// in the crate under test only, not in memprof, nor in the library an
/// integration test calls.)
pub(crate) fn is_test_binary(exe: &std::path::Path) -> bool {
    let in_deps = exe
        .parent()
        .and_then(|dir| dir.file_name())
        .is_some_and(|dir| dir == "deps");
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.strip_suffix(".exe").unwrap_or(name);
    let hashed = stem.rsplit_once('-').is_some_and(|(name, hash)| {
        !name.is_empty() && hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())
    });
    in_deps && hashed
}

impl Default for Config {
    fn default() -> Self {
        Config::from_vars(|_| None).0
    }
}

impl Config {
    /// The configuration that the variables `var` returns describe, and one
    /// warning for each malformed value (whose default is used instead),
    /// a value that is not UTF-8 included.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> (Config, Vec<String>) {
        let mut vars = Vars {
            var: &var,
            warnings: Vec::new(),
        };
        let config = load(&mut vars);
        (config, vars.warnings)
    }
}

/// The variables being read, and the warnings so far.
struct Vars<'a> {
    var: &'a dyn Fn(&str) -> Option<OsString>,
    warnings: Vec<String>,
}

impl Vars<'_> {
    /// Reads `name`; `None` when unset or malformed (with a warning).
    fn parse<T>(
        &mut self,
        name: &str,
        accepted: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let value = match (self.var)(name)?.into_string() {
            Ok(value) => value,
            Err(raw) => {
                self.warnings.push(format!(
                    "memprof: ignoring {name}={:?}: not valid UTF-8, expected {accepted}; \
                     using the default",
                    raw.to_string_lossy()
                ));
                return None;
            }
        };
        let value = value.trim();
        let parsed = f(value);
        if parsed.is_none() {
            self.warnings.push(format!(
                "memprof: ignoring {name}={value:?}: expected {accepted}; using the default"
            ));
        }
        parsed
    }
}

fn load(vars: &mut Vars<'_>) -> Config {
    let enabled = vars
        .parse("MEMPROF", "on or off", on_or_off)
        .unwrap_or(true);
    let quiet = vars
        .parse("MEMPROF_QUIET", "on or off", on_or_off)
        .unwrap_or(true);
    let report = vars.parse("MEMPROF_REPORT", "auto, call, exit or off", |v| {
        match v.to_ascii_lowercase().as_str() {
            "auto" => Some(ReportMode::Auto),
            "call" => Some(ReportMode::Call),
            "exit" => Some(ReportMode::Exit),
            "off" => Some(ReportMode::Off),
            _ => None,
        }
    });
    let unit = vars.parse("MEMPROF_UNIT", UNIT_HELP, |v| {
        // The units that sizes take, so that `MB` means here what it means
        // in `MEMPROF_MIN_INCREMENT=2MB` and `limit = "2 MB"`.
        match unit_bytes(v)? {
            1 => Some(Unit::B),
            0x400 => Some(Unit::KiB),
            0x10_0000 => Some(Unit::MiB),
            0x4000_0000 => Some(Unit::GiB),
            _ => None,
        }
    });
    let precision = vars
        .parse("MEMPROF_PRECISION", "an integer from 0 to 6", |v| {
            v.parse::<usize>().ok().filter(|p| *p <= 6)
        })
        .unwrap_or(1);
    let min_increment = vars.parse("MEMPROF_MIN_INCREMENT", SIZE_HELP, |v| parse_size(v).ok());
    let (allocs, allocated) = vars
        .parse(
            "MEMPROF_COLUMNS",
            "allocs, allocated, both separated by a comma, or nothing",
            |v| {
                let mut columns = (false, false);
                for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    match name.to_ascii_lowercase().as_str() {
                        "allocs" => columns.0 = true,
                        "allocated" => columns.1 = true,
                        _ => return None,
                    }
                }
                Some(columns)
            },
        )
        .unwrap_or((false, false));
    let output = vars
        .parse(
            "MEMPROF_OUTPUT",
            "stdout, stderr or a file path",
            |v| match v {
                "" => None,
                "stdout" => Some(Output::Stdout),
                "stderr" => Some(Output::Stderr),
                path => Some(Output::File(PathBuf::from(path))),
            },
        )
        .unwrap_or(Output::Stdout);
    let json = vars.parse("MEMPROF_JSON", "a file path", |v| {
        (!v.is_empty()).then(|| PathBuf::from(v))
    });
    let pprof = vars.parse("MEMPROF_PPROF", "a file path", |v| {
        (!v.is_empty()).then(|| PathBuf::from(v))
    });
    let gpu = vars
        .parse(
            "MEMPROF_GPU",
            "auto, off, all or a device index",
            |v| match v.to_ascii_lowercase().as_str() {
                "auto" => Some(GpuSelection::Auto),
                "off" => Some(GpuSelection::Off),
                "all" => Some(GpuSelection::All),
                index => index.parse().ok().map(GpuSelection::Index),
            },
        )
        .unwrap_or(GpuSelection::Auto);
    let gpu_memory = vars
        .parse("MEMPROF_GPU_MEMORY", "auto, process or device", |v| match v
            .to_ascii_lowercase()
            .as_str()
        {
            "auto" => Some(GpuMemory::Auto),
            "process" => Some(GpuMemory::Process),
            "device" => Some(GpuMemory::Device),
            _ => None,
        })
        .unwrap_or(GpuMemory::Auto);
    let gpu_sample = vars
        .parse("MEMPROF_GPU_SAMPLE", "alloc or statement", |v| {
            match v.trim().to_ascii_lowercase().as_str() {
                "alloc" | "allocations" => Some(GpuSample::Allocations),
                "statement" => Some(GpuSample::Statement),
                _ => None,
            }
        })
        .unwrap_or(GpuSample::Allocations);
    let nvml_lib = vars.parse("MEMPROF_NVML_LIB", "a file path", |v| {
        (!v.is_empty()).then(|| PathBuf::from(v))
    });
    let cupti_lib = vars.parse("MEMPROF_CUPTI_LIB", "a file path", |v| {
        (!v.is_empty()).then(|| PathBuf::from(v))
    });
    let live = vars
        .parse("MEMPROF_LIVE", "1 or 0 (on or off)", on_or_off)
        .unwrap_or(false);
    // A service watched live prints its tables once, at exit, not after the
    // first calls of each of its handlers among its own output.
    let report = report.unwrap_or(match live {
        true => ReportMode::Exit,
        false => ReportMode::Auto,
    });
    let snapshot_every = vars.parse(
        "MEMPROF_SNAPSHOT_EVERY",
        "a whole number of seconds, minutes or hours of at least 1s, such as 30s, 10m or 1h",
        crate::units::parse_every,
    );
    let sites = vars
        .parse(
            "MEMPROF_SITES",
            "1 (every allocation), sample, sample:<size> (one per that many bytes on average) or 0",
            parse_sites,
        )
        .unwrap_or(SitesMode::Off);
    let sites_top = vars
        .parse("MEMPROF_SITES_TOP", "a whole number of at least 1", |v| {
            v.parse::<usize>().ok().filter(|n| *n >= 1)
        })
        .unwrap_or(DEFAULT_SITES_TOP);
    let sites_seed = vars
        .parse("MEMPROF_SITES_SEED", "a whole number", |v| {
            v.parse::<u64>().ok()
        })
        .unwrap_or(DEFAULT_SITES_SEED);
    Config {
        enabled,
        quiet,
        report,
        render: RenderSettings {
            unit,
            precision,
            min_increment,
            allocs,
            allocated,
            sites_top,
        },
        output,
        json,
        pprof,
        gpu,
        gpu_memory,
        gpu_sample,
        cupti_lib,
        nvml_lib,
        live,
        snapshot_every,
        sites,
        sites_seed,
        test_binary: false,
    }
}

pub(crate) fn parse_sites(v: &str) -> Option<SitesMode> {
    let lower = v.to_ascii_lowercase();
    if lower == "sample" {
        return Some(SitesMode::Sample(DEFAULT_SITES_SAMPLE_MEAN));
    }
    if let Some(size) = lower.strip_prefix("sample:") {
        return parse_size(size)
            .ok()
            .filter(|n| *n >= 1)
            .map(SitesMode::Sample);
    }
    match lower.as_str() {
        "all" => Some(SitesMode::All),
        other => on_or_off(other).map(|on| if on { SitesMode::All } else { SitesMode::Off }),
    }
}

fn on_or_off(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => Some(true),
        "off" | "0" | "false" | "no" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
