//! One client's connection: its request read and its answer sent, each
//! within one deadline for the whole of it (`live_rule`'s
//! `REQUEST_DEADLINE` and `ANSWER_DEADLINE`), never one per `recv` or
//! `send`: a client that trickles a byte at a time, or reads its answer a
//! byte at a time, gets no longer than one that does nothing.
//!
//! Every wait is a `poll` on the connection and on a wake-up descriptor
//! (the signal pipe): a pending SIGTERM or SIGINT ends the exchange at
//! once, so that no client holds the signal up. The socket calls never
//! block (`MSG_DONTWAIT`), and a client that goes away costs a failed
//! `send`, never SIGPIPE (`MSG_NOSIGNAL`).

use crate::live_rule::MAX_REQUEST;
use std::io::ErrorKind;
use std::time::Instant;

/// Why an exchange ended before its end.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// The deadline passed.
    Late,
    /// The wake-up descriptor is readable: a signal waits to be served.
    Signal,
    /// The request passed `MAX_REQUEST` bytes without its newline.
    TooLong,
    /// The client went away, or the socket failed.
    Gone,
}

/// Reads one line, at most `MAX_REQUEST` bytes, by `deadline`; a request
/// the client ended without its newline is taken as it is.
pub(super) fn read_request(fd: i32, wake: i32, deadline: Instant) -> Result<Vec<u8>, Cut> {
    let mut request = Vec::with_capacity(MAX_REQUEST);
    let mut buffer = [0u8; MAX_REQUEST];
    loop {
        let room = MAX_REQUEST - request.len();
        // SAFETY: reading into a local buffer of at least `room` bytes.
        let n = unsafe { libc::recv(fd, buffer.as_mut_ptr().cast(), room, libc::MSG_DONTWAIT) };
        if n < 0 {
            match std::io::Error::last_os_error().kind() {
                ErrorKind::Interrupted => continue,
                ErrorKind::WouldBlock => {
                    wait(fd, libc::POLLIN, wake, deadline)?;
                    continue;
                }
                _ => return Err(Cut::Gone),
            }
        }
        let n = n as usize;
        request.extend_from_slice(&buffer[..n]);
        if let Some(end) = request.iter().position(|&b| b == b'\n') {
            request.truncate(end);
            return Ok(request);
        }
        if n == 0 {
            return Ok(request);
        }
        if request.len() >= MAX_REQUEST {
            return Err(Cut::TooLong);
        }
    }
}

