//! The directories above the workspace's copy. The copy sits at the
//! workspace's own path under `<memprof root>/tree` (the mirror of `/`),
//! and each directory on the way down holds links to the real directory's
//! other entries: a relative path that climbs out of the workspace
//! (`include_str!("../../shared/data.txt")`, a build script's `../assets`)
//! reaches the file it reaches from the original.
//!
//! NOTE: `.git` and `.cargo` are not linked. git and cargo look for them
//! in the directories above where they run, and find the user's through
//! the memprof root's own ancestors, as before; linked, cargo would read
//! each configuration file above the workspace twice (its lists, such as
//! `rustflags`, doubled).
//!
//! Only links are made here, in the mirror; nothing is written through
//! them.

use super::copy::{make_dir, make_link, remove};
use super::error::CargoError;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Makes `top` mirror the directories from `/` down to `workspace` (a path
/// without links), not `workspace` itself.
pub fn mirror_ancestors(workspace: &Path, top: &Path) -> Result<(), CargoError> {
    let mut real = PathBuf::from("/");
    let mut level = top.to_path_buf();
    for component in workspace.components() {
        let Component::Normal(down) = component else {
            continue;
        };
        mirror_level(&real, &level, down)?;
        real.push(down);
        level.push(down);
        make_dir(&level)?;
    }
    Ok(())
}

/// Makes `level` hold a link to each entry of `real` but `down` (the way
/// to the workspace), `.git` and `.cargo`, and nothing else but `down`.
fn mirror_level(real: &Path, level: &Path, down: &std::ffi::OsStr) -> Result<(), CargoError> {
    make_dir(level)?;
    let mut wanted: BTreeMap<OsString, PathBuf> = BTreeMap::new();
    // NOTE: a directory that cannot be listed (searchable, not readable)
    // gets no links: what climbs into it fails as it did before.
    if let Ok(entries) = std::fs::read_dir(real) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name != down && name != ".git" && name != ".cargo" {
                wanted.insert(name, entry.path());
            }
        }
    }
    let held = std::fs::read_dir(level).map_err(|e| CargoError::io("read", level, e))?;
    for entry in held {
        let entry = entry.map_err(|e| CargoError::io("read", level, e))?;
        let name = entry.file_name();
        if name != down && !wanted.contains_key(&name) {
            remove(&entry.path()).map_err(|e| CargoError::io("clean", &entry.path(), e))?;
        }
    }
    for (name, target) in wanted {
        make_link(&level.join(name), &target)?;
    }
    Ok(())
}
