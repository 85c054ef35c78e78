//! Figures (time, RSS) and the stack-buffered lines they are written into.

use super::*;

pub(super) const MIB: f64 = (1u64 << 20) as f64;

pub(super) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// This process's resident set size in MiB, from `/proc/self/statm`; 0 if
/// it cannot be read.
pub(super) fn rss_mib() -> f64 {
    let mut buf = [0u8; 128];
    // SAFETY: a constant NUL-terminated path; `buf` outlives the read and
    // the length passed is its size.
    let read = unsafe {
        let fd = libc::open(
            c"/proc/self/statm".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return 0.0;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n
    };
    let Ok(n) = usize::try_from(read) else {
        return 0.0;
    };
    // "size resident shared text lib data dt", in pages.
    let resident = buf[..n]
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(|f| std::str::from_utf8(f).ok())
        .and_then(|f| f.parse::<u64>().ok())
        .unwrap_or(0);
    (resident * page_size()) as f64 / MIB
}

pub(super) fn page_size() -> u64 {
    static PAGE: AtomicU64 = AtomicU64::new(0);
    match PAGE.load(Relaxed) {
        0 => {
            // SAFETY: `sysconf` has no preconditions.
            let size = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .ok()
                .filter(|s| *s > 0)
                .unwrap_or(4096);
            PAGE.store(size, Relaxed);
            size
        }
        size => size,
    }
}

// ---- lines ---------------------------------------------------------------

/// One line, formatted on the stack. A name too long for it is cut
/// short, so that the figures after it always fit; a line that still
/// does not end in a newline is never written.
pub(super) struct LineBuf {
    bytes: [u8; 1024],
    len: usize,
}

/// Room kept after a name for the five figures of a `FUNC` line.
pub(super) const FIGURES: usize = 160;

impl LineBuf {
    pub(super) fn new() -> Self {
        LineBuf {
            bytes: [0; 1024],
            len: 0,
        }
    }

    pub(super) fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            self.push_char(c);
        }
    }

    /// Pushes a function's path.
    pub(super) fn push_name(&mut self, name: &str) {
        // NOTE: memory_profiler splits FUNC lines on spaces, and Rust
        // paths such as `<T as Trait>::f` have some.
        for c in name.chars() {
            self.push_char(if c.is_whitespace() { '_' } else { c });
        }
    }

    /// Pushes a character of the name, leaving room for the figures.
    pub(super) fn push_char(&mut self, c: char) {
        let mut utf8 = [0; 4];
        let c = c.encode_utf8(&mut utf8).as_bytes();
        if self.len + c.len() + FIGURES <= self.bytes.len() {
            self.bytes[self.len..self.len + c.len()].copy_from_slice(c);
            self.len += c.len();
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub(super) fn is_whole(&self) -> bool {
        self.len > 0 && self.bytes[self.len - 1] == b'\n'
    }

    pub(super) fn write_to_dat(&self) {
        let fd = FD.load(Relaxed);
        if fd < 0 || !self.is_whole() {
            return;
        }
        // SAFETY: `fd` stays open for the life of the process; the slice
        // is initialised memory of the given length.
        unsafe {
            libc::write(fd, self.bytes.as_ptr().cast(), self.len);
        }
    }
}

impl std::fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.bytes.len() - self.len;
        if s.len() > room {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}
