//! The client side of `MEMPROF_LIVE`'s channel: the socket of a process,
//! found by the same rule the runtime made it by and trusted only as the
//! program's (`trust`), and one request on it, whose answer is read within
//! a deadline and up to a size.

use crate::error::Error;
use memprof_runtime::live_rule::{self, ERROR, OK, SNAPSHOT};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a whole answer may take to come, from the connection: the
/// program answers one client at a time, and gives each at most
/// `live_rule`'s `REQUEST_DEADLINE` and `ANSWER_DEADLINE`.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes an answer may hold: a snapshot of 1,000 functions is
/// 1.5 MiB, and one of a GiB is past any program's report. A socket that
/// streams without end stops there, not when mprof runs out of memory.
pub const MAX_ANSWER: u64 = 1 << 30;

/// The places process `pid`'s socket may be: by mprof's environment, and by
/// the program's own (`/proc/PID/environ`, readable for one's own
/// processes; not on macOS), which may name another `XDG_RUNTIME_DIR` or
/// `TMPDIR`.
fn candidates(pid: u32) -> Vec<PathBuf> {
    // SAFETY: a plain query.
    let uid = unsafe { libc::geteuid() };
    let mut places = vec![live_rule::socket_path(
        &live_rule::socket_dir(|name| std::env::var_os(name), uid),
        pid,
    )];
    if let Some(environ) = crate::procfs::environ(pid) {
        let vars: Vec<(Vec<u8>, Vec<u8>)> = environ
            .split(|&b| b == 0)
            .filter_map(|entry| {
                let at = entry.iter().position(|&b| b == b'=')?;
                Some((entry[..at].to_vec(), entry[at + 1..].to_vec()))
            })
            .collect();
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name.as_bytes())
                .map(|(_, v)| OsString::from_vec(v.clone()))
        };
        let theirs = live_rule::socket_path(&live_rule::socket_dir(var, uid), pid);
        if !places.contains(&theirs) {
            places.push(theirs);
        }
    }
    places
}

/// The process to ask for `pid`'s channel: `pid` itself if a socket of its
/// is there; else the first process under it whose socket is, said on
/// stderr (a program under `cargo memprof run`, or a wrapper script, is a
/// child of the process whose pid `$!` gives); else `pid`, for `connect`
/// to say why not.
pub fn listening(pid: u32) -> u32 {
    let has_socket = |pid: u32| candidates(pid).iter().any(|p| p.exists());
    if has_socket(pid) {
        return pid;
    }
    let under = crate::procfs::descendants(pid);
    match under.into_iter().find(|&child| has_socket(child)) {
        Some(child) => {
            eprintln!(
                "mprof: process {pid} does not listen; process {child}, under it, does: asking it"
            );
            child
        }
        None => pid,
    }
}

/// Whether process `pid` exists.
pub fn is_running(pid: u32) -> bool {
    crate::procfs::is_running(pid)
}

/// Connects to process `pid`'s channel, at the first place that holds a
/// socket to trust.
fn connect(pid: u32) -> Result<UnixStream, Error> {
    if !is_running(pid) {
        return Err(Error::Live(format!("no process {pid}")));
    }
    // SAFETY: a plain query.
    let uid = unsafe { libc::geteuid() };
    let places = candidates(pid);
    let mut last = None;
    for place in &places {
        let dir = place.parent().unwrap_or(place);
        match super::trust::directory(dir, uid) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(problem) => {
                last = Some(format!("process {pid}: {problem}"));
                continue;
            }
        }
        match UnixStream::connect(place) {
            Ok(stream) => match super::trust::peer(&stream, place, uid) {
                Ok(()) => return Ok(stream),
                Err(problem) => last = Some(format!("process {pid}: {problem}")),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                last = Some(format!(
                    "cannot connect to process {pid} at {}: {}",
                    crate::printable::path(place),
                    crate::error::describe(&err)
                ));
            }
        }
    }
    Err(Error::Live(match last {
        Some(problem) => problem,
        None => format!(
            "process {pid} does not listen: start it with MEMPROF_LIVE=1 (it listens from its \
             first profiled call; looked for {})",
            crate::printable::path(&places[0])
        ),
    }))
}

