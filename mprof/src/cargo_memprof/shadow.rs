//! The shadow copy: the user's workspace mirrored under
//! `<target-dir>/memprof/tree/<the workspace's path>`
//! (`<target-dir>/memprof/<name>-<hash>/tree/...` for a target directory
//! outside the workspace, which others may share), with the attribute on
//! the selected packages' functions and memprof added to their manifests;
//! `--dep` packages under `<target-dir>/memprof/deps/<name>-<version>`,
//! patched in. What the copy holds is [`copy`](super::copy)'s; the
//! directories above it, [`ancestors`](super::ancestors)'.
//!
//! Nothing is ever written outside `<target-dir>/memprof`. A file is
//! written only when its content differs from the shadow's copy, so its
//! mtime stays and cargo's fingerprints hold: a second run after no change
//! rebuilds nothing, and one changed file rebuilds what cargo would.

use super::annotate::{self, CrateAnnotation, Selection};
use super::error::CargoError;
use cargo_metadata::{Metadata, Package, TargetKind};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where the shadow lives, and what it maps back to.
#[derive(Debug)]
pub struct Layout {
    /// The user's workspace root.
    pub workspace: PathBuf,
    /// `workspace` with its links resolved: where `..` climbs from.
    pub real_workspace: PathBuf,
    /// `<target-dir>/memprof`.
    pub root: PathBuf,
    /// `<root>/tree`: the mirror of `/`, down to `tree`.
    pub top: PathBuf,
    /// The mirror of `workspace`: `top` joined with `real_workspace`.
    pub tree: PathBuf,
    /// Copies of `--dep` packages.
    pub deps: PathBuf,
    /// The user's target directory: never copied.
    pub user_target: PathBuf,
}

impl Layout {
    pub fn new(metadata: &Metadata) -> Layout {
        let workspace = metadata.workspace_root.clone().into_std_path_buf();
        let (user_target, root) = root_of(&workspace, metadata.target_directory.as_std_path());
        let real_workspace = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.clone());
        let top = root.join("tree");
        // NOTE: the copy sits at the workspace's own path under `top`, so
        // that a relative path climbing out of it resolves in the mirror of
        // the directories above, as in the original.
        let tree = real_workspace
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .fold(top.clone(), |path, c| path.join(c));
        Layout {
            tree,
            top,
            deps: root.join("deps"),
            workspace,
            real_workspace,
            root,
            user_target,
        }
    }

    /// The shadow's path for a path of the user's workspace.
    pub fn mirror(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.workspace) {
            Ok(rest) => self.tree.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
}

/// The target directory cargo names (`target_directory`), and where
/// cargo-memprof keeps its copy and record for `workspace`: `memprof` under
/// the target directory, and below it a directory of the workspace's own
/// when the target directory is outside it, as one set by CARGO_TARGET_DIR
/// may be shared by several.
///
/// NOTE: a relative CARGO_TARGET_DIR (`../shared`) comes back joined to the
/// directory cargo ran in, `..` and all: resolved here, so that it is not
/// taken for a directory inside the workspace.
fn root_of(workspace: &Path, target_directory: &Path) -> (PathBuf, PathBuf) {
    let user_target = annotate::lexically_normal(target_directory);
    let mut root = user_target.join("memprof");
    if !user_target.starts_with(workspace) {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        workspace.hash(&mut hasher);
        let name = workspace.file_name().unwrap_or_default().to_string_lossy();
        root.push(format!("{name}-{:016x}", hasher.finish()));
    }
    (user_target, root)
}

/// Where memprof comes from: this checkout, or the registry's same version.
pub fn memprof_dependency() -> toml_edit::InlineTable {
    let mut table = toml_edit::InlineTable::new();
    let source = std::env::var_os("CARGO_MEMPROF_SOURCE")
        .map(PathBuf::from)
        .or_else(|| {
            let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let manifest = std::fs::read_to_string(checkout.join("Cargo.toml")).ok()?;
            manifest.contains("name = \"memprof\"").then_some(checkout)
        });
    match source {
        Some(path) => {
            let path = path.canonicalize().unwrap_or(path);
            table.insert("path", path.display().to_string().into());
        }
        None => {
            table.insert("version", format!("={}", env!("CARGO_PKG_VERSION")).into());
        }
    }
    table
}

