//! Copying a tree (the workspace, a `--dep` package) into the shadow: what
//! the copy holds, what it leaves out and what stays a link.
//!
//! - A file is copied as it is, or as the annotation gives it (by the
//!   user's path); a link to a file, as what it points to.
//! - A directory is copied, and so is a linked one, as what it points to,
//!   unless the link closes a loop: it points to a directory being copied
//!   (the link's own, an ancestor) or to one above the tree's root. Such a
//!   link is made again in the copy, relative, to the copy of the directory
//!   it points to (above the root: its mirror, see
//!   [`ancestors`](super::ancestors)), and not followed: `ln -s . loop`
//!   copied the workspace into itself until the disk was full.
//! - Left out: `.git`, the paths to skip (the user's target directory, the
//!   Cargo.lock copied on its own) and anything in them, reached by a link
//!   too, the copy itself, a directory tagged as a cache (a `CACHEDIR.TAG`
//!   with the signature, as cargo writes in every target directory: a stale
//!   `./target` beside a `CARGO_TARGET_DIR` elsewhere), a dangling link (an
//!   editor's lock file, `.#lib.rs`, which cargo ignores too), sockets and
//!   FIFOs.
//!
//! What the copy holds that the tree no longer does, left-out things
//! included, is removed, except a Cargo.lock.

use super::error::CargoError;
use super::shadow::write_if_changed;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The first line of a `CACHEDIR.TAG` (bford.info/cachedir).
const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// Copies the tree at `from` to `to` by the rules above; returns the
/// number of files copied.
pub fn copy_tree(
    from: &Path,
    to: &Path,
    skip: &[&Path],
    replace: &BTreeMap<PathBuf, Vec<u8>>,
) -> Result<usize, CargoError> {
    let real_from = from
        .canonicalize()
        .map_err(|e| CargoError::io("read", from, e))?;
    make_dir(to)?;
    let mut left_out: Vec<PathBuf> = skip
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
        .collect();
    left_out.push(
        to.canonicalize()
            .map_err(|e| CargoError::io("read", to, e))?,
    );
    let mut copy = TreeCopy {
        skip,
        left_out,
        replace,
        open: Vec::new(),
        copied: 0,
    };
    copy.dir(from, real_from, to)?;
    Ok(copy.copied)
}

struct TreeCopy<'a> {
    /// Left out by the user's path.
    skip: &'a [&'a Path],
    /// Left out with everything in them, by the real path.
    left_out: Vec<PathBuf>,
    replace: &'a BTreeMap<PathBuf, Vec<u8>>,
    /// (real path, copy) of each directory being copied, the root first.
    open: Vec<(PathBuf, PathBuf)>,
    copied: usize,
}

impl TreeCopy<'_> {
    fn dir(&mut self, from: &Path, real: PathBuf, to: &Path) -> Result<(), CargoError> {
        make_dir(to)?;
        self.open.push((real.clone(), to.to_path_buf()));
        let mut names = BTreeSet::new();
        let entries = std::fs::read_dir(from).map_err(|e| CargoError::io("read", from, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| CargoError::io("read", from, e))?;
            let name = entry.file_name();
            let path = entry.path();
            if name == ".git" || self.skip.contains(&path.as_path()) {
                continue;
            }
            let linked = entry
                .file_type()
                .map_err(|e| CargoError::io("read", &path, e))?
                .is_symlink();
            let (real_path, meta) = if linked {
                match path.canonicalize().and_then(|r| Ok((r.metadata()?, r))) {
                    Ok((meta, r)) => (r, meta),
                    Err(e) if is_dangling(&e) => continue,
                    Err(e) => return Err(CargoError::io("read", &path, e)),
                }
            } else {
                let meta = entry
                    .metadata()
                    .map_err(|e| CargoError::io("read", &path, e))?;
                (real.join(&name), meta)
            };
            if self.left_out.iter().any(|l| real_path.starts_with(l)) {
                continue;
            }
            let dest = to.join(&name);
            if meta.is_dir() {
                if let Some(copy) = linked.then(|| self.copy_of_open(&real_path)).flatten() {
                    make_link(&dest, &relative(to, &copy))?;
                } else if is_cache_dir(&real_path) {
                    continue;
                } else {
                    self.dir(&path, real_path, &dest)?;
                }
            } else if meta.is_file() {
                let bytes = match self.replace.get(&path) {
                    Some(bytes) => bytes.clone(),
                    None => std::fs::read(&path).map_err(|e| CargoError::io("read", &path, e))?,
                };
                clear_for_file(&dest)?;
                write_if_changed(&dest, &bytes)?;
                self.copied += 1;
            } else {
                continue;
            }
            names.insert(name);
        }
        self.open.pop();
        remove_others(to, &names).map_err(|e| CargoError::io("clean", to, e))
    }

    /// Where the copy of `real` is when a link to it would close a loop:
    /// `real` is being copied, or lies above the root.
    fn copy_of_open(&self, real: &Path) -> Option<PathBuf> {
        if let Some((_, copy)) = self.open.iter().find(|(open, _)| open == real) {
            return Some(copy.clone());
        }
        let (root, copy) = self.open.first()?;
        let up = root.strip_prefix(real).ok()?.components().count();
        copy.ancestors().nth(up).map(Path::to_path_buf)
    }
}

