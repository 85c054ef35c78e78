//! `cargo memprof test|run`: every function of the selected packages
//! profiled, without a change to the user's tree. The steps, in order:
//! `cargo metadata` ([`shadow::Layout`]), annotating the packages' crates
//! ([`annotate`]), the shadow copy under `<target-dir>/memprof`
//! ([`shadow`], [`ancestors`], [`copy`]), cargo run there with its stderr mapped back to the user's
//! paths ([`invoke`]), and the merged report printed ([`output`]).

pub mod allocator;
mod ancestors;
pub mod annotate;
mod callers;
mod copy;
mod debug_info;
pub mod error;
mod expr_macros;
mod invoke;
mod output;
pub mod record;
pub mod shadow;
mod signals;

use annotate::{Selection, Tally};
use cargo_metadata::{Metadata, MetadataCommand, Package};
use error::CargoError;
use regex::Regex;
use shadow::{Layout, Profiled};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `test` or `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand {
    Test,
    Run,
}

impl Subcommand {
    fn name(self) -> &'static str {
        match self {
            Subcommand::Test => "test",
            Subcommand::Run => "run",
        }
    }
}

/// What `cargo memprof` was asked.
#[derive(Debug)]
pub struct Options {
    pub subcommand: Subcommand,
    /// Passed to cargo as given (after the subcommand).
    pub cargo_args: Vec<OsString>,
    pub only: Option<String>,
    pub skip: Vec<String>,
    pub deps: Vec<String>,
    pub top: usize,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// `--pprof`: where to write the report as a heap profile.
    pub pprof: Option<PathBuf>,
    /// `--sites`'s value: `all` (the flag alone), `sample` or
    /// `sample:<size>`.
    pub sites: Option<String>,
}

/// The cargo arguments before `--` (the rest goes to the program or the
/// test harness).
fn cargo_part(args: &[OsString]) -> &[OsString] {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    &args[..end]
}

/// The values of `long`/`short` in cargo's arguments (`-p a`, `-pa`,
/// `--package=a`).
pub(crate) fn values(args: &[OsString], long: &str, short: Option<&str>) -> Vec<String> {
    let args: Vec<String> = cargo_part(args)
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == long || Some(a.as_str()) == short {
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
            i += 1;
        } else if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            out.push(v.to_string());
        } else if let Some(v) = short
            .and_then(|s| a.strip_prefix(s))
            .filter(|v| !v.is_empty())
        {
            out.push(v.to_string());
        }
        i += 1;
    }
    out
}

fn has_flag(args: &[OsString], flag: &str) -> bool {
    cargo_part(args).iter().any(|a| a == flag)
}

/// `cargo metadata` of the workspace at `manifest` (or here); with
/// `no_deps`, without resolving, which would write a missing Cargo.lock:
/// the user's tree is read that way only.
fn metadata(
    cargo_args: &[OsString],
    manifest: Option<PathBuf>,
    no_deps: bool,
) -> Result<Metadata, CargoError> {
    let mut command = MetadataCommand::new();
    if let Some(path) = manifest {
        command.manifest_path(path);
    }
    if no_deps {
        command.no_deps();
    }
    if has_flag(cargo_args, "--offline") || has_flag(cargo_args, "--frozen") {
        command.other_options(vec!["--offline".to_string()]);
    }
    command.exec().map_err(|e| match e {
        cargo_metadata::Error::CargoMetadata { stderr } if stderr.contains("could not find") => {
            CargoError::NotAPackage
        }
        cargo_metadata::Error::CargoMetadata { stderr } => {
            CargoError::Metadata(stderr.trim().trim_start_matches("error: ").to_string())
        }
        e => CargoError::Metadata(e.to_string()),
    })
}

fn regex(flag: &str, pattern: &str) -> Result<Regex, CargoError> {
    Regex::new(pattern).map_err(|e| {
        let first = e.to_string();
        let reason = first.lines().last().unwrap_or_default().trim();
        let reason = reason.trim_start_matches("error: ").to_string();
        CargoError::Regex(format!(
            "{flag} `{pattern}` is not a regular expression: {reason}"
        ))
    })
}

/// The workspace members to profile: `-p` ones, or all of them.
fn selected_members<'m>(
    metadata: &'m Metadata,
    args: &[OsString],
) -> Result<Vec<&'m Package>, CargoError> {
    let members = metadata.workspace_packages();
    let named = values(args, "--package", Some("-p"));
    if named.is_empty() {
        return Ok(members);
    }
    let mut out = Vec::new();
    for name in named {
        match members.iter().find(|p| *p.name == name) {
            Some(p) => out.push(*p),
            None => return Err(CargoError::UnknownPackage(name)),
        }
    }
    Ok(out)
}

/// `--dep` packages: dependencies from the default registry, by name (patched in with `[patch.crates-io]`).
fn dependencies<'m>(
    metadata: &'m Metadata,
    names: &[String],
) -> Result<Vec<&'m Package>, CargoError> {
    names
        .iter()
        .map(|name| {
            let package = metadata
                .packages
                .iter()
                .find(|p| *p.name == *name && p.source.as_ref().is_some_and(|s| s.is_crates_io()))
                .ok_or_else(|| CargoError::UnknownDependency(name.clone()))?;
            match memprof_needs(metadata, name) {
                Some(via) => Err(CargoError::MemprofNeeds {
                    name: name.clone(),
                    via,
                }),
                None => Ok(package),
            }
        })
        .collect()
}

/// Whether memprof's runtime depends on the package `name`: an annotated
/// copy of it, which depends on memprof, would depend on itself. The
/// runtime's dependency through which it does, if so.
fn memprof_needs(metadata: &Metadata, name: &str) -> Option<String> {
    let resolve = metadata.resolve.as_ref()?;
    let name_of = |id: &cargo_metadata::PackageId| metadata[id].name.to_string();
    let deps_of = |id: &cargo_metadata::PackageId| {
        resolve
            .nodes
            .iter()
            .find(|n| n.id == *id)
            .map(|n| n.deps.iter().map(|d| d.pkg.clone()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let runtime = metadata
        .packages
        .iter()
        .find(|p| *p.name == *"memprof-runtime")?;
    for direct in deps_of(&runtime.id) {
        let mut seen = std::collections::BTreeSet::new();
        let mut next = vec![direct.clone()];
        while let Some(id) = next.pop() {
            if name_of(&id) == name {
                return Some(name_of(&direct));
            }
            if seen.insert(id.clone()) {
                next.extend(deps_of(&id));
            }
        }
    }
    None
}

fn is_proc_macro(package: &Package) -> bool {
    package
        .targets
        .iter()
        .any(|t| t.kind.contains(&cargo_metadata::TargetKind::ProcMacro))
}

/// The line printed before the build.
fn tally_line(tally: &Tally, proc_macros: usize) -> String {
    let mut left = Vec::new();
    let mut count = |n: usize, what: &str| {
        if n > 0 {
            left.push(format!("{n} {what}"));
        }
    };
    count(tally.const_fn, "const fn");
    count(tally.in_macros, "in macros");
    count(tally.already, "already annotated");
    count(tally.templates, "templates");
    count(tally.deselected, "by --fn/--skip-fn");
    count(
        tally.unmoved,
        "that moved no heap in an earlier run (the record in target/memprof; --fn . profiles them)",
    );
    count(
        tally.rare.len(),
        "called often that rarely moved the heap in an earlier run (below)",
    );
    count(proc_macros, "proc-macro crates");
    let files = if tally.files == 1 { "file" } else { "files" };
    let functions = if tally.annotated == 1 {
        "function"
    } else {
        "functions"
    };
    let mut line = format!(
        "annotated {} {functions} in {} {files}",
        tally.annotated, tally.files
    );
    if !left.is_empty() {
        line.push_str("; left as written: ");
        line.push_str(&left.join(", "));
    }
    if !tally.rare.is_empty() {
        let mut rare = tally.rare.clone();
        rare.sort();
        line.push_str(&format!(
            "\nleft as written, called {} times or more with at most one allocation in {} \
             calls (their bytes count in their callers' rows; --fn . profiles them): {}",
            grouped(record::HOT_CALLS),
            grouped(record::RARE_IN),
            rare.join(", ")
        ));
    }
    line
}

/// `n` with its thousands set apart by commas.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The copy's root manifest: `replace`'s edit of it when it is a package,
/// with `patches`, and a `[workspace]` table if it had none.
fn root_manifest_text(
    layout: &Layout,
    replace: &BTreeMap<PathBuf, Vec<u8>>,
    patches: &[(String, PathBuf)],
) -> Result<Vec<u8>, CargoError> {
    let path = layout.workspace.join("Cargo.toml");
    let mut root = if patches.is_empty() {
        match replace.get(&path) {
            Some(edited) => edited.clone(),
            None => shadow::edit_manifest(&path, &layout.workspace, shadow::Memprof::No, &[])?,
        }
    } else {
        let base = match replace.get(&path) {
            Some(edited) => String::from_utf8_lossy(edited).into_owned(),
            None => std::fs::read_to_string(&path).map_err(|e| CargoError::io("read", &path, e))?,
        };
        shadow::add_patches(&path, &base, patches)?
    };
    if !String::from_utf8_lossy(&root).contains("[workspace") {
        // NOTE: the original is a workspace of its own (cargo metadata says
        // so); under target/ the copy could be taken for a member of a
        // workspace above it.
        root.extend_from_slice(b"\n[workspace]\n");
    }
    Ok(root)
}

/// `cargo metadata` of the copy, with its dependencies resolved.
fn metadata_of_copy(options: &Options, layout: &Layout) -> Result<Metadata, CargoError> {
    metadata(
        &options.cargo_args,
        Some(layout.tree.join("Cargo.toml")),
        false,
    )
}

/// `cargo memprof clean`: removes everything memprof keeps under the
/// target directory of the workspace at `manifest` (or here): the copy,
/// its build, the report and the record of earlier runs. Returns what it
/// removed, if anything was there. NOTE: a `CARGO_MEMPROF_TARGET_DIR` of
/// the user's is theirs, and stays.
pub fn clean(manifest: Option<PathBuf>) -> Result<Option<PathBuf>, CargoError> {
    let metadata = metadata(&[], manifest, true)?;
    let root = Layout::new(&metadata).root;
    match std::fs::remove_dir_all(&root) {
        Ok(()) => Ok(Some(root)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CargoError::io("remove", &root, e)),
    }
}

/// Runs `cargo memprof`; returns the exit status (cargo's).
pub fn execute(options: &Options) -> Result<i32, CargoError> {
    let sites = options
        .sites
        .as_deref()
        .map(invoke::sites_setting)
        .transpose()?;
    let mut selection = Selection {
        only: options
            .only
            .as_deref()
            .map(|r| regex("--fn", r))
            .transpose()?,
        skip: if options.skip.is_empty() {
            None
        } else {
            Some(regex("--skip-fn", &options.skip.join("|"))?)
        },
        unmoved: Default::default(),
        rare: Default::default(),
    };
    let manifest = values(&options.cargo_args, "--manifest-path", None).pop();
    let metadata = metadata(&options.cargo_args, manifest.map(PathBuf::from), true)?;
    let layout = Layout::new(&metadata);
    let lock = layout.workspace.join("Cargo.lock");
    // The packages the user's own build compiles: the workspace's members
    // and every package of its Cargo.lock. None without a lock file.
    let user_packages: Option<BTreeSet<String>> =
        shadow::locked_packages(&lock).map(|mut locked| {
            locked.extend(metadata.packages.iter().map(|p| p.name.to_string()));
            locked
        });
    let record_path = layout
        .root
        .join(record::file_name(options.subcommand.name()));
    let mut record = record::Record::read(&record_path);
    // `--fn` chooses by path alone: the record is not read for it.
    if options.only.is_none() {
        selection.unmoved = record.unmoved();
        selection.rare = record.rare();
    }
    let members = selected_members(&metadata, &options.cargo_args)?;
    let profiled: Vec<Profiled> = members
        .iter()
        .map(|p| Profiled {
            package: p,
            dest: layout.mirror(
                p.manifest_path
                    .parent()
                    .map_or(Path::new(""), |d| d.as_std_path()),
            ),
        })
        .collect();
    let (mut annotation, mut proc_macros) = shadow::annotate_packages(&profiled, &selection)?;
    // Callers of what changed since the record are profiled too: their
    // calls may move the heap through it now.
    let changed: BTreeSet<String> = annotation
        .functions
        .iter()
        .filter(|f| record.is_new_or_changed(&f.path, f.hash))
        .map(|f| callers::last_segment(&f.path).to_owned())
        .collect();
    let again = callers::to_profile(&annotation.left, changed);
    if !again.is_empty() {
        for key in again {
            selection.unmoved.remove(&key);
            selection.rare.remove(&key);
        }
        (annotation, proc_macros) = shadow::annotate_packages(&profiled, &selection)?;
    }

    // The workspace's files as the copy holds them.
    let mut replace: BTreeMap<PathBuf, Vec<u8>> = annotation
        .files
        .iter()
        .map(|(path, text)| (path.clone(), text.clone().into_bytes()))
        .collect();
    let with_memprof = if annotation.allocator_files.is_empty() {
        shadow::Memprof::WithAllocator
    } else {
        shadow::Memprof::WithoutAllocator
    };
    for package in metadata.packages.iter() {
        let manifest = package.manifest_path.as_std_path();
        // NOTE: a proc-macro package stays as written, without memprof.
        let is_profiled = members.iter().any(|m| m.id == package.id) && !is_proc_macro(package);
        let memprof = if is_profiled {
            with_memprof
        } else {
            shadow::Memprof::No
        };
        let edited = shadow::edit_manifest(manifest, &layout.workspace, memprof, &[])?;
        replace.insert(manifest.to_path_buf(), edited);
    }
    let root_manifest = layout.workspace.join("Cargo.toml");
    let root = root_manifest_text(&layout, &replace, &[])?;
    replace.insert(root_manifest.clone(), root);
    copy::tag_as_cache(&layout.root)?;
    ancestors::mirror_ancestors(&layout.real_workspace, &layout.top)?;
    copy::copy_tree(
        &layout.workspace,
        &layout.tree,
        &[&layout.user_target, &lock],
        &replace,
    )?;
    shadow::copy_lock(&lock, &layout)?;

    // `--dep` packages, found in the copy's resolution (which may write
    // the copy's Cargo.lock, never the user's).
    let (dep_copies, dep_annotation, dep_proc_macros, resolved);
    if options.deps.is_empty() {
        dep_copies = Vec::new();
        dep_annotation = annotate::CrateAnnotation::default();
        dep_proc_macros = 0;
    } else {
        resolved = metadata_of_copy(options, &layout)?;
        let deps = dependencies(&resolved, &options.deps)?;
        dep_copies = deps
            .iter()
            .map(|p| Profiled {
                package: p,
                dest: layout.deps.join(format!("{}-{}", p.name, p.version)),
            })
            .collect::<Vec<_>>();
        (dep_annotation, dep_proc_macros) = shadow::annotate_packages(&dep_copies, &selection)?;
        for dep in &dep_copies {
            let dir = dep
                .package
                .manifest_path
                .parent()
                .map_or(Path::new(""), |d| d.as_std_path());
            let mut replace: BTreeMap<PathBuf, Vec<u8>> = dep_annotation
                .files
                .iter()
                .filter(|(path, _)| path.starts_with(dir))
                .map(|(path, text)| (path.clone(), text.clone().into_bytes()))
                .collect();
            let manifest = dep.package.manifest_path.as_std_path();
            replace.insert(
                manifest.to_path_buf(),
                shadow::edit_manifest(manifest, dir, with_memprof, &[])?,
            );
            copy::copy_tree(dir, &dep.dest, &[], &replace)?;
        }
        let patches: Vec<(String, PathBuf)> = dep_copies
            .iter()
            .map(|d| (d.package.name.to_string(), d.dest.clone()))
            .collect();
        let root = root_manifest_text(&layout, &replace, &patches)?;
        shadow::write_if_changed(&layout.mirror(&root_manifest), &root)?;
    }
    let mut tally = annotation.tally.clone();
    tally.add(&dep_annotation.tally);
    if let Some(pattern) = &options.only
        && tally.annotated == 0
    {
        return Err(CargoError::NoFunction(pattern.clone()));
    }
    eprintln!("{}", tally_line(&tally, proc_macros + dep_proc_macros));

    let report = layout.root.join("report.json");
    match std::fs::remove_file(&report) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(CargoError::io("remove", &report, e)),
    }
    let reports = layout.root.join("reports");
    output::clear(&reports)?;
    let mut functions = annotation.functions;
    functions.extend(dep_annotation.functions);
    let mut left = annotation.left;
    left.extend(dep_annotation.left);
    let dep_dirs: Vec<(PathBuf, PathBuf)> = dep_copies
        .iter()
        .map(|d| {
            let original = d
                .package
                .manifest_path
                .parent()
                .map_or(Path::new(""), |p| p.as_std_path());
            (d.dest.clone(), original.to_path_buf())
        })
        .collect();
    let outcome = invoke::run_cargo(&invoke::Invocation {
        options,
        layout: &layout,
        reports: &reports,
        dep_dirs: dep_dirs.clone(),
        functions: &functions,
        sites,
        user_packages: user_packages.as_ref(),
    })?;
    let mut renames: Vec<(String, String)> = dep_copies
        .iter()
        .map(|d| {
            let to = format!("{}-{}", d.package.name, d.package.version);
            (d.dest.display().to_string(), to)
        })
        .collect();
    renames.push((format!("{}/", layout.tree.display()), String::new()));
    let gathered = output::gather(&reports)?;
    if let Some(printed) = output::print(gathered, &report, options, &renames, outcome == 0)? {
        record.update(&functions, &left, &printed, &layout.tree);
        std::fs::create_dir_all(&layout.root)
            .map_err(|e| CargoError::io("create", &layout.root, e))?;
        record.write(&record_path)?;
    }
    Ok(outcome)
}
