//! The end of a `cargo memprof` run: the report that its processes merged
//! into one `MEMPROF_JSON` file, printed as the summary and the tables of
//! the functions with the highest peaks, and kept whole with `--json` and
//! `--html`.

use super::Options;
use super::error::CargoError;
use memprof_runtime::{FunctionReport, Report};
use std::path::Path;

/// How many functions the printed summary lists; `--json` and `--html`
/// keep them all.
const SUMMARY_ROWS: usize = 20;

#[derive(miniserde::Deserialize)]
struct Document {
    functions: Vec<FunctionReport>,
}

/// Prints the report at `path`, if the run wrote one, and copies it where
/// `--json` and `--html` say.
/// `renames` maps the copy's file names back, (prefix, replacement): a
/// `--dep` copy's absolute path to `<name>-<version>`, as cargo names a
/// registry package, so its rows read `either-1.19.0/src/lib.rs`, and the
/// copy's root to nothing, for the frames of a site whose stack was cut
/// (the runtime names their files by their whole paths where not under
/// the working directory).
/// `succeeded`: cargo's status was 0 (after a failed build, no report goes
/// without saying).
pub fn print(
    path: &Path,
    options: &Options,
    renames: &[(String, String)],
    succeeded: bool,
) -> Result<(), CargoError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if succeeded {
                eprintln!("cargo-memprof: no profiled function ran: no report");
            }
            return Ok(());
        }
        Err(e) => return Err(CargoError::io("read", path, e)),
    };
    let document: Document = miniserde::json::from_str(&text).map_err(|_| CargoError::Io {
        action: "read the report in",
        path: path.to_path_buf(),
        source: std::io::Error::other("not a memprof report"),
    })?;
    let mut functions = document.functions;
    let rename = |file: &mut String| {
        if let Some((prefix, to)) = renames.iter().find(|(p, _)| file.starts_with(p)) {
            *file = format!("{to}{}", &file[prefix.len()..]);
        }
    };
    for function in &mut functions {
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
    let report = Report { functions };
    // The kept report names the files and shows the lines as the tables do.
    std::fs::write(path, report.to_json()).map_err(|e| CargoError::io("write", path, e))?;
    let mut summary = report.summary();
    let top: Vec<&FunctionReport> = summary
        .functions
        .iter()
        .take(options.top)
        .filter_map(|s| {
            report
                .functions
                .iter()
                .find(|f| f.name == s.name && f.file == s.file)
        })
        .collect();
    let ran = summary.functions.len();
    summary.functions.truncate(SUMMARY_ROWS);
    let text = summary.to_string();
    match text.split_once('\n') {
        // The header counts the rows it holds: it is told them all.
        Some((_, rest)) if ran > SUMMARY_ROWS => {
            println!(
                "Summary: {ran} functions ran, highest peak first (the first {SUMMARY_ROWS}; --json or --html keep them all)"
            );
            print!("{rest}");
        }
        _ => print!("{text}"),
    }
    for function in top {
        println!();
        print!("{function}");
    }
    if let Some(json) = &options.json {
        std::fs::copy(path, json).map_err(|e| CargoError::io("write", json, e))?;
        eprintln!("cargo-memprof: wrote {}", json.display());
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
    Ok(())
}
