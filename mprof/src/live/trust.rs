//! Whether a socket at the place a program's would be is the program's.
//! mprof asks it nothing unless it passes the rules the program itself
//! keeps (the runtime's `live_rule`): its directory is this user's own,
//! with no permission for the group or others, and the process at its other
//! end runs as this user (`SO_PEERCRED`). Without them, another user who
//! made `memprof-UID` first in a shared temporary directory could listen
//! at the name and have a forged report taken for the program's.

use memprof_runtime::live_rule;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Checks the directory that holds a socket: `Ok(false)` where there is
/// none, `Err` with the sentence saying why where it is not `uid`'s alone.
pub fn directory(dir: &Path, uid: u32) -> Result<bool, String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => {
            return Err(format!(
                "cannot check {}: {}",
                crate::printable::path(dir),
                crate::error::describe(&err)
            ));
        }
    };
    if live_rule::is_private_dir(&meta, uid) {
        return Ok(true);
    }
    let what = if meta.file_type().is_symlink() {
        "a symbolic link".to_owned()
    } else if !meta.is_dir() {
        "not a directory".to_owned()
    } else {
        format!(
            "owned by uid {} with mode {:04o}",
            meta.uid(),
            meta.mode() & 0o7777
        )
    };
    Err(format!(
        "not trusting the socket in {}: it is {what}, where the program's is uid {uid}'s \
         with mode 0700 (another user may have made it)",
        crate::printable::path(dir)
    ))
}

/// Checks the process at the other end of `stream`, a socket at `place`.
pub fn peer(stream: &UnixStream, place: &Path, uid: u32) -> Result<(), String> {
    match peer_problem(live_rule::peer_uid(stream.as_raw_fd()), uid) {
        None => Ok(()),
        Some(problem) => Err(format!(
            "not trusting the socket at {}: {problem}",
            crate::printable::path(place)
        )),
    }
}

/// What is wrong with a peer running as `peer` (`None`: unknown) for a
/// client running as `own`, if anything.
fn peer_problem(peer: Option<u32>, own: u32) -> Option<String> {
    if live_rule::same_user(peer, own) {
        return None;
    }
    Some(match peer {
        Some(peer) => {
            format!("the process serving it runs as uid {peer}, not as this user ({own})")
        }
        None => "the process serving it cannot be told (SO_PEERCRED failed)".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_peer_of_this_user_is_trusted() {
        assert_eq!(peer_problem(Some(1000), 1000), None);
        assert_eq!(
            peer_problem(Some(1001), 1000).unwrap(),
            "the process serving it runs as uid 1001, not as this user (1000)"
        );
        // Root too is another user: a program of this user never runs as
        // root, so a root peer is not the program.
        assert_eq!(
            peer_problem(Some(0), 1000).unwrap(),
            "the process serving it runs as uid 0, not as this user (1000)"
        );
        assert_eq!(
            peer_problem(None, 1000).unwrap(),
            "the process serving it cannot be told (SO_PEERCRED failed)"
        );
        assert_eq!(peer_problem(Some(0), 0), None);
    }

    #[test]
    fn a_directory_others_may_write_is_refused_and_a_missing_one_is_none() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("mprof-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        // SAFETY: a plain query.
        let uid = unsafe { libc::geteuid() };
        assert_eq!(directory(&base.join("absent"), uid), Ok(false));
        let private = base.join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(directory(&private, uid), Ok(true));
        for mode in [0o777, 0o770, 0o705] {
            std::fs::set_permissions(&private, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(
                directory(&private, uid).unwrap_err(),
                format!(
                    "not trusting the socket in {}: it is owned by uid {uid} with mode {mode:04o}, \
                     where the program's is uid {uid}'s with mode 0700 (another user may have \
                     made it)",
                    private.display()
                )
            );
        }
        // Another user's, mode 0700: as uid + 1 sees it.
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(
            directory(&private, uid + 1)
                .unwrap_err()
                .contains(&format!("owned by uid {uid} with mode 0700"))
        );
        let link = base.join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(
            directory(&link, uid)
                .unwrap_err()
                .contains("it is a symbolic link")
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
