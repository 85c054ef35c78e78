//! The end of a `cargo memprof` run: the report that its processes merged
//! into one `MEMPROF_JSON` file, printed as the summary and the tables of
//! the functions with the highest peaks, and kept whole with `--json`,
//! `--html` and `--pprof`.

use super::Options;
use super::Subcommand;
use super::error::CargoError;
use std::path::{Path, PathBuf};

/// Prints the report at `path`, if the run wrote one, and copies it where
/// `--json`, `--html` and `--pprof` say.
/// `renames` maps the copy's file names back, (prefix, replacement): a
/// `--dep` copy's absolute path to `<name>-<version>`, as cargo names a
/// registry package, so its rows read `either-1.19.0/src/lib.rs`, and the
/// copy's root to nothing, for the frames of a site whose stack was cut
/// (the runtime names their files by their whole paths where not under
/// the working directory).
/// `succeeded`: cargo's status was 0 (after a failed build, no report goes
/// without saying).
/// Returns the report printed, if any.
pub fn print(
    path: &Path,
    options: &Options,
    renames: &[(String, String)],
    succeeded: bool,
) -> Result<Option<memprof_runtime::Report>, CargoError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if succeeded {
                eprintln!("cargo-memprof: no profiled function ran: no report");
            }
            return Ok(None);
        }
        Err(e) => return Err(CargoError::io("read", path, e)),
    };
    let mut report = crate::report::parse(&text)
        .map_err(|problem| CargoError::Io {
            action: "read the report in",
            path: path.to_path_buf(),
            source: std::io::Error::other(problem),
        })?
        .report;
    let functions = &mut report.functions;
    let rename = |file: &mut String| {
        if let Some((prefix, to)) = renames.iter().find(|(p, _)| file.starts_with(p)) {
            *file = format!("{to}{}", &file[prefix.len()..]);
        }
    };
    for function in functions.iter_mut() {
        rename(&mut function.file);
    }
    let frames = functions
        .iter_mut()
        .flat_map(|f| f.lines.iter_mut())
        .flat_map(|l| l.sites.iter_mut().flatten())
        .flat_map(|s| s.frames.iter_mut());
    for frame in frames {
        if let Some(file) = &mut frame.file {
            rename(file);
        }
    }
    // The kept report names the files and shows the lines as the tables do.
    std::fs::write(path, report.to_json()).map_err(|e| CargoError::io("write", path, e))?;
    let text = crate::report::text(&report, options.top, "--json or --html keep them all");
    write_out(&text, options.subcommand, path)?;
    if let Some(json) = &options.json {
        std::fs::copy(path, json).map_err(|e| CargoError::io("write", json, e))?;
        eprintln!("cargo-memprof: wrote {}", json.display());
    }
    if let Some(pprof) = &options.pprof {
        let mut profile = memprof_runtime::HeapProfile::of_report(&report);
        profile.sample_mean = sample_mean(options.sites.as_deref());
        memprof_runtime::safe_file::write(pprof, &profile.to_pprof())
            .map_err(|e| CargoError::io("write", pprof, e))?;
        eprintln!("cargo-memprof: wrote {}", pprof.display());
    }
    if let Some(html) = &options.html {
        let written = crate::html::html(&crate::html::HtmlOptions {
            report: path.to_path_buf(),
            base: None,
            dat: None,
            output: Some(html.clone()),
        })
        .map_err(CargoError::Html)?;
        eprintln!("cargo-memprof: wrote {}", written.display());
    }
    Ok(Some(report))
}

/// The sampling mean that `--sites` asked for: `sample` (the runtime's
/// default, 32 KiB) or `sample:SIZE`; `None` for every allocation.
fn sample_mean(sites: Option<&str>) -> Option<u64> {
    match sites?.split_once(':') {
        None if sites == Some("sample") => Some(32 << 10),
        Some(("sample", size)) => memprof_runtime::units::parse_size(size).ok(),
        _ => None,
    }
}

/// Where the report's text goes: `MEMPROF_OUTPUT` (`stdout`, `stderr` or
/// a file, added to), else beside cargo's own lines on stderr after `run`,
/// whose stdout is the program's, and on stdout after `test`, as the test
/// harness's results are. A file that cannot be written: stderr, with one
/// warning.
fn write_out(text: &str, subcommand: Subcommand, report: &Path) -> Result<(), CargoError> {
    use std::io::Write;
    let chosen = std::env::var_os("MEMPROF_OUTPUT").filter(|v| !v.is_empty());
    let to_stdout = match chosen.as_deref().and_then(|v| v.to_str()) {
        Some("stdout") => true,
        Some("stderr") => false,
        Some(_) => {
            let file = PathBuf::from(chosen.unwrap_or_default());
            let appended = memprof_runtime::safe_file::open_output(&file, false)
                .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
            match appended {
                Ok(()) => {
                    eprintln!(
                        "cargo-memprof: the report is in {} (its JSON: {})",
                        file.display(),
                        report.display()
                    );
                    return Ok(());
                }
                Err(e) => {
                    eprintln!(
                        "cargo-memprof: cannot write MEMPROF_OUTPUT={}: {e}; writing to stderr instead",
                        file.display()
                    );
                    false
                }
            }
        }
        None => subcommand == Subcommand::Test,
    };
    let written = if to_stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
    // A reader that stopped early (`| head`) is no error.
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CargoError::io("write", Path::new("the report"), e))
        }
        _ => Ok(()),
    }
}
