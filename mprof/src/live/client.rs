//! The client side of `MEMPROF_LIVE`'s channel: the socket of a process,
//! found by the same rule the runtime made it by, and one request on it.

use crate::error::Error;
use memprof_runtime::live_rule::{self, ERROR, OK, SNAPSHOT};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// How long a snapshot may take to come: the program answers one client at
/// a time, and waits at most 2 s for each.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The places process `pid`'s socket may be: by mprof's environment, and by
/// the program's own (`/proc/PID/environ`, readable for one's own
/// processes), which may name another `XDG_RUNTIME_DIR` or `TMPDIR`.
fn candidates(pid: u32) -> Vec<PathBuf> {
    // SAFETY: a plain query.
    let uid = unsafe { libc::geteuid() };
    let mut places = vec![live_rule::socket_path(
        &live_rule::socket_dir(|name| std::env::var_os(name), uid),
        pid,
    )];
    if let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) {
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

/// Whether process `pid` exists.
pub fn is_running(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Connects to process `pid`'s channel.
fn connect(pid: u32) -> Result<UnixStream, Error> {
    if !is_running(pid) {
        return Err(Error::Live(format!("no process {pid}")));
    }
    let places = candidates(pid);
    let mut last = None;
    for place in &places {
        match UnixStream::connect(place) {
            Ok(stream) => return Ok(stream),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => last = Some((place, err)),
        }
    }
    Err(Error::Live(match last {
        Some((place, err)) => format!(
            "cannot connect to process {pid} at {}: {}",
            crate::printable::path(place),
            crate::error::describe(&err)
        ),
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
    let mut stream = connect(pid)?;
    let failed = |err: std::io::Error| {
        Error::Live(format!(
            "process {pid} did not answer: {}",
            crate::error::describe(&err)
        ))
    };
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(failed)?;
    stream
        .set_write_timeout(Some(ANSWER_TIMEOUT))
        .map_err(failed)?;
    stream
        .write_all(format!("{SNAPSHOT}\n").as_bytes())
        .map_err(failed)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(failed)?;
    let answer = String::from_utf8(answer).map_err(|_| {
        Error::Live(format!(
            "process {pid} answered with text that is not UTF-8"
        ))
    })?;
    parse_answer(pid, answer)
}

/// The document in an answer, or the program's refusal as an error.
fn parse_answer(pid: u32, answer: String) -> Result<String, Error> {
    let (first, rest) = answer.split_once('\n').unwrap_or((&answer, ""));
    if first == OK {
        return Ok(rest.to_owned());
    }
    let problem = first.strip_prefix(ERROR).unwrap_or(first);
    let problem = crate::printable::printable(problem.to_owned());
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
        let empty = parse_answer(7, String::new()).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "process 7 closed the connection without an answer"
        );
    }
}