/// One package to annotate: its manifest in the user's tree and where its
/// copy goes.
pub struct Profiled<'m> {
    pub package: &'m Package,
    /// The copy's directory.
    pub dest: PathBuf,
}

/// Annotates the packages' crates (not build scripts; not proc-macro
/// packages, which are counted) and returns the files by the user's path.
///
/// Where a crate declares a `#[global_allocator]` of its own, annotating
/// wrapped it in memprof's (see [`super::allocator::ALLOCATOR`]): memprof's own
/// is then left out of the build (see [`edit_manifest`]), and each
/// executable target of the packages that has none of its own, nor its
/// package's library, gets memprof's (a library's only in its unit
/// tests) at the end of its root file, where no line moves.
pub fn annotate_packages(
    packages: &[Profiled<'_>],
    selection: &Selection,
) -> Result<(CrateAnnotation, usize), CargoError> {
    let mut out = CrateAnnotation::default();
    let mut proc_macros = 0;
    // (the package, the root file of each target without one of its own).
    let mut without: Vec<(&Package, Vec<(PathBuf, bool)>)> = Vec::new();
    // The packages whose library declares one.
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    for profiled in packages {
        let package = profiled.package;
        if package
            .targets
            .iter()
            .any(|t| t.kind.contains(&TargetKind::ProcMacro))
        {
            proc_macros += 1;
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut lib_has = false;
        let mut roots = Vec::new();
        for target in &package.targets {
            if target.kind.contains(&TargetKind::CustomBuild) {
                continue;
            }
            let krate = target.name.replace('-', "_");
            let root = target.src_path.as_std_path();
            let own = annotate::annotate_crate(root, &krate, selection, &mut seen, &mut out)
                .map_err(CargoError::Parse)?;
            let is_lib = target.kind.iter().any(|k| {
                matches!(
                    k,
                    TargetKind::Lib
                        | TargetKind::RLib
                        | TargetKind::DyLib
                        | TargetKind::CDyLib
                        | TargetKind::StaticLib
                )
            });
            lib_has |= is_lib && own;
            if !own {
                roots.push((root.to_path_buf(), is_lib));
            }
        }
        if lib_has {
            covered.insert(&package.name);
        }
        without.push((package, roots));
    }
    // A package that depends on a covered one, directly or not, links its
    // allocator.
    loop {
        let more: Vec<&str> = without
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| !covered.contains(p.name.as_str()))
            .filter(|p| {
                p.dependencies.iter().any(|d| {
                    d.kind == cargo_metadata::DependencyKind::Normal
                        && covered.contains(d.name.as_str())
                })
            })
            .map(|p| p.name.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        covered.extend(more);
    }
    if !out.allocator_files.is_empty() {
        for (package, roots) in without {
            if covered.contains(package.name.as_str()) {
                continue;
            }
            for (root, is_lib) in roots {
                let text = match out.files.get(&root) {
                    Some(text) => text.clone(),
                    None => std::fs::read_to_string(&root)
                        .map_err(|e| CargoError::io("read", &root, e))?,
                };
                let only_tests = if is_lib { "#[cfg(test)] " } else { "" };
                let line = format!(
                    "{only_tests}#[global_allocator] static __MEMPROF_ALLOCATOR: {0} = {0}::system();\n",
                    super::allocator::ALLOCATOR
                );
                let separator = if text.ends_with('\n') || text.is_empty() {
                    ""
                } else {
                    "\n"
                };
                out.files.insert(root, format!("{text}{separator}{line}"));
            }
        }
    }
    Ok((out, proc_macros))
}

/// Writes `bytes` to `dest` unless it already holds them.
pub fn write_if_changed(dest: &Path, bytes: &[u8]) -> Result<(), CargoError> {
    if std::fs::read(dest).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CargoError::io("create", dir, e))?;
    }
    std::fs::write(dest, bytes).map_err(|e| CargoError::io("write", dest, e))
}

