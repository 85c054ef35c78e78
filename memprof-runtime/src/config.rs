//! Configuration as a value: `Config`, built from `MEMPROF_*` variables by
//! `Config::from_vars`, which unit tests call with variables of their own.
//! The process's own configuration is read once by `settings`.
//!
//! A malformed value yields one warning naming the variable and the accepted
//! values, and the default is used.

use crate::units::{SIZE_HELP, parse_size, unit_bytes};
use std::ffi::OsString;
use std::path::PathBuf;

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
}

impl Default for RenderSettings {
    fn default() -> Self {
        RenderSettings {
            unit: None,
            precision: 1,
            min_increment: None,
            allocs: false,
            allocated: false,
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
    pub(crate) report: ReportMode,
    pub(crate) render: RenderSettings,
    pub(crate) output: Output,
    /// Where to write `report().to_json()` at exit (`MEMPROF_JSON`).
    pub(crate) json: Option<PathBuf>,
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
    let report = vars
        .parse("MEMPROF_REPORT", "auto, call, exit or off", |v| {
            match v.to_ascii_lowercase().as_str() {
                "auto" => Some(ReportMode::Auto),
                "call" => Some(ReportMode::Call),
                "exit" => Some(ReportMode::Exit),
                "off" => Some(ReportMode::Off),
                _ => None,
            }
        })
        .unwrap_or(ReportMode::Auto);
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
    let snapshot_every = vars.parse(
        "MEMPROF_SNAPSHOT_EVERY",
        "a whole number of seconds, minutes or hours of at least 1s, such as 30s, 10m or 1h",
        crate::units::parse_every,
    );
    Config {
        enabled,
        report,
        render: RenderSettings {
            unit,
            precision,
            min_increment,
            allocs,
            allocated,
        },
        output,
        json,
        gpu,
        gpu_memory,
        gpu_sample,
        cupti_lib,
        nvml_lib,
        live,
        snapshot_every,
        test_binary: false,
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
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> (Config, Vec<String>) {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        from_os(pairs)
    }

    fn from_os(pairs: Vec<(String, OsString)>) -> (Config, Vec<String>) {
        Config::from_vars(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_warns_and_keeps_the_default() {
        use std::os::unix::ffi::OsStringExt;
        for name in ["MEMPROF_REPORT", "MEMPROF_OUTPUT", "MEMPROF_UNIT"] {
            let raw = OsString::from_vec(b"ca\xffll".to_vec());
            let (config, warnings) = from_os(vec![(name.to_owned(), raw)]);
            assert_eq!(config, Config::default(), "{name}");
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].starts_with(&format!(
                    "memprof: ignoring {name}=\"ca\u{fffd}ll\": not valid UTF-8, expected "
                )),
                "{warnings:?}"
            );
        }
    }

    #[test]
    fn no_variables_give_the_defaults() {
        let (config, warnings) = from(&[]);
        assert!(warnings.is_empty());
        assert!(config.enabled);
        assert_eq!(config.report, ReportMode::Auto);
        assert_eq!(config.render, RenderSettings::default());
        assert_eq!(config.output, Output::Stdout);
        assert_eq!(config.json, None);
        assert_eq!(config.gpu, GpuSelection::Auto);
        assert_eq!(config.gpu_memory, GpuMemory::Auto);
        assert_eq!(config.gpu_sample, GpuSample::Allocations);
        assert_eq!(config, Config::default());
    }

    #[test]
    fn each_variable_sets_its_field() {
        let (config, warnings) = from(&[
            ("MEMPROF", "OFF"),
            ("MEMPROF_REPORT", "exit"),
            ("MEMPROF_UNIT", "kib"),
            ("MEMPROF_PRECISION", " 3 "),
            ("MEMPROF_MIN_INCREMENT", "2 KiB"),
            ("MEMPROF_COLUMNS", "Allocs, allocated"),
            ("MEMPROF_OUTPUT", "stderr"),
            ("MEMPROF_JSON", "out.json"),
            ("MEMPROF_GPU", "1"),
            ("MEMPROF_GPU_MEMORY", "device"),
            ("MEMPROF_NVML_LIB", "/opt/nvml.so"),
            ("MEMPROF_GPU_SAMPLE", "statement"),
            ("MEMPROF_CUPTI_LIB", "/opt/libcupti.so"),
        ]);
        assert_eq!(warnings, Vec::<String>::new());
        assert!(!config.enabled);
        assert_eq!(config.report, ReportMode::Exit);
        assert_eq!(
            config.render,
            RenderSettings {
                unit: Some(Unit::KiB),
                precision: 3,
                min_increment: Some(2048),
                allocs: true,
                allocated: true,
            }
        );
        assert_eq!(config.output, Output::Stderr);
        assert_eq!(config.json, Some(PathBuf::from("out.json")));
        assert_eq!(config.gpu, GpuSelection::Index(1));
        assert_eq!(config.gpu_memory, GpuMemory::Device);
        assert_eq!(config.nvml_lib, Some(PathBuf::from("/opt/nvml.so")));
        assert_eq!(config.gpu_sample, GpuSample::Statement);
        assert_eq!(config.cupti_lib, Some(PathBuf::from("/opt/libcupti.so")));
        let (config, _) = from(&[("MEMPROF_OUTPUT", "memprof.txt")]);
        assert_eq!(config.output, Output::File(PathBuf::from("memprof.txt")));
    }

    #[test]
    fn memprof_takes_the_usual_words_for_on_and_off() {
        for on in ["on", "1", "true", "yes", "YES", " Yes "] {
            let (config, warnings) = from(&[("MEMPROF", on)]);
            assert_eq!((config.enabled, warnings), (true, vec![]), "{on:?}");
        }
        for off in ["off", "0", "false", "no", "No"] {
            let (config, warnings) = from(&[("MEMPROF", off)]);
            assert_eq!((config.enabled, warnings), (false, vec![]), "{off:?}");
        }
        let (config, warnings) = from(&[("MEMPROF", "maybe")]);
        assert!(config.enabled);
        assert_eq!(
            warnings,
            ["memprof: ignoring MEMPROF=\"maybe\": expected on or off; using the default"]
        );
    }

    #[test]
    fn test_binaries_are_known_by_cargo_s_layout() {
        let test = |path: &str| is_test_binary(std::path::Path::new(path));
        // `cargo test` and `cargo bench` targets, unit tests of a binary too.
        assert!(test("/w/target/debug/deps/output-3f2a9c0d1e4b5a67"));
        assert!(test("/w/target/release/deps/my_app-0123456789abcdef"));
        assert!(test(r"deps/output-3f2a9c0d1e4b5a67.exe"));
        // `cargo run`, `cargo run --example`, anything else.
        assert!(!test("/w/target/debug/my_app"));
        assert!(!test("/w/target/debug/examples/quickstart"));
        assert!(!test(
            "/w/target/debug/deps/libmemprof-3f2a9c0d1e4b5a67.so.x"
        ));
        assert!(!test("/w/target/debug/deps/output-3f2a9c0d"));
        assert!(!test("/w/target/debug/deps/output-3f2a9c0d1e4b5a6z"));
        assert!(!test("/usr/bin/my-app-0123456789abcdef"));
    }

    #[test]
    fn memprof_unit_takes_the_units_sizes_take() {
        for (value, unit) in [
            ("B", Unit::B),
            ("b", Unit::B),
            ("KB", Unit::KiB),
            ("KiB", Unit::KiB),
            ("kib", Unit::KiB),
            ("MB", Unit::MiB),
            ("mb", Unit::MiB),
            ("MiB", Unit::MiB),
            (" MiB ", Unit::MiB),
            ("GB", Unit::GiB),
            ("GiB", Unit::GiB),
        ] {
            let (config, warnings) = from(&[("MEMPROF_UNIT", value)]);
            assert_eq!(warnings, Vec::<String>::new(), "{value:?}");
            assert_eq!(config.render.unit, Some(unit), "{value:?}");
        }
        // The same word means the same bytes in a size.
        assert_eq!(parse_size("1 MB"), Ok(Unit::MiB.size() as u64));
    }

    #[test]
    fn memprof_unit_rejects_what_sizes_reject() {
        for value in ["", "K", "M", "TB", "MiBs", "1 MiB", "bytes"] {
            let (config, warnings) = from(&[("MEMPROF_UNIT", value)]);
            assert_eq!(config.render.unit, None, "{value:?}");
            assert_eq!(
                warnings,
                [format!(
                    "memprof: ignoring MEMPROF_UNIT={:?}: expected B, KB, MB, GB, KiB, MiB or GiB \
                     (binary: MB = MiB); using the default",
                    value.trim()
                )],
            );
        }
    }

    #[test]
    fn a_malformed_value_warns_once_and_keeps_the_default() {
        let (config, warnings) =
            from(&[("MEMPROF_REPORT", "sometimes"), ("MEMPROF_PRECISION", "9")]);
        assert_eq!(config.report, ReportMode::Auto);
        assert_eq!(config.render.precision, 1);
        assert_eq!(
            warnings,
            [
                "memprof: ignoring MEMPROF_REPORT=\"sometimes\": expected auto, call, exit or off; using the default",
                "memprof: ignoring MEMPROF_PRECISION=\"9\": expected an integer from 0 to 6; using the default",
            ]
        );
    }

    #[test]
    fn live_and_snapshot_every_are_off_unless_set_and_malformed_ones_warn() {
        let (config, _) = from(&[]);
        assert_eq!((config.live, config.snapshot_every), (false, None));
        let (config, warnings) = from(&[("MEMPROF_LIVE", "1"), ("MEMPROF_SNAPSHOT_EVERY", "10m")]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(config.live);
        assert_eq!(
            config.snapshot_every,
            Some(std::time::Duration::from_secs(600))
        );
        for bad in ["0s", "10", "1.5h", "-1m", "10 parsecs"] {
            let (config, warnings) = from(&[("MEMPROF_SNAPSHOT_EVERY", bad)]);
            assert_eq!(config.snapshot_every, None, "{bad}");
            assert_eq!(warnings.len(), 1, "{bad}: {warnings:?}");
        }
        let (config, warnings) = from(&[("MEMPROF_LIVE", "maybe")]);
        assert!(!config.live);
        assert_eq!(warnings.len(), 1);
    }
}
