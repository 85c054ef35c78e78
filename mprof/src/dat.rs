//! The `.dat` file: memory_profiler's format, plus two series of memprof's.
//!
//! ```text
//! CMDLINE <command line>
//! MEM <MiB %.6f> <unix time %.4f>              RSS of the program
//! CHLD <pid> <MiB %.6f> <unix time %.4f>       RSS of one child (--multiprocess)
//! FUNC <name> <MiB> <t_start> <MiB> <t_end> <depth>   one profiled call, or
//!                                              the interval covered by overlapping ones
//! CALLS <name> <depth> <calls> <seconds %.6f>  exact totals of a function's calls at a
//!                                              depth: their number, and the wall time
//!                                              during which at least one of them ran
//! SHORT <name> <calls> <seconds %.6f>          calls too short to plot (memprof before CALLS)
//! HEAP <MiB %.6f> <unix time %.4f>             memprof's exact heap in use
//! GPU <MiB %.6f> <unix time %.4f>              GPU memory of the program (--gpu)
//! ```
//!
//! memory_profiler's reader skips the lines whose prefix it does not know, so
//! it reads these files unchanged. So does this one, for uppercase prefixes;
//! any other line that does not parse is skipped with one warning per file.

use crate::error::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One sample of a series: seconds since the epoch, and MiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub time: f64,
    pub mib: f64,
}

/// One call of a profiled function, from a `FUNC` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub start: Sample,
    pub end: Sample,
    /// Nesting depth of profiled calls, 0 for an outermost one. Old
    /// memory_profiler files have none.
    pub depth: Option<u32>,
}

impl Call {
    pub fn duration(&self) -> f64 {
        self.end.time - self.start.time
    }
}

/// The calls of one profiled function that were too short to show on a plot
/// (under a tenth of the interval), from a `SHORT` line: memprof writes
/// these instead of a `FUNC` line per call.
#[derive(Debug, Clone, PartialEq)]
pub struct ShortCalls {
    pub name: String,
    pub calls: u64,
    /// Time spent in them, together.
    pub seconds: f64,
}

/// The exact totals of one profiled function's calls at one depth, from a
/// `CALLS` line: memprof merges overlapping calls into one `FUNC` interval
/// and leaves out intervals too short to plot, so these count what the
/// `FUNC` lines cannot.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTotals {
    pub name: String,
    pub depth: u32,
    pub calls: u64,
    /// Wall time during which at least one of the calls ran.
    pub covered: f64,
}

/// Everything one `.dat` file holds, each series sorted by time.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub path: PathBuf,
    pub cmdline: Option<String>,
    /// `MEM`: resident set size of the program (and its children with
    /// `--include-children`).
    pub mem: Vec<Sample>,
    /// `CHLD`, by child process id.
    pub children: BTreeMap<u32, Vec<Sample>>,
    /// `FUNC`, in order of their start, outer calls first.
    pub calls: Vec<Call>,
    /// `SHORT`: calls left out of `calls`, counted per function (files of
    /// memprof before `CALLS`).
    pub short: Vec<ShortCalls>,
    /// `CALLS`: every call, counted per function and depth.
    pub totals: Vec<CallTotals>,
    /// `HEAP`: the exact heap in use, recorded by memprof's runtime.
    pub heap: Vec<Sample>,
    /// `GPU`: GPU memory of the program.
    pub gpu: Vec<Sample>,
}

/// Lines that did not parse, reported once per file.
#[derive(Debug, Default)]
pub struct Skipped {
    pub count: usize,
    /// Line number and text of the first one.
    pub first: Option<(usize, String)>,
}

impl Profile {
    /// Reads and checks a file: it must hold at least one `MEM` sample.
    /// Lines that do not parse are skipped, with one warning on stderr.
    pub fn read(path: &Path) -> Result<Profile, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
        let text = String::from_utf8_lossy(&bytes);
        let (profile, skipped) = Profile::parse(path, &text);
        if profile.mem.is_empty() {
            return Err(Error::NoSamples(path.to_path_buf()));
        }
        if let Some((line, text)) = &skipped.first {
            let others = match skipped.count {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            eprintln!(
                "mprof: warning: {}: skipped malformed line {line} ({:?}){others}",
                crate::printable::path(path),
                shorten(text, 60)
            );
        }
        Ok(profile)
    }

