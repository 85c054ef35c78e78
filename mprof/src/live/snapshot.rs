//! `mprof snapshot PID [-o FILE]`: a running program's report as it stands,
//! to stdout or to a file written as `MEMPROF_JSON` is (by rename, never
//! through a link).

use crate::error::Error;
use std::io::Write;
use std::path::Path;

/// Takes process `pid`'s snapshot and writes it to `output`, or to stdout.
pub fn snapshot(pid: u32, output: Option<&Path>) -> Result<i32, Error> {
    let mut document = super::client::snapshot(super::client::listening(pid))?;
    document.push('\n');
    match output {
        Some(path) => {
            memprof_runtime::safe_file::write(path, document.as_bytes())
                .map_err(|e| Error::io("write", path, e))?;
            eprintln!("mprof: wrote {}", crate::printable::path(path));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(document.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| Error::io("write", Path::new("stdout"), e))?;
        }
    }
    Ok(0)
}
