//! Files and lines in every profiled build: the profile cargo builds with,
//! and the `--config` that raises its debug information to `limited`
//! where it holds less, so that allocation sites and pprof locations have
//! a file and line in `--release` too. A user's own setting at or above
//! that is kept; where the profile strips debug information, the copy's
//! build keeps it.
//!
//! NOTE: `limited`, not `line-tables-only`: with line tables alone, a
//! frame inlined into another is named by its last segment (`squares`,
//! `{closure#0}`), and a site's stack loses its paths.

use super::{Subcommand, cargo_part, values};
use std::ffi::OsString;
use std::path::Path;

/// Whether a profile's `debug` setting gives `limited` debug information
/// or more: not for `false`, `0`, `"none"`, `"line-directives-only"` and
/// `"line-tables-only"`; `None` for a value cargo would refuse.
fn is_limited_or_more(setting: &toml_edit::Item) -> Option<bool> {
    if let Some(b) = setting.as_bool() {
        return Some(b);
    }
    if let Some(n) = setting.as_integer() {
        return Some(n >= 1);
    }
    match setting.as_str()? {
        "none" | "line-directives-only" | "line-tables-only" => Some(false),
        "limited" | "full" => Some(true),
        _ => None,
    }
}

/// The same, for a `CARGO_PROFILE_<NAME>_DEBUG` value.
fn env_is_limited_or_more(value: &str) -> Option<bool> {
    match value {
        "false" | "0" | "none" | "line-directives-only" | "line-tables-only" => Some(false),
        "true" | "1" | "2" | "limited" | "full" => Some(true),
        _ => None,
    }
}

/// The profile cargo builds with: `--profile`'s, `release` for
/// `--release`, else `dev` (`test` under `cargo test`).
fn profile_name(subcommand: Subcommand, args: &[OsString]) -> String {
    if let Some(name) = values(args, "--profile", None).pop() {
        return name;
    }
    if cargo_part(args)
        .iter()
        .any(|a| a == "--release" || a == "-r")
    {
        return "release".to_owned();
    }
    match subcommand {
        Subcommand::Test => "test",
        Subcommand::Run => "dev",
    }
    .to_owned()
}

/// The profiles `name` takes its settings from, itself first, through
/// `inherits` and the built-in profiles' parents (`test` from `dev`,
/// `bench` from `release`).
fn chain(manifest: Option<&toml_edit::DocumentMut>, name: &str) -> Vec<String> {
    let mut out = vec![name.to_owned()];
    // NOTE: bounded: profiles that inherit in a circle are cargo's error,
    // not a loop here.
    while out.len() < 8 {
        let last = &out[out.len() - 1];
        let inherits = manifest
            .and_then(|m| m.get("profile"))
            .and_then(|p| p.get(last))
            .and_then(|p| p.get("inherits"))
            .and_then(|i| i.as_str());
        let parent = match (inherits, last.as_str()) {
            (Some(parent), _) => parent,
            (None, "test") => "dev",
            (None, "bench") => "release",
            (None, _) => break,
        };
        out.push(parent.to_owned());
    }
    out
}

/// The first of `chain`'s profiles to set `key`: its value.
fn setting(
    manifest: Option<&toml_edit::DocumentMut>,
    chain: &[String],
    key: &str,
) -> Option<toml_edit::Item> {
    let profiles = manifest?.get("profile")?;
    chain
        .iter()
        .find_map(|name| profiles.get(name)?.get(key).cloned())
}