    /// Parses the text of a file, collecting what does not parse.
    pub fn parse(path: &Path, text: &str) -> (Profile, Skipped) {
        let mut profile = Profile {
            path: path.to_path_buf(),
            ..Profile::default()
        };
        let mut skipped = Skipped::default();
        for (index, line) in text.lines().enumerate() {
            if parse_line(&mut profile, line).is_none() {
                skipped.count += 1;
                skipped
                    .first
                    .get_or_insert_with(|| (index + 1, line.to_string()));
            }
        }
        let by_time = |a: &Sample, b: &Sample| a.time.total_cmp(&b.time);
        profile.mem.sort_by(by_time);
        profile.heap.sort_by(by_time);
        profile.gpu.sort_by(by_time);
        for samples in profile.children.values_mut() {
            samples.sort_by(by_time);
        }
        // Outer calls first where nested ones start at the same time.
        profile
            .calls
            .sort_by(|a, b| (a.start.time.total_cmp(&b.start.time)).then(a.depth.cmp(&b.depth)));
        (profile, skipped)
    }

    /// The highest `MEM` sample, as `mprof peak` reports it.
    pub fn peak(&self) -> Option<Sample> {
        peak(&self.mem)
    }
}

/// The highest sample of a series; the first of equal ones.
pub fn peak(samples: &[Sample]) -> Option<Sample> {
    samples
        .iter()
        .copied()
        .reduce(|best, s| if s.mib > best.mib { s } else { best })
}

/// `Some(())` when the line was understood (or is one to skip silently).
fn parse_line(profile: &mut Profile, line: &str) -> Option<()> {
    let (prefix, rest) = line.split_once(' ').unwrap_or((line, ""));
    match prefix {
        "CMDLINE" => profile.cmdline = Some(crate::printable::printable(rest).into_owned()),
        "MEM" => profile.mem.push(sample(rest)?),
        "HEAP" => profile.heap.push(sample(rest)?),
        "GPU" => profile.gpu.push(sample(rest)?),
        "CHLD" => {
            let (pid, rest) = rest.split_once(' ')?;
            let pid = pid.parse().ok()?;
            let sample = sample(rest)?;
            profile.children.entry(pid).or_default().push(sample);
        }
        "FUNC" => profile.calls.push(call(rest)?),
        "SHORT" => profile.short.push(short_calls(rest)?),
        "CALLS" => profile.totals.push(call_totals(rest)?),
        // Another tool's series: memory_profiler skips these too.
        _ if !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') => {}
        _ => return None,
    }
    Some(())
}

