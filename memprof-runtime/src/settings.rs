//! The process's configuration: [`Config`] read once from the environment
//! (and whether the program is a test binary), with its warnings printed
//! once, outside every figure.

use crate::alloc::untracked;
use crate::config::Config;
use std::sync::OnceLock;

/// The configuration in force.
pub(crate) fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        untracked(|| {
            let (mut config, warnings) = Config::from_vars(|name| std::env::var_os(name));
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