/// The `--config` arguments that give the build `limited` debug
/// information, if its profile (in `workspace_manifest` or
/// `CARGO_PROFILE_<NAME>_DEBUG`) has less, and keep it from being
/// stripped.
pub fn config_args(
    subcommand: Subcommand,
    args: &[OsString],
    workspace_manifest: &Path,
) -> Vec<String> {
    let name = profile_name(subcommand, args);
    let manifest: Option<toml_edit::DocumentMut> = std::fs::read_to_string(workspace_manifest)
        .ok()
        .and_then(|text| text.parse().ok());
    let chain = chain(manifest.as_ref(), &name);
    let env_name = name.to_uppercase().replace('-', "_");
    let from_env = std::env::var(format!("CARGO_PROFILE_{env_name}_DEBUG"))
        .ok()
        .and_then(|v| env_is_limited_or_more(&v));
    let from_manifest =
        setting(manifest.as_ref(), &chain, "debug").and_then(|s| is_limited_or_more(&s));
    // Cargo's defaults: full debug information in dev and test, none in
    // release and bench, whose settings a custom profile inherits.
    let default = chain.last().is_some_and(|base| base == "dev");
    let mut out = Vec::new();
    if !from_env.or(from_manifest).unwrap_or(default) {
        out.push(format!("profile.{name}.debug=\"limited\""));
    }
    let strip_env = std::env::var(format!("CARGO_PROFILE_{env_name}_STRIP")).ok();
    let strip = strip_env.or_else(|| {
        let item = setting(manifest.as_ref(), &chain, "strip")?;
        item.as_bool()
            .map(|b| b.to_string())
            .or_else(|| item.as_str().map(str::to_owned))
    });
    // NOTE: `strip = "symbols"` removes the names too: the copy's build
    // keeps both, as the plain build's tables would need them.
    if strip.is_some_and(|s| matches!(s.as_str(), "true" | "debuginfo" | "symbols")) {
        out.push(format!("profile.{name}.strip=\"none\""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_for(manifest: &str, subcommand: Subcommand, args: &[&str]) -> Vec<String> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("memprof-debug-info-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("Cargo.toml");
        std::fs::write(&path, manifest).unwrap();
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let out = config_args(subcommand, &args, &path);
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn release_gets_limited_debug_information_unless_it_has_it() {
        let lines = "profile.release.debug=\"limited\"";
        let none = "[package]\nname = \"a\"\n";
        assert_eq!(args_for(none, Subcommand::Run, &["--release"]), [lines]);
        assert_eq!(args_for(none, Subcommand::Test, &["-r"]), [lines]);
        assert!(args_for(none, Subcommand::Run, &[]).is_empty());
        assert!(args_for(none, Subcommand::Test, &[]).is_empty());
        // After `--`, the program's arguments.
        assert!(args_for(none, Subcommand::Run, &["--", "--release"]).is_empty());
        let kept = "[profile.release]\ndebug = 1\n";
        assert!(args_for(kept, Subcommand::Run, &["--release"]).is_empty());
        let full = "[profile.release]\ndebug = \"full\"\n";
        assert!(args_for(full, Subcommand::Run, &["--release"]).is_empty());
        for below in ["line-directives-only", "line-tables-only"] {
            let manifest = format!("[profile.release]\ndebug = \"{below}\"\n");
            assert_eq!(
                args_for(&manifest, Subcommand::Run, &["--release"]),
                [lines]
            );
        }
        let dev_off = "[profile.dev]\ndebug = false\n";
        assert_eq!(
            args_for(dev_off, Subcommand::Test, &[]),
            ["profile.test.debug=\"limited\""]
        );
    }

    #[test]
    fn a_custom_profile_is_followed_through_inherits_and_stripping_is_undone() {
        let manifest = "[profile.fast]\ninherits = \"release\"\nstrip = true\n\
                        [profile.slow]\ninherits = \"dev\"\n";
        assert_eq!(
            args_for(manifest, Subcommand::Run, &["--profile", "fast"]),
            [
                "profile.fast.debug=\"limited\"",
                "profile.fast.strip=\"none\""
            ]
        );
        assert!(args_for(manifest, Subcommand::Run, &["--profile=slow"]).is_empty());
        let symbols = "[profile.release]\ndebug = 2\nstrip = \"symbols\"\n";
        assert_eq!(
            args_for(symbols, Subcommand::Run, &["--release"]),
            ["profile.release.strip=\"none\""]
        );
    }
}