fn number(field: Option<&str>) -> Option<f64> {
    field?.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The largest memory figure a line may hold, in MiB: 2^64 bytes, past which
/// no process's memory goes and memprof's JSON reader refuses byte figures.
const MAX_MIB: f64 = 17_592_186_044_416.0;

/// A memory figure: a number, never below zero nor above [`MAX_MIB`].
fn memory(field: Option<&str>) -> Option<f64> {
    number(field).filter(|mib| (0.0..=MAX_MIB).contains(mib))
}

/// `<MiB> <time>`.
fn sample(rest: &str) -> Option<Sample> {
    let mut fields = rest.split(' ');
    let mib = memory(fields.next())?;
    let time = number(fields.next())?;
    fields.next().is_none().then_some(Sample { time, mib })
}

/// A function's name, [`printable`](crate::printable) as every output shows
/// it.
fn function_name(field: Option<&str>) -> Option<String> {
    let name = field.filter(|n| !n.is_empty())?;
    Some(crate::printable::printable(name).into_owned())
}

/// `<name> <mem_start> <t_start> <mem_end> <t_end> [<depth>]`.
fn call(rest: &str) -> Option<Call> {
    let mut fields = rest.split(' ');
    let name = function_name(fields.next())?;
    let start_mib = memory(fields.next())?;
    let start_time = number(fields.next())?;
    let end_mib = memory(fields.next())?;
    let end_time = number(fields.next())?;
    let depth = match fields.next() {
        Some(depth) => Some(depth.parse().ok()?),
        None => None,
    };
    if fields.next().is_some() || end_time < start_time {
        return None;
    }
    Some(Call {
        name,
        start: Sample {
            time: start_time,
            mib: start_mib,
        },
        end: Sample {
            time: end_time,
            mib: end_mib,
        },
        depth,
    })
}

/// `<name> <calls> <seconds>`.
fn short_calls(rest: &str) -> Option<ShortCalls> {
    let mut fields = rest.split(' ');
    let name = function_name(fields.next())?;
    let calls = fields.next()?.parse().ok()?;
    let seconds = number(fields.next())?;
    fields.next().is_none().then_some(ShortCalls {
        name,
        calls,
        seconds,
    })
}

/// `<name> <depth> <calls> <seconds>`.
fn call_totals(rest: &str) -> Option<CallTotals> {
    let mut fields = rest.split(' ');
    let name = function_name(fields.next())?;
    let depth = fields.next()?.parse().ok()?;
    let calls = fields.next()?.parse().ok()?;
    let covered = number(fields.next())?;
    fields.next().is_none().then_some(CallTotals {
        name,
        depth,
        calls,
        covered,
    })
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The line for one sample of a series (`MEM`, `HEAP`, `GPU`).
pub fn sample_line(prefix: &str, mib: f64, time: f64) -> String {
    format!("{prefix} {mib:.6} {time:.4}\n")
}

/// The `CHLD` line for one child's sample.
pub fn child_line(pid: u32, mib: f64, time: f64) -> String {
    format!("CHLD {pid} {mib:.6} {time:.4}\n")
}

/// The command line as memory_profiler writes it: arguments joined by
/// spaces, those with a blank in single quotes.
pub fn cmdline(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.contains([' ', '\t']) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memory_profilers_lines_and_ours() {
        let text = "CMDLINE python3 'my script.py'\n\
                    MEM 3.023438 1795300840.7337\n\
                    MEM 160.000000 1795300840.8341\n\
                    CHLD 4242 12.500000 1795300840.8341\n\
                    FUNC __main__.inner 22.8594 1795300873.6301 30.4922 1795300873.7859 1\n\
                    FUNC old.style 1.0 2.0 3.0 4.0\n\
                    HEAP 1.500000 1795300840.8000\n\
                    GPU 300.000000 1795300840.8000\n\
                    SHORT app::parse 200000 0.412345\n\
                    CALLS app::handle 0 6000 3.195877\n\
                    FUTURE 1 2 3\n";
        let (p, skipped) = Profile::parse(Path::new("x.dat"), text);
        assert_eq!(skipped.count, 0);
        assert_eq!(p.cmdline.as_deref(), Some("python3 'my script.py'"));
        assert_eq!(p.mem.len(), 2);
        assert_eq!(p.children[&4242].len(), 1);
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[1].depth, Some(1));
        assert_eq!(p.calls[0].depth, None);
        assert_eq!(p.heap.len(), 1);
        assert_eq!(p.gpu.len(), 1);
        assert_eq!(
            p.short,
            [ShortCalls {
                name: "app::parse".into(),
                calls: 200_000,
                seconds: 0.412345
            }]
        );
        assert_eq!(
            p.totals,
            [CallTotals {
                name: "app::handle".into(),
                depth: 0,
                calls: 6000,
                covered: 3.195877
            }]
        );
        assert_eq!(p.peak().unwrap().mib, 160.0);
    }

    #[test]
    fn skips_garbage_and_truncated_lines() {
        let text = "MEM 1.0 10.0\n\u{1}\u{2}garbage\nMEM 2.0\nFUNC f 1 2 3\nSHORT f x 1.0\nCALLS f 1 2\nMEM 1.5 1";
        let (p, skipped) = Profile::parse(Path::new("x.dat"), text);
        assert_eq!(p.mem.len(), 2);
        assert_eq!(skipped.count, 5);
        assert_eq!(skipped.first.unwrap().0, 2);
    }

    #[test]
    fn a_memory_figure_past_two_to_the_64_bytes_is_a_malformed_line() {
        assert_eq!(MAX_MIB, (1u128 << 64) as f64 / 1_048_576.0);
        let text = "MEM 1e308 1.0\nMEM 17592186044417 1.5\nMEM 17592186044416 2.0\nMEM 2.0 3.0\n";
        let (p, skipped) = Profile::parse(Path::new("x.dat"), text);
        assert_eq!(skipped.count, 2);
        assert_eq!(p.mem.len(), 2);
        assert_eq!(p.peak().unwrap().mib, MAX_MIB);
    }

    #[test]
    fn a_negative_memory_figure_is_a_malformed_line() {
        let text =
            "MEM -5.0 1.0\nMEM 2.0 2.0\nHEAP -1.0 2.0\nCHLD 7 -3.0 2.0\nFUNC f -1.0 1.0 2.0 2.0\n";
        let (p, skipped) = Profile::parse(Path::new("x.dat"), text);
        assert_eq!(skipped.count, 4);
        assert_eq!(skipped.first.unwrap().0, 1);
        assert_eq!(p.mem.len(), 1);
        assert_eq!(p.peak().unwrap().mib, 2.0);
        assert!(p.heap.is_empty() && p.children.is_empty() && p.calls.is_empty());
        // A file of negative samples only has no samples: `mprof peak`
        // answers with an error, not a negative peak.
        let (p, _) = Profile::parse(Path::new("x.dat"), "MEM -5.0 1.0\n");
        assert!(p.peak().is_none());
    }

    #[test]
    fn formats_as_memory_profiler() {
        assert_eq!(
            sample_line("MEM", 3.0234375, 1795300840.73371),
            "MEM 3.023438 1795300840.7337\n"
        );
        assert_eq!(child_line(7, 1.0, 2.0), "CHLD 7 1.000000 2.0000\n");
        let args = ["prog".to_string(), "a b".to_string()];
        assert_eq!(cmdline(&args), "prog 'a b'");
    }
}
