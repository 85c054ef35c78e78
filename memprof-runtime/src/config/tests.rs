//! The configuration read from variables, warnings included.
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
    assert_eq!(config.pprof, None);
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
        ("MEMPROF_PPROF", "heap.pb.gz"),
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
            sites_top: 3,
        }
    );
    assert_eq!(config.output, Output::Stderr);
    assert_eq!(config.json, Some(PathBuf::from("out.json")));
    assert_eq!(config.pprof, Some(PathBuf::from("heap.pb.gz")));
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
    let (config, warnings) = from(&[("MEMPROF_REPORT", "sometimes"), ("MEMPROF_PRECISION", "9")]);
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

/// A service run with `MEMPROF_LIVE=1` flooded its stdout with the tables
/// of each handler's first calls: it prints them at exit unless asked.
#[test]
fn live_makes_exit_the_default_report_mode() {
    assert_eq!(from(&[]).0.report, ReportMode::Auto);
    assert_eq!(from(&[("MEMPROF_LIVE", "1")]).0.report, ReportMode::Exit);
    for (asked, mode) in [("auto", ReportMode::Auto), ("off", ReportMode::Off)] {
        let (config, _) = from(&[("MEMPROF_LIVE", "1"), ("MEMPROF_REPORT", asked)]);
        assert_eq!(config.report, mode, "{asked}");
    }
}

#[test]
fn sites_take_on_off_sample_and_a_sampling_mean() {
    use super::{DEFAULT_SITES_SAMPLE_MEAN, SitesMode};
    for (value, mode) in [
        ("1", SitesMode::All),
        ("on", SitesMode::All),
        ("0", SitesMode::Off),
        ("sample", SitesMode::Sample(DEFAULT_SITES_SAMPLE_MEAN)),
        ("sample:1MiB", SitesMode::Sample(1 << 20)),
    ] {
        let (config, warnings) = from(&[("MEMPROF_SITES", value)]);
        assert_eq!((config.sites, warnings.len()), (mode, 0), "{value}");
    }
    for value in ["sometimes", "sample:0", "sample:lots"] {
        let (config, warnings) = from(&[("MEMPROF_SITES", value), ("MEMPROF_SITES_TOP", "0")]);
        assert_eq!(config.sites, SitesMode::Off, "{value}");
        assert_eq!(config.render.sites_top, 3);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!(
                "memprof: ignoring MEMPROF_SITES={value:?}: expected 1 (every allocation)"
            )),
            "{warnings:?}"
        );
    }
    let (config, _) = from(&[("MEMPROF_SITES_TOP", "7"), ("MEMPROF_SITES_SEED", "42")]);
    assert_eq!((config.render.sites_top, config.sites_seed), (7, 42));
}