/// Copies the user's Cargo.lock into the copy when it changed since the
/// last copy: cargo adds memprof's packages to the copy's lock, which a
/// copy of the original at every run would make it resolve again.
pub fn copy_lock(lock: &Path, layout: &Layout) -> Result<(), CargoError> {
    let copied = layout.root.join("Cargo.lock.copied");
    let dest = layout.mirror(lock);
    match std::fs::read(lock) {
        Ok(bytes) => {
            if std::fs::read(&copied).is_ok_and(|old| old == bytes) && dest.exists() {
                return Ok(());
            }
            write_if_changed(&dest, &bytes)?;
            write_if_changed(&copied, &bytes)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CargoError::io("read", lock, e)),
    }
}

/// The names of the packages the user's Cargo.lock at `lock` holds: every
/// package their own build can use (for any target or feature). None
/// without a lock file, with one that does not parse, or where the path is
/// not a regular file (a FIFO would block the read; a dangling link or a
/// loop of links fails it).
pub fn locked_packages(lock: &Path) -> Option<BTreeSet<String>> {
    if !std::fs::metadata(lock).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(lock).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let packages = doc.get("package")?.as_array_of_tables()?;
    Some(
        packages
            .iter()
            .filter_map(|p| p.get("name")?.as_str().map(str::to_owned))
            .collect(),
    )
}

fn manifest_error(path: &Path, problem: impl std::fmt::Display) -> CargoError {
    CargoError::Manifest {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    }
}

/// The dependency tables of a manifest: `[dependencies]` and its kin, at
/// the top, under `[target.'cfg(..)']` and `[workspace]`.
fn dependency_tables(doc: &mut toml_edit::DocumentMut) -> Vec<&mut dyn toml_edit::TableLike> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables: Vec<&mut dyn toml_edit::TableLike> = Vec::new();
    for (key, item) in doc.as_table_mut().iter_mut() {
        match key.get() {
            k if KINDS.contains(&k) => tables.extend(item.as_table_like_mut()),
            "target" => {
                if let Some(targets) = item.as_table_like_mut() {
                    for (_, target) in targets.iter_mut() {
                        if let Some(target) = target.as_table_like_mut() {
                            for (k, deps) in target.iter_mut() {
                                if KINDS.contains(&k.get()) {
                                    tables.extend(deps.as_table_like_mut());
                                }
                            }
                        }
                    }
                }
            }
            "workspace" => {
                if let Some(ws) = item.as_table_like_mut()
                    && let Some(deps) = ws.get_mut("dependencies")
                {
                    tables.extend(deps.as_table_like_mut());
                }
            }
            _ => {}
        }
    }
    tables
}

/// What memprof dependency a manifest's copy gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memprof {
    /// None: the package is not profiled.
    No,
    /// memprof with its default features, its global allocator among them.
    WithAllocator,
    /// memprof without its global allocator: a crate of the build wraps
    /// its own in memprof's.
    WithoutAllocator,
}

/// The manifest at `path` (the user's), as its copy must read: `path =`
/// dependencies that leave the workspace made absolute, memprof added
/// as `memprof` says, and `patches` added under `[patch.crates-io]`.
pub fn edit_manifest(
    path: &Path,
    workspace: &Path,
    memprof: Memprof,
    patches: &[(String, PathBuf)],
) -> Result<Vec<u8>, CargoError> {
    let text = std::fs::read_to_string(path).map_err(|e| CargoError::io("read", path, e))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| manifest_error(path, e))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for table in dependency_tables(&mut doc) {
        for (_, dep) in table.iter_mut() {
            let Some(dep) = dep.as_table_like_mut() else {
                continue;
            };
            let Some(rel) = dep.get("path").and_then(|p| p.as_str()) else {
                continue;
            };
            let target = dir.join(rel);
            let target = target.canonicalize().unwrap_or(target);
            if !target.starts_with(workspace) {
                dep.insert("path", toml_edit::value(target.display().to_string()));
            }
        }
    }
    if memprof != Memprof::No {
        let deps = doc
            .entry("dependencies")
            .or_insert_with(toml_edit::table)
            .as_table_like_mut()
            .ok_or_else(|| manifest_error(path, "[dependencies] is not a table"))?;
        if !deps.contains_key("memprof") {
            let mut dependency = memprof_dependency();
            if memprof == Memprof::WithoutAllocator {
                // NOTE: features unify across the build: every package's
                // memprof goes without the allocator, or none does.
                dependency.insert("default-features", false.into());
                let mut features = toml_edit::Array::new();
                features.push("enabled");
                features.push("gpu");
                dependency.insert("features", toml_edit::Value::Array(features));
            }
            deps.insert("memprof", toml_edit::value(dependency));
        }
    }
    let mut text = doc.to_string();
    if !patches.is_empty() {
        text = String::from_utf8_lossy(&add_patches(path, &text, patches)?).into_owned();
    }
    Ok(text.into_bytes())
}

