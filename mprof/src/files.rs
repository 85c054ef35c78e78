//! The recorded files of the current directory, `mprofile_<YYYYmmddHHMMSS>.dat`,
//! and the commands that manage them: `list`, `clean`, `rm` and `peak`.

use crate::dat::Profile;
use crate::error::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The recorded files in the current directory, oldest first (their names
/// sort by date).
pub fn recorded() -> Result<Vec<PathBuf>, Error> {
    let dir = Path::new(".");
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| stamp(name).is_some())
        .collect();
    names.sort();
    Ok(names.into_iter().map(PathBuf::from).collect())
}

/// The 14 digits of a recorded file's name, `None` for any other name.
fn stamp(name: &str) -> Option<&str> {
    let digits = name.strip_prefix("mprofile_")?.strip_suffix(".dat")?;
    (digits.len() == 14 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// The name of a new recording: `mprofile_<local time>.dat`.
pub fn new_name() -> PathBuf {
    let now = libc_now();
    PathBuf::from(format!("mprofile_{now}.dat"))
}

/// The local time as `YYYYmmddHHMMSS`.
fn libc_now() -> String {
    // SAFETY: `time` accepts a null pointer; `localtime_r` writes into the
    // zeroed `tm` that we own.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            // Falls back to UTC figures if the time zone cannot be read.
            libc::gmtime_r(&now, &mut tm);
        }
        tm
    };
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Files named by the arguments: paths, or indices into [`recorded`] (0 the
/// oldest, -1 the newest). No argument means the newest recorded file. A
/// path need not be UTF-8, as in every command of mprof.
pub fn resolve(args: &[OsString]) -> Result<Vec<PathBuf>, Error> {
    let recorded = recorded()?;
    if args.is_empty() {
        return recorded
            .last()
            .cloned()
            .map(|p| vec![p])
            .ok_or(Error::NoProfiles);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        let file = if path.exists() {
            path.to_path_buf()
        } else {
            let not_found = || Error::NotFound(crate::printable::path(path));
            let index: isize = arg
                .to_str()
                .and_then(|a| a.parse().ok())
                .ok_or_else(not_found)?;
            let at = if index < 0 {
                recorded.len().checked_sub(index.unsigned_abs())
            } else {
                Some(index as usize)
            };
            at.and_then(|i| recorded.get(i))
                .cloned()
                .ok_or_else(not_found)?
        };
        if !files.contains(&file) {
            files.push(file);
        }
    }
    Ok(files)
}

/// `mprof list`: index, name, and the time its name records.
pub fn list() -> Result<(), Error> {
    for (index, path) in recorded()?.iter().enumerate() {
        let name = crate::printable::path(path);
        let Some(ts) = stamp(&name) else { continue };
        println!(
            "{index} {name} {}:{}:{} {}/{}/{}",
            &ts[8..10],
            &ts[10..12],
            &ts[12..14],
            &ts[6..8],
            &ts[4..6],
            &ts[0..4]
        );
    }
    Ok(())
}

/// `mprof clean` and `mprof rm`: removes the files, or only names them.
pub fn remove(files: &[PathBuf], dry_run: bool) -> Result<(), Error> {
    if dry_run {
        println!("Files to be removed: ");
        for file in files {
            println!("{}", crate::printable::path(file));
        }
        return Ok(());
    }
    for file in files {
        std::fs::remove_file(file).map_err(|e| Error::io("remove", file, e))?;
    }
    Ok(())
}

/// `mprof peak`: `<file>\t<MiB> MiB` per file, as memory_profiler prints it,
/// then one indented line per child, and for the heap and GPU series.
pub fn peak(args: &[OsString]) -> Result<(), Error> {
    for file in resolve(args)? {
        let profile = Profile::read(&file)?;
        let peak = profile.peak().map_or(0.0, |s| s.mib);
        println!("{}\t{peak:.3} MiB", crate::printable::path(&file));
        for (pid, samples) in &profile.children {
            if let Some(child) = crate::dat::peak(samples) {
                println!("  Child {pid}\t\t\t{:.3} MiB", child.mib);
            }
        }
        if let Some(heap) = crate::dat::peak(&profile.heap) {
            println!("  Heap\t\t\t{:.3} MiB", heap.mib);
            if heap.mib > peak {
                // Both count capacity, but RSS only the pages written.
                println!(
                    "  (the heap's peak is above RSS's: it counts what was reserved, as a Vec's \
                     capacity, and RSS only the pages written)"
                );
            }
        }
        if let Some(gpu) = crate::dat::peak(&profile.gpu) {
            println!("  GPU\t\t\t{:.3} MiB", gpu.mib);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_recorded_names() {
        assert_eq!(stamp("mprofile_20260102030405.dat"), Some("20260102030405"));
        assert_eq!(stamp("mprofile_2026010203040.dat"), None);
        assert_eq!(stamp("mprofile_2026010203040x.dat"), None);
        assert_eq!(stamp("other.dat"), None);
        assert_eq!(stamp(new_name().to_str().unwrap()).map(str::len), Some(14));
    }
}
