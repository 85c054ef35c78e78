//! `cargo memprof`'s failures: each one lowercase line on stderr. Those
//! about what the user asked for (no package here, a name that is not in
//! the workspace, a `--fn` that matches nothing) exit 2, as clap's usage
//! errors do; the others 1.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum CargoError {
    /// `cargo metadata` found no Cargo.toml here or above.
    NotAPackage,
    /// `cargo metadata` failed otherwise: its own message.
    Metadata(String),
    /// `-p NAME` names no package of the workspace.
    UnknownPackage(String),
    /// `--dep NAME` names no dependency from a registry.
    UnknownDependency(String),
    /// `--dep NAME` names a package that memprof's runtime depends on
    /// (`via` its dependency of that name).
    MemprofNeeds { name: String, via: String },
    /// `--fn REGEX` matched no function of the selected packages.
    NoFunction(String),
    /// A `--fn` or `--skip-fn` that is not a regular expression.
    Regex(String),
    /// A `--sites` value that is not one: the message.
    Sites(String),
    /// A source file syn cannot parse (rustc would say more).
    Parse(String),
    /// Reading the user's tree or writing the shadow.
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A manifest toml_edit cannot read.
    Manifest { path: PathBuf, problem: String },
    /// cargo could not be started.
    Cargo(std::io::Error),
    /// Writing `--html`.
    Html(crate::error::Error),
}

impl CargoError {
    pub fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        CargoError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            CargoError::NotAPackage
            | CargoError::UnknownPackage(_)
            | CargoError::UnknownDependency(_)
            | CargoError::MemprofNeeds { .. }
            | CargoError::NoFunction(_)
            | CargoError::Regex(_)
            | CargoError::Sites(_) => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for CargoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CargoError::NotAPackage => {
                write!(f, "not in a cargo package: no Cargo.toml here or above")
            }
            CargoError::Metadata(m) => write!(f, "cargo metadata failed: {m}"),
            CargoError::UnknownPackage(n) => {
                write!(f, "no package named `{n}` in this workspace")
            }
            CargoError::UnknownDependency(n) => write!(
                f,
                "no dependency named `{n}` from the default registry: --dep takes a dependency's package name"
            ),
            CargoError::MemprofNeeds { name, via } => {
                let through = match name == via {
                    true => String::new(),
                    false => format!(" (through {via})"),
                };
                write!(
                    f,
                    "--dep {name}: memprof itself depends on {name}{through}, so an annotated copy would depend on itself; profile it in its own workspace"
                )
            }
            CargoError::NoFunction(r) => {
                write!(f, "--fn `{r}` matches no function of the selected packages")
            }
            CargoError::Regex(m) | CargoError::Sites(m) => write!(f, "{m}"),
            CargoError::Parse(m) => write!(f, "cannot parse {m}"),
            CargoError::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            CargoError::Manifest { path, problem } => {
                write!(f, "cannot read {}: {problem}", path.display())
            }
            CargoError::Cargo(e) => write!(f, "cannot run cargo: {e}"),
            CargoError::Html(e) => write!(f, "{e}"),
        }
    }
}
