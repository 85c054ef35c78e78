//! The process's configuration: [`Config`] read once from the environment
//! (and whether the program is a test binary), with its warnings printed
//! once, outside every figure.

use crate::alloc::untracked;
use crate::config::Config;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The configuration in force.
pub(crate) fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        untracked(|| {
            let (mut config, warnings) = Config::from_vars(|name| std::env::var_os(name));
            if let Some(json) = &mut config.json {
                from_start_dir(json);
            }
            if let Some(pprof) = &mut config.pprof {
                from_start_dir(pprof);
            }
            if let crate::config::Output::File(path) = &mut config.output {
                from_start_dir(path);
            }
            config.test_binary =
                std::env::current_exe().is_ok_and(|exe| crate::config::is_test_binary(&exe));
            for warning in warnings {
                crate::stdio::warning!("{warning}");
            }
            crate::sites::configure(config.sites, config.sites_seed);
            config
        })
    })
}

/// The working directory as the program loaded: relative output paths
/// (`MEMPROF_JSON`, `MEMPROF_OUTPUT`) are resolved against it, so that a
/// program that changes directory before its first profiled call, or before
/// it exits, writes its report where it was started.
static START_DIR: OnceLock<Option<PathBuf>> = OnceLock::new();

crate::os::run_at_load!(NOTE_START_DIR = note_start_dir);

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
extern "C" fn note_start_dir() {
    untracked(|| START_DIR.get_or_init(|| std::env::current_dir().ok()));
}

// Whether `MEMPROF_SITES` asks for sites, noted as the program loads:
// the configuration is read at the first profiled call, and threads
// started before it must already report their frees to sites (see
// `sites::follow_every_thread`).
crate::os::run_at_load!(NOTE_SITES_WANTED = note_sites_wanted);

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
extern "C" fn note_sites_wanted() {
    untracked(|| {
        let wanted = std::env::var("MEMPROF_SITES")
            .ok()
            .and_then(|v| crate::config::parse_sites(&v))
            .is_some_and(|mode| mode != crate::config::SitesMode::Off);
        if wanted {
            crate::sites::wanted_at_load();
        }
    });
}

fn from_start_dir(path: &mut PathBuf) {
    if let Some(Some(dir)) = START_DIR.get()
        && path.is_relative()
    {
        *path = dir.join(&*path);
    }
}