/// `text` (the manifest at `path`) with `patches` under `[patch.crates-io]`.
pub fn add_patches(
    path: &Path,
    text: &str,
    patches: &[(String, PathBuf)],
) -> Result<Vec<u8>, CargoError> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| manifest_error(path, e))?;
    {
        let patch = doc
            .entry("patch")
            .or_insert_with(|| {
                let mut table = toml_edit::Table::new();
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            })
            .as_table_like_mut()
            .ok_or_else(|| manifest_error(path, "[patch] is not a table"))?;
        let crates_io = patch
            .entry("crates-io")
            .or_insert_with(toml_edit::table)
            .as_table_like_mut()
            .ok_or_else(|| manifest_error(path, "[patch.crates-io] is not a table"))?;
        for (name, dir) in patches {
            let mut table = toml_edit::InlineTable::new();
            table.insert("path", dir.display().to_string().into());
            crates_io.insert(name, toml_edit::value(table));
        }
    }
    Ok(doc.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target directory given relative to the workspace, climbing out of
    /// it, is outside it: its copy gets a directory of its own.
    #[test]
    fn a_relative_target_directory_outside_the_workspace_is_shared_safely() {
        let workspace = Path::new("/w/app");
        let (target, inside) = root_of(workspace, Path::new("/w/app/./target"));
        assert_eq!(target, Path::new("/w/app/target"));
        assert_eq!(inside, Path::new("/w/app/target/memprof"));
        // As cargo names `CARGO_TARGET_DIR=../shared` run in /w/app.
        let (target, outside) = root_of(workspace, Path::new("/w/app/../shared"));
        assert_eq!(target, Path::new("/w/shared"));
        let text = |p: &Path| p.to_string_lossy().into_owned();
        assert!(
            text(&outside).starts_with("/w/shared/memprof/app-"),
            "{outside:?}"
        );
        let (_, other) = root_of(Path::new("/w/lib"), Path::new("/w/lib/../shared"));
        assert!(
            text(&other).starts_with("/w/shared/memprof/lib-"),
            "{other:?}"
        );
        assert_ne!(outside, other);
    }

    #[test]
    fn a_lock_file_names_every_package_of_the_users_build() {
        let dir = std::env::temp_dir().join(format!("memprof-locked-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lock = dir.join("Cargo.lock");
        std::fs::write(
            &lock,
            "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n\
             dependencies = [\"memchr\"]\n\n[[package]]\nname = \"memchr\"\n\
             version = \"2.7.4\"\nsource = \"registry+https://example.invalid/index\"\n",
        )
        .unwrap();
        let names = locked_packages(&lock).unwrap();
        assert_eq!(names, ["app", "memchr"].map(String::from).into());
        std::fs::write(&lock, "not [a lock").unwrap();
        assert_eq!(locked_packages(&lock), None);
        // Not a regular file: None, at once (a FIFO's read would block).
        std::fs::remove_file(&lock).unwrap();
        let fifo = std::ffi::CString::new(lock.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(locked_packages(&lock), None);
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(dir.join("missing"), &lock).unwrap();
        assert_eq!(locked_packages(&lock), None);
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(&lock, &lock).unwrap();
        assert_eq!(locked_packages(&lock), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(locked_packages(&lock), None);
    }
}
