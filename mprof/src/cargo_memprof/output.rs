//! The end of a `cargo memprof` run: the reports that its processes wrote,
//! one each (`MEMPROF_JSON=DIR/%p.json`), added into one, printed as the
//! summary and the tables of the functions with the highest peaks, and kept
//! whole in `report.json`, and with `--json`, `--html` and `--pprof`.

use super::Options;
use super::Subcommand;
use super::error::CargoError;
use memprof_runtime::Report;
use std::path::{Path, PathBuf};

/// Empties `dir` of an earlier run's reports, and makes it if need be.
pub fn clear(dir: &Path) -> Result<(), CargoError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(CargoError::io("remove", dir, e)),
    }
    std::fs::create_dir_all(dir).map_err(|e| CargoError::io("create", dir, e))
}

/// The reports that the run's processes wrote into `dir`, added together
/// in the order they were written (a function first seen in an earlier
/// process comes first); `None` if no process wrote one.
///
/// PERF: each process writes its own file, read once here: when every
/// process added its report to one shared file, each re-read and re-wrote
/// the whole run's report at its exit (pulldown-cmark's suite: about 9 MB,
/// 7 times).
pub fn gather(dir: &Path) -> Result<Option<Report>, CargoError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CargoError::io("read", dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CargoError::io("read", dir, e))?;
        let path = entry.path();
        // NOTE: a regular file only, as memprof writes (a new file renamed
        // into place): a link is not followed, and a FIFO planted under a
        // report's name would block the read for ever.
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && is_process_report(&path) {
            let written = entry.metadata().and_then(|m| m.modified()).ok();
            files.push((written, path));
        }
    }
    files.sort();
    let mut gathered: Option<Report> = None;
    for (_, path) in files {
        let text = std::fs::read_to_string(&path).map_err(|e| CargoError::io("read", &path, e))?;
        let report = crate::report::parse(&text)
            .map_err(|problem| CargoError::Io {
                action: "read the report in",
                path: path.clone(),
                source: std::io::Error::other(problem),
            })?
            .report;
        match &mut gathered {
            Some(all) => all.add(&report),
            None => gathered = Some(report),
        }
    }
    Ok(gathered)
}

/// `PID.json`, a process's report: not one of its snapshots (`PID.N.json`)
/// nor a file being written (`.PID.json.PID.tmp`).
fn is_process_report(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_suffix(".json")
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Prints `report`, the run's (`None`: no process wrote one), keeps it in
/// `path`, and copies it where `--json`, `--html` and `--pprof` say.
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
    report: Option<Report>,
    path: &Path,
    options: &Options,
    renames: &[(String, String)],
    succeeded: bool,
) -> Result<Option<Report>, CargoError> {
    let Some(mut report) = report else {
        if succeeded {
            eprintln!("cargo-memprof: no profiled function ran: no report");
        }
        return Ok(None);
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_each_process_s_own_report_is_gathered() {
        let dir = std::env::temp_dir().join(format!("memprof-gather-{}", std::process::id()));
        clear(&dir).unwrap();
        let report = |name: &str, calls: u64| {
            format!(
                r#"{{"schema":1,"functions":[{{"name":"{name}","file":"src/lib.rs","calls":{calls},"lines":[]}}]}}"#
            )
        };
        std::fs::write(dir.join("101.json"), report("app::a", 2)).unwrap();
        std::fs::write(dir.join("202.json"), report("app::a", 3)).unwrap();
        std::fs::write(dir.join("303.json"), report("app::b", 1)).unwrap();
        // A snapshot, a file being written, another name: none is a
        // process's report.
        std::fs::write(dir.join("101.1.json"), report("app::a", 100)).unwrap();
        std::fs::write(dir.join(".202.json.202.tmp"), "{").unwrap();
        std::fs::write(dir.join("notes.json"), "{").unwrap();
        // Under a report's name, none that is not a regular file: a link to
        // a report (read twice if followed), a dangling link, a FIFO (whose
        // read would wait for a writer).
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("101.json"), dir.join("404.json")).unwrap();
            std::os::unix::fs::symlink(dir.join("gone.json"), dir.join("405.json")).unwrap();
            let fifo =
                std::ffi::CString::new(dir.join("406.json").into_os_string().into_encoded_bytes())
                    .unwrap();
            // SAFETY: a path of our own, NUL-terminated.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        }
        let gathered = gather(&dir).unwrap().unwrap();
        let mut calls: Vec<(String, u64)> = gathered
            .functions
            .iter()
            .map(|f| (f.name.clone(), f.calls))
            .collect();
        calls.sort();
        assert_eq!(calls, [("app::a".to_owned(), 5), ("app::b".to_owned(), 1)]);
        // A run that wrote nothing: no report. A directory never made: none.
        clear(&dir).unwrap();
        assert!(gather(&dir).unwrap().is_none());
        std::fs::remove_dir(&dir).unwrap();
        assert!(gather(&dir).unwrap().is_none());
    }
}