/// The snapshot document of process `pid`: the report as it stands, in
/// `MEMPROF_JSON`'s schema, with its time and uptime.
pub fn snapshot(pid: u32) -> Result<String, Error> {
    snapshot_at_most(pid, MAX_ANSWER)
}

/// [`snapshot`], with an answer of at most `max` bytes.
pub fn snapshot_at_most(pid: u32, max: u64) -> Result<String, Error> {
    let mut stream = connect(pid)?;
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let failed = |err: std::io::Error| {
        Error::Live(format!(
            "process {pid} did not answer: {}",
            crate::error::describe(&err)
        ))
    };
    stream
        .set_write_timeout(Some(ANSWER_TIMEOUT))
        .map_err(failed)?;
    // A request the program did not take may still have its answer: a
    // refusal sent before the request was read.
    let sent = stream.write_all(format!("{SNAPSHOT}\n").as_bytes());
    let (answer, stopped) = read_answer(&mut stream, max, deadline);
    match stopped {
        Some(Stop::TooLong) => {
            return Err(Error::Live(format!(
                "process {pid} answered with more than {max} bytes; stopped reading"
            )));
        }
        // NOTE: a program that closes the connection with the request
        // unread (a refusal) resets it, after the answer it sent.
        Some(Stop::Failed(_)) if is_refusal(&answer) => {}
        Some(Stop::Failed(err)) => return Err(failed(err)),
        None if answer.is_empty() => sent.map_err(failed)?,
        None => {}
    }
    let answer = String::from_utf8(answer).map_err(|_| {
        Error::Live(format!(
            "process {pid} answered with text that is not UTF-8"
        ))
    })?;
    parse_answer(pid, answer)
}

/// Why reading an answer stopped before the program closed the connection.
enum Stop {
    TooLong,
    Failed(std::io::Error),
}

/// Reads `stream` to its end, by `deadline` and up to `max` bytes: what
/// came, and why it stopped short, if it did.
fn read_answer(stream: &mut UnixStream, max: u64, deadline: Instant) -> (Vec<u8>, Option<Stop>) {
    let mut answer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let late = std::io::Error::from(std::io::ErrorKind::TimedOut);
            return (answer, Some(Stop::Failed(late)));
        }
        if let Err(err) = stream.set_read_timeout(Some(left)) {
            return (answer, Some(Stop::Failed(err)));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return (answer, None),
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                if answer.len() as u64 > max {
                    return (answer, Some(Stop::TooLong));
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            // A read timeout is EAGAIN: "resource temporarily unavailable".
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                let late = std::io::Error::from(std::io::ErrorKind::TimedOut);
                return (answer, Some(Stop::Failed(late)));
            }
            Err(err) => return (answer, Some(Stop::Failed(err))),
        }
    }
}

/// Whether `answer` is a whole line of refusal.
fn is_refusal(answer: &[u8]) -> bool {
    answer.starts_with(ERROR.as_bytes()) && answer.contains(&b'\n')
}

/// The document in an answer, or the program's refusal as an error.
fn parse_answer(pid: u32, answer: String) -> Result<String, Error> {
    let (first, rest) = answer.split_once('\n').unwrap_or((&answer, ""));
    if first == OK {
        return Ok(rest.to_owned());
    }
    let problem = first.strip_prefix(ERROR).unwrap_or(first);
    // `error: refused: WHY`, another user's answer: said once.
    let problem = problem.strip_prefix("refused: ").unwrap_or(problem);
    let problem = crate::printable::printable(problem);
    Err(Error::Live(if problem.is_empty() {
        format!("process {pid} closed the connection without an answer")
    } else {
        format!("process {pid} refused: {problem}")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_document_or_one_line_of_refusal() {
        assert_eq!(parse_answer(7, "ok\n{}".into()).unwrap(), "{}");
        let refused = parse_answer(7, "error: unknown request \"x\"\n".into()).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "process 7 refused: unknown request \"x\""
        );
        let other_user = "error: refused: this program answers its own user only\n";
        assert_eq!(
            parse_answer(7, other_user.into()).unwrap_err().to_string(),
            "process 7 refused: this program answers its own user only"
        );
        let empty = parse_answer(7, String::new()).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "process 7 closed the connection without an answer"
        );
    }
}
