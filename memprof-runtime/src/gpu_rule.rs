//! Whose GPU memory NVML's figures show, this process's or the whole
//! devices': one rule for memprof's GPU columns and `mprof run --gpu`, so
//! that one column name means one thing. Not public API: used by the
//! runtime's `gpu` module and by `mprof`, which depends on this crate
//! without its `gpu` feature for it.
//!
//! The rule, as the README states it:
//! 1. `MEMPROF_GPU_MEMORY=process` or `device` decides (default `auto`).
//! 2. Under `auto`, where NVML's PIDs (the host's) are not ours (another PID
//!    namespace: a container), the devices' figures, from the start.
//! 3. Otherwise this process's figures (its entries in the devices' compute
//!    process lists), except while the devices' used memory has moved and
//!    the driver lists none of the watched processes with a figure: the
//!    devices' figures then, until the driver lists one (a program makes
//!    its CUDA context late, often inside a profiled call). Decided at each
//!    sample. Never a silent 0. This holds under `process` too: a forced
//!    choice that would show 0 is not kept.
//! 4. Once the driver has listed a watched process, being unlisted means
//!    holding nothing (its CUDA context is gone): this process's figures
//!    stay, at 0, even though the devices' memory moved (the driver keeps
//!    a few MiB after a context goes, and other processes come and go).

/// What the user asked for (`MEMPROF_GPU_MEMORY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// This process's figures where NVML can give them, else the devices'.
    Auto,
    /// This process's figures.
    Process,
    /// The devices' used memory, every process's.
    Device,
}

impl Asked {
    /// Parses `auto`, `process` or `device`, in any case.
    pub fn parse(value: &str) -> Option<Asked> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Asked::Auto),
            "process" => Some(Asked::Process),
            "device" => Some(Asked::Device),
            _ => None,
        }
    }
}

/// Whose memory the figures show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The watched processes' entries in the devices' process lists.
    Process,
    /// The devices' used memory, all processes, and why.
    Device(WhyDevice),
}

/// Why the figures are the devices'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhyDevice {
    /// `MEMPROF_GPU_MEMORY=device`.
    Asked,
    /// NVML's PIDs are not this PID namespace's.
    OtherPidNamespace,
    /// The devices' memory moved while the driver listed no watched
    /// process.
    Unlisted,
}

impl WhyDevice {
    /// The reason in a few words, for a header or a note.
    pub fn words(self) -> &'static str {
        match self {
            WhyDevice::Asked => "MEMPROF_GPU_MEMORY=device",
            WhyDevice::OtherPidNamespace => "NVML's PIDs are not this PID namespace's",
            WhyDevice::Unlisted => "the driver does not list this process",
        }
    }
}

/// Whose figures to start with; `pids_match` is [`pids_match_nvml`]'s answer.
pub fn at_start(asked: Asked, pids_match: bool) -> Whose {
    match asked {
        Asked::Device => Whose::Device(WhyDevice::Asked),
        Asked::Auto if !pids_match => Whose::Device(WhyDevice::OtherPidNamespace),
        Asked::Auto | Asked::Process => Whose::Process,
    }
}

/// Whose figures after a sample in which the driver did (`listed`) or did
/// not list a watched process with a figure, and the devices' used memory
/// did or did not differ from its value at the start (`device_moved`);
/// `listed_before`: whether an earlier sample listed one.
pub fn after_sample(now: Whose, listed: bool, device_moved: bool, listed_before: bool) -> Whose {
    match now {
        Whose::Process if !listed && device_moved && !listed_before => {
            Whose::Device(WhyDevice::Unlisted)
        }
        Whose::Device(WhyDevice::Unlisted) if listed => Whose::Process,
        whose => whose,
    }
}

/// Whether a sample must still ask the driver for the watched processes:
/// unless the figures are the devices' for good (asked for, or PIDs that
/// cannot be ours).
pub fn asks_for_processes(now: Whose) -> bool {
    matches!(now, Whose::Process | Whose::Device(WhyDevice::Unlisted))
}

/// Whether NVML's PIDs (the host's) are ours: true in the initial PID
/// namespace, false in a container's. Where this cannot be read, assume so.
pub fn pids_match_nvml() -> bool {
    /// The inode of the initial PID namespace, fixed by the kernel
    /// (`PROC_PID_INIT_INO`).
    const INITIAL_PID_NAMESPACE: &str = "pid:[4026531836]";
    match std::fs::read_link("/proc/self/ns/pid") {
        Ok(link) => link.as_os_str() == INITIAL_PID_NAMESPACE,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_then_the_pid_namespace_decide_at_start() {
        assert_eq!(
            at_start(Asked::Device, true),
            Whose::Device(WhyDevice::Asked)
        );
        assert_eq!(at_start(Asked::Process, false), Whose::Process);
        assert_eq!(at_start(Asked::Auto, true), Whose::Process);
        assert_eq!(
            at_start(Asked::Auto, false),
            Whose::Device(WhyDevice::OtherPidNamespace)
        );
    }

    #[test]
    fn process_figures_give_way_only_while_unlisted_and_the_device_moved() {
        let unlisted = Whose::Device(WhyDevice::Unlisted);
        assert_eq!(
            after_sample(Whose::Process, true, true, false),
            Whose::Process
        );
        assert_eq!(
            after_sample(Whose::Process, false, false, false),
            Whose::Process
        );
        assert_eq!(after_sample(Whose::Process, false, true, false), unlisted);
        assert_eq!(after_sample(unlisted, false, true, false), unlisted);
        // Once the driver lists the process (its CUDA context made late),
        // the figures are its own again.
        assert_eq!(after_sample(unlisted, true, true, false), Whose::Process);
        // Unlisted after that, the process holds nothing: its own 0, not
        // the devices' figures (an H200 read the driver's leftover 3.2 MiB
        // once examples/gpu's context was gone).
        assert_eq!(
            after_sample(Whose::Process, false, true, true),
            Whose::Process
        );
        assert!(asks_for_processes(unlisted));
        // Asked for, or PIDs that cannot be ours: the devices' for good.
        let asked = Whose::Device(WhyDevice::Asked);
        assert_eq!(after_sample(asked, true, true, true), asked);
        assert!(!asks_for_processes(asked));
        let namespace = Whose::Device(WhyDevice::OtherPidNamespace);
        assert_eq!(after_sample(namespace, true, true, true), namespace);
    }

    #[test]
    fn settings_parse_in_any_case() {
        assert_eq!(Asked::parse(" Device "), Some(Asked::Device));
        assert_eq!(Asked::parse("PROCESS"), Some(Asked::Process));
        assert_eq!(Asked::parse("auto"), Some(Asked::Auto));
        assert_eq!(Asked::parse("both"), None);
    }
}
