//! What the system tells about a process: whether it runs, its resident
//! set size, its descendants and its environment. Linux's `/proc` here;
//! macOS's `libproc` calls in `macos` below, with the same answers (and no
//! environment: see [`environ`]).

#[cfg(not(target_os = "macos"))]
use std::collections::HashMap;

#[cfg(target_os = "macos")]
pub use macos::{descendants, environ, is_running, rss};

/// Whether process `pid` exists.
#[cfg(not(target_os = "macos"))]
pub fn is_running(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Process `pid`'s environment as it started (`NAME=value` entries, each
/// ended by a NUL), readable for one's own processes; `None` where it
/// cannot be read.
#[cfg(not(target_os = "macos"))]
pub fn environ(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// Resident set size of `pid` in bytes, from `/proc/<pid>/statm`. `None`
/// once the process is gone; a process that has exited but not been reaped
/// reads as 0 resident pages, which also gives `None`.
#[cfg(not(target_os = "macos"))]
pub fn rss(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    // "size resident shared text lib data dt", in pages.
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    (pages > 0).then(|| pages * page_size())
}

#[cfg(not(target_os = "macos"))]
fn page_size() -> u64 {
    // SAFETY: `sysconf` has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
}

/// Every live descendant of `pid`: children, their children, and so on,
/// in order of process id.
#[cfg(not(target_os = "macos"))]
pub fn descendants(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(parent) = parent_of(child) {
            children.entry(parent).or_default().push(child);
        }
    }
    let mut found = Vec::new();
    let mut pending = vec![pid];
    while let Some(parent) = pending.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            found.push(child);
            pending.push(child);
        }
    }
    found.sort_unstable();
    found
}

/// The parent process id, from `/proc/<pid>/stat`.
#[cfg(not(target_os = "macos"))]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
    // read after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(target_os = "macos")]
mod macos {
    use std::mem::{size_of, zeroed};

    /// Whether process `pid` exists: `kill` with no signal finds it, or
    /// finds it another user's.
    pub fn is_running(pid: u32) -> bool {
        // Not 0: `kill` would take it for this process's group.
        let Some(pid) = libc::pid_t::try_from(pid).ok().filter(|&p| p > 0) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let found = unsafe { libc::kill(pid, 0) } == 0;
        found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }

    /// NOTE: macOS shows another process's environment only through
    /// `sysctl(KERN_PROCARGS2)`, not read here: mprof looks for the
    /// program's socket by its own environment alone.
    pub fn environ(_pid: u32) -> Option<Vec<u8>> {
        None
    }

    /// Resident set size of `pid` in bytes (`proc_pidinfo`'s task info).
    /// `None` once the process is gone, or exited and not yet reaped.
    pub fn rss(pid: u32) -> Option<u64> {
        let pid = libc::c_int::try_from(pid).ok()?;
        // SAFETY: a zeroed `proc_taskinfo` is valid.
        let mut info: libc::proc_taskinfo = unsafe { zeroed() };
        let size = size_of::<libc::proc_taskinfo>() as libc::c_int;
        // SAFETY: a buffer of the size given.
        let got = unsafe {
            libc::proc_pidinfo(pid, libc::PROC_PIDTASKINFO, 0, (&raw mut info).cast(), size)
        };
        (got == size && info.pti_resident_size > 0).then_some(info.pti_resident_size)
    }

    /// Every live descendant of `pid`: children, their children, and so on,
    /// in order of process id.
    pub fn descendants(pid: u32) -> Vec<u32> {
        let mut found = Vec::new();
        let mut pending = vec![pid];
        while let Some(parent) = pending.pop() {
            for child in children(parent) {
                if !found.contains(&child) {
                    found.push(child);
                    pending.push(child);
                }
            }
        }
        found.sort_unstable();
        found
    }

    /// The children of `pid` (`proc_listchildpids`).
    fn children(pid: u32) -> Vec<u32> {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return Vec::new();
        };
        let mut room = 256;
        loop {
            let mut pids: Vec<libc::pid_t> = vec![0; room];
            let bytes = libc::c_int::try_from(room * size_of::<libc::pid_t>()).unwrap_or(0);
            // SAFETY: a zeroed buffer of the size given.
            let got = unsafe { libc::proc_listchildpids(pid, pids.as_mut_ptr().cast(), bytes) };
            if got < 0 {
                return Vec::new();
            }
            // NOTE: releases differ on whether the count is of pids or of
            // bytes; the buffer was zeroed, and no child is pid 0.
            let full = usize::try_from(got).is_ok_and(|n| n >= room);
            if full && room < 1 << 20 {
                room *= 4;
                continue;
            }
            return pids
                .into_iter()
                .filter_map(|p| u32::try_from(p).ok().filter(|&p| p > 0))
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_and_finds_its_children() {
        assert!(rss(std::process::id()).unwrap() > 0);
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = descendants(std::process::id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.contains(&child.id()), "{found:?}");
    }
}