/// Sends all of `bytes` by `deadline`.
pub(super) fn send_all(fd: i32, mut bytes: &[u8], wake: i32, deadline: Instant) -> Result<(), Cut> {
    while !bytes.is_empty() {
        let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
        // SAFETY: sending from a live slice.
        let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), flags) };
        if n < 0 {
            match std::io::Error::last_os_error().kind() {
                ErrorKind::Interrupted => continue,
                ErrorKind::WouldBlock => {
                    wait(fd, libc::POLLOUT, wake, deadline)?;
                    continue;
                }
                _ => return Err(Cut::Gone),
            }
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Waits until `fd` is ready for `events` (or hung up), `wake` is
/// readable, or `deadline` passes.
fn wait(fd: i32, events: libc::c_short, wake: i32, deadline: Instant) -> Result<(), Cut> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // Rounded up, so that the wait does not end just before.
        let timeout = if left.is_zero() {
            0
        } else {
            left.as_millis().saturating_add(1).min(i32::MAX as u128) as i32
        };
        let mut fds = [
            libc::pollfd {
                fd,
                events,
                revents: 0,
            },
            libc::pollfd {
                fd: wake,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid `pollfd`s; a negative fd is skipped by `poll`.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(Cut::Gone);
        }
        if fds[1].revents != 0 {
            return Err(Cut::Signal);
        }
        if fds[0].revents != 0 {
            return Ok(());
        }
        if left.is_zero() {
            return Err(Cut::Late);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connected pair of Unix stream sockets, closed when dropped.
    struct Pair([i32; 2]);

    impl Pair {
        fn new() -> Pair {
            let mut fds = [-1; 2];
            // SAFETY: a two-descriptor array for `socketpair`.
            let made =
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
            assert_eq!(made, 0);
            Pair(fds)
        }

        fn write(&self, bytes: &[u8]) {
            // SAFETY: writing from a live slice to our own socket.
            let n = unsafe { libc::write(self.0[1], bytes.as_ptr().cast(), bytes.len()) };
            assert_eq!(n, bytes.len() as isize);
        }

        /// Closes the client's end: the client went away.
        fn hang_up(&mut self) {
            // SAFETY: the pair's own descriptor, forgotten after.
            unsafe { libc::close(self.0[1]) };
            self.0[1] = -1;
        }
    }

    impl Drop for Pair {
        fn drop(&mut self) {
            for fd in self.0.into_iter().filter(|&fd| fd >= 0) {
                // SAFETY: descriptors this pair owns.
                unsafe { libc::close(fd) };
            }
        }
    }

    /// A pipe with one byte in it: a signal waiting to be served.
    fn pending_signal() -> Pair {
        let mut fds = [-1; 2];
        // SAFETY: a two-descriptor array for `pipe`.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let pipe = Pair([fds[0], fds[1]]);
        pipe.write(&[libc::SIGTERM as u8]);
        pipe
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn a_whole_request_in_time_is_read_to_its_newline() {
        let pair = Pair::new();
        pair.write(b"snapshot\nmore");
        assert_eq!(read_request(pair.0[0], -1, far()).unwrap(), b"snapshot");
    }

    #[test]
    fn the_deadline_is_the_requests_not_each_recvs() {
        // Bytes keep coming but no newline: a deadline per `recv` would
        // wait for the next byte; the request's deadline has passed.
        let pair = Pair::new();
        pair.write(b"snap");
        assert_eq!(read_request(pair.0[0], -1, Instant::now()), Err(Cut::Late));
    }

    #[test]
    fn an_over_long_request_is_refused() {
        let pair = Pair::new();
        pair.write(&[b'x'; MAX_REQUEST + 1]);
        assert_eq!(read_request(pair.0[0], -1, far()), Err(Cut::TooLong));
    }

    #[test]
    fn a_pending_signal_ends_a_trickled_request_at_once() {
        // NOTE: without the signal, the call would return `Late` after a
        // minute, and fail: no test here waits on a duration to pass.
        let pair = Pair::new();
        pair.write(b"s");
        let signal = pending_signal();
        assert_eq!(
            read_request(pair.0[0], signal.0[0], far()),
            Err(Cut::Signal)
        );
    }

    #[test]
    fn a_pending_signal_ends_an_answer_nobody_reads_at_once() {
        // More than any socket buffer holds, to a client that never reads.
        let pair = Pair::new();
        let signal = pending_signal();
        let answer = vec![b'x'; 64 << 20];
        assert_eq!(
            send_all(pair.0[0], &answer, signal.0[0], far()),
            Err(Cut::Signal)
        );
    }

    #[test]
    fn an_answer_not_read_by_its_deadline_is_given_up() {
        let pair = Pair::new();
        let answer = vec![b'x'; 64 << 20];
        assert_eq!(
            send_all(pair.0[0], &answer, -1, Instant::now()),
            Err(Cut::Late)
        );
        // One that fits in the socket's buffer leaves at once, late or not.
        let pair = Pair::new();
        assert_eq!(send_all(pair.0[0], b"ok\n", -1, Instant::now()), Ok(()));
    }

    #[test]
    fn a_client_gone_ends_the_answer() {
        let mut pair = Pair::new();
        pair.hang_up();
        let answer = vec![b'x'; 64 << 20];
        assert_eq!(send_all(pair.0[0], &answer, -1, far()), Err(Cut::Gone));
    }
}