/// Tags `dir` (cargo-memprof's own, `<target-dir>/memprof`) as a cache,
/// as cargo tags its target directory: a later run's copy leaves it out
/// where the user's target directory has moved (`CARGO_TARGET_DIR`
/// elsewhere), and so do backup tools. Without it the copy walked a stale
/// `target/memprof/tree`, whose mirror of the directories above the
/// workspace links to `/proc`.
pub fn tag_as_cache(dir: &Path) -> Result<(), CargoError> {
    let mut tag = CACHEDIR_SIGNATURE.to_vec();
    tag.extend_from_slice(
        b"\n# This file is a cache directory tag created by cargo-memprof.\n\
          # For information about cache directory tags see https://bford.info/cachedir/\n",
    );
    write_if_changed(&dir.join("CACHEDIR.TAG"), &tag)
}

/// A link that leads nowhere: to nothing, or to itself through links.
fn is_dangling(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ELOOP)
}

/// A directory holding a `CACHEDIR.TAG` that starts with the signature.
fn is_cache_dir(dir: &Path) -> bool {
    use std::io::Read;
    let mut head = [0; CACHEDIR_SIGNATURE.len()];
    std::fs::File::open(dir.join("CACHEDIR.TAG"))
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == CACHEDIR_SIGNATURE)
}

/// `to` relative to the directory `from`, both absolute: `..` up to their
/// common ancestor, then down.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: PathBuf = from[common..]
        .iter()
        .map(|_| Component::ParentDir)
        .collect();
    out.extend(&to[common..]);
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Removes what is at `path`, a directory with what it holds; a link
/// itself, never what it points to.
pub fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes `path` a directory: a link or file of an earlier copy there goes.
pub fn make_dir(path: &Path) -> Result<(), CargoError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => remove(path).map_err(|e| CargoError::io("clean", path, e))?,
        Err(_) => {}
    }
    std::fs::create_dir_all(path).map_err(|e| CargoError::io("create", path, e))
}

/// Makes `path` a link to `target` unless it is one already.
pub fn make_link(path: &Path, target: &Path) -> Result<(), CargoError> {
    if std::fs::read_link(path).is_ok_and(|t| t == target) {
        return Ok(());
    }
    remove(path).map_err(|e| CargoError::io("clean", path, e))?;
    std::os::unix::fs::symlink(target, path).map_err(|e| CargoError::io("create", path, e))
}

/// Makes room for a file at `path`: a link or directory of an earlier
/// copy there goes (a write would go through the link).
fn clear_for_file(path: &Path) -> Result<(), CargoError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.is_file() => remove(path).map_err(|e| CargoError::io("clean", path, e)),
        _ => Ok(()),
    }
}

/// Removes what `dir` holds besides `names` and Cargo.lock.
fn remove_others(dir: &Path, names: &BTreeSet<OsString>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if !names.contains(&name) && name != "Cargo.lock" {
            remove(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_climbs_to_the_common_ancestor() {
        let rel = |a: &str, b: &str| relative(Path::new(a), Path::new(b));
        assert_eq!(rel("/m/tree/w", "/m/tree/w"), Path::new("."));
        assert_eq!(rel("/m/tree/w/a/b", "/m/tree/w"), Path::new("../.."));
        assert_eq!(rel("/m/tree/w/a", "/m/tree/x/c"), Path::new("../../x/c"));
        assert_eq!(rel("/m/tree/w", "/m/tree/w/a"), Path::new("a"));
    }
}
