//! The few system calls whose form differs between Linux, macOS and
//! Windows, one helper each, so that the modules that use them hold no
//! `cfg`.
//!
//! The first helpers serve the live channel (`live`), which is Unix's
//! only: they have no Windows form.
//!
//! Linux has `accept4`, `pipe2` and `SOCK_CLOEXEC`, which set a new
//! descriptor's flags in the call that makes it; macOS makes the
//! descriptor, then sets its flags with `fcntl`. In between, another
//! thread's `fork` and `exec` could carry the descriptor into a program:
//! a leak of one descriptor, which that program never reads. Every helper
//! is async-signal-safe where its Linux call is.
//!
//! The first of each pair is the Linux one, and serves every Unix but
//! macOS, as the calls did before this module.
//!
//! The later helpers serve every platform: memory mapped outside the heap
//! (sites' tables), freed memory given back, a file opened without
//! following a link, the lock on `MEMPROF_JSON`'s directory, and code run
//! as the program loads. Their first form is Unix's (`mmap`,
//! `O_NOFOLLOW`, `flock`), the second Windows' (`windows-sys`).

#[cfg(unix)]
use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::Duration;

/// Where the calling thread's `errno` lives: read and restored around a
/// system call in a signal handler.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain query of the calling thread's errno.
    unsafe { libc::__errno_location() }
}

#[cfg(target_os = "macos")]
pub(crate) fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain query of the calling thread's errno.
    unsafe { libc::__error() }
}

/// A pipe whose two ends are close-on-exec and non-blocking, into `fds`;
/// whether it was made.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn pipe_cloexec_nonblock(fds: &mut [libc::c_int; 2]) -> bool {
    // SAFETY: a two-descriptor array for `pipe2`.
    unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) == 0 }
}

#[cfg(target_os = "macos")]
pub(crate) fn pipe_cloexec_nonblock(fds: &mut [libc::c_int; 2]) -> bool {
    // SAFETY: a two-descriptor array for `pipe`.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return false;
    }
    if fds.iter().all(|&fd| set_flags(fd, true)) {
        return true;
    }
    for fd in fds.iter_mut() {
        // SAFETY: the pipe's end made above, used by no one else.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
    false
}

/// A close-on-exec Unix stream socket (blocking); negative on failure,
/// with errno set.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn unix_stream_socket() -> libc::c_int {
    // SAFETY: a plain `socket` call.
    unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) }
}

#[cfg(target_os = "macos")]
pub(crate) fn unix_stream_socket() -> libc::c_int {
    // SAFETY: a plain `socket` call.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd >= 0 && !set_flags(fd, false) {
        let errno = std::io::Error::last_os_error().raw_os_error();
        // SAFETY: the socket made above, used by no one else; errno is put
        // back for the caller's `last_os_error`.
        unsafe {
            libc::close(fd);
            *errno_location() = errno.unwrap_or(libc::EINVAL);
        }
        return -1;
    }
    fd
}

/// Accepts a connection on `listening` as a close-on-exec, non-blocking
/// descriptor; negative when none is accepted.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn accept_cloexec_nonblock(listening: libc::c_int) -> libc::c_int {
    // SAFETY: accepting on a listening socket, without the peer's address.
    unsafe {
        libc::accept4(
            listening,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
        )
    }
}

#[cfg(target_os = "macos")]
pub(crate) fn accept_cloexec_nonblock(listening: libc::c_int) -> libc::c_int {
    // SAFETY: accepting on a listening socket, without the peer's address.
    let fd = unsafe { libc::accept(listening, std::ptr::null_mut(), std::ptr::null_mut()) };
    if fd < 0 {
        return fd;
    }
    // NOTE: each `send` passes `MSG_NOSIGNAL`; `SO_NOSIGPIPE` is macOS's
    // older word for it, set as well for releases that ignore the flag.
    let one: libc::c_int = 1;
    // SAFETY: an `int` option of the size given, on the new socket.
    let quiet = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_NOSIGPIPE,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    } == 0;
    if quiet && set_flags(fd, true) {
        return fd;
    }
    // SAFETY: the connection accepted above, used by no one else.
    unsafe { libc::close(fd) };
    -1
}

/// Names a thread that `pthread_create` has just started, from the thread
/// that started it. macOS names only the calling thread: there this does
/// nothing, and the thread calls [`name_own_thread`].
///
/// # Safety
/// `thread` has neither ended nor been joined.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) unsafe fn name_started_thread(thread: libc::pthread_t, name: &CStr) {
    // SAFETY: a live thread, by the caller; a name over Linux's 16 bytes
    // fails the call, harmlessly.
    unsafe { libc::pthread_setname_np(thread, name.as_ptr()) };
}

#[cfg(target_os = "macos")]
pub(crate) unsafe fn name_started_thread(_thread: libc::pthread_t, _name: &CStr) {}

/// Names the calling thread where a thread can name only itself (macOS);
/// nothing elsewhere, where [`name_started_thread`] has named it.
#[cfg(all(unix, not(target_os = "macos")))]
pub(crate) fn name_own_thread(_name: &CStr) {}

#[cfg(target_os = "macos")]
pub(crate) fn name_own_thread(name: &CStr) {
    // SAFETY: a NUL-terminated name for the calling thread.
    unsafe { libc::pthread_setname_np(name.as_ptr()) };
}

/// Sets close-on-exec on `fd`, and non-blocking if `nonblock`; whether
/// all took.
#[cfg(target_os = "macos")]
fn set_flags(fd: libc::c_int, nonblock: bool) -> bool {
    // SAFETY: `fcntl` reads and sets the flags of a descriptor of ours.
    unsafe {
        let fd_flags = libc::fcntl(fd, libc::F_GETFD);
        if fd_flags < 0 || libc::fcntl(fd, libc::F_SETFD, fd_flags | libc::FD_CLOEXEC) != 0 {
            return false;
        }
        if !nonblock {
            return true;
        }
        let status = libc::fcntl(fd, libc::F_GETFL);
        status >= 0 && libc::fcntl(fd, libc::F_SETFL, status | libc::O_NONBLOCK) == 0
    }
}

/// Runs `$run`, an `extern "C" fn()`, as the program loads, before `main`
/// and its threads: from `.init_array` on Linux, from `__mod_init_func` on
/// macOS, from `.CRT$XCU` on Windows (where each platform's C++ static
/// constructors run; the C runtime of MSVC and of MinGW alike walks
/// `.CRT$XCA` to `.CRT$XCZ`); nowhere else.
macro_rules! run_at_load {
    ($name:ident = $run:path) => {
        #[cfg(target_os = "linux")]
        #[used]
        #[unsafe(link_section = ".init_array")]
        static $name: extern "C" fn() = $run;
        #[cfg(target_os = "macos")]
        #[used]
        #[unsafe(link_section = "__DATA,__mod_init_func")]
        static $name: extern "C" fn() = $run;
        #[cfg(windows)]
        #[used]
        #[unsafe(link_section = ".CRT$XCU")]
        static $name: extern "C" fn() = $run;
    };
}
pub(crate) use run_at_load;

/// Maps `size` zeroed bytes, readable and writable, outside the heap;
/// `None` if the system refuses. Pages are had as they are first touched.
#[cfg(unix)]
pub(crate) fn map_zeroed(size: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping; checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED || ptr.is_null() {
        return None;
    }
    Some(ptr.cast())
}

// NOTE: Windows has no `MAP_NORESERVE`: the pages are committed (counted
// against the commit limit, and a job's) at once, and zeroed as they are
// first touched.
#[cfg(windows)]
pub(crate) fn map_zeroed(size: usize) -> Option<*mut u8> {
    use windows_sys::Win32::System::Memory::{
        MEM_COMMIT, MEM_RESERVE, PAGE_READWRITE, VirtualAlloc,
    };
    // SAFETY: fresh pages at an address the system picks; checked below.
    let ptr = unsafe {
        VirtualAlloc(
            std::ptr::null(),
            size,
            MEM_COMMIT | MEM_RESERVE,
            PAGE_READWRITE,
        )
    };
    (!ptr.is_null()).then(|| ptr.cast())
}

/// Gives back what [`map_zeroed`] mapped, `size` bytes at `ptr`; a
/// failure leaves the mapping in place.
///
/// # Safety
/// `ptr` and `size` are one mapping's, whole, and nothing uses it any more.
#[cfg(unix)]
pub(crate) unsafe fn unmap(ptr: *mut u8, size: usize) {
    // SAFETY: the caller's promise.
    unsafe { libc::munmap(ptr.cast(), size) };
}

#[cfg(windows)]
pub(crate) unsafe fn unmap(ptr: *mut u8, _size: usize) {
    use windows_sys::Win32::System::Memory::{MEM_RELEASE, VirtualFree};
    // SAFETY: the caller's promise; `MEM_RELEASE` frees the whole
    // allocation `VirtualAlloc` made at `ptr`, and takes a size of 0.
    unsafe { VirtualFree(ptr.cast(), 0, MEM_RELEASE) };
}

/// Asks the C allocator to give the system back what was freed: glibc
/// keeps freed memory in its arenas (each thread's), where parsed debug
/// information freed after a snapshot would stay resident. Elsewhere
/// (musl, macOS, Windows, or another allocator under memprof's) nothing:
/// their allocators return large blocks when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn give_back_freed_memory() {
    // SAFETY: no preconditions; it takes each arena's lock.
    unsafe { libc::malloc_trim(0) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn give_back_freed_memory() {}

/// The process's limit on its address space in bytes (`RLIMIT_AS`,
/// `ulimit -v`); `None` where there is none.
#[cfg(unix)]
pub(crate) fn address_space_limit() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid `rlimit` to fill.
    let unlimited = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY;
    (!unlimited).then_some(limit.rlim_cur)
}

/// None on Windows: a job object limits committed memory, not address
/// space, and a mapping past it is refused by [`map_zeroed`] itself.
#[cfg(windows)]
pub(crate) fn address_space_limit() -> Option<u64> {
    None
}

/// The OS error of [`open_no_follow`] for a symbolic link: `ELOOP`, as
/// `O_NOFOLLOW` gives it.
#[cfg(unix)]
pub(crate) const LINK_REFUSED: i32 = libc::ELOOP;

/// The OS error of [`open_no_follow`] for a symbolic link:
/// `ERROR_CANT_RESOLVE_FILENAME`, Windows' word for too many links.
#[cfg(windows)]
pub(crate) const LINK_REFUSED: i32 =
    windows_sys::Win32::Foundation::ERROR_CANT_RESOLVE_FILENAME as i32;

/// Opens `path` with `options`, refusing a symbolic link there, the path's
/// last component, with the error [`LINK_REFUSED`] (`O_NOFOLLOW`).
#[cfg(unix)]
pub(crate) fn open_no_follow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW).open(path)
}

// NOTE: Windows has no `O_NOFOLLOW`. `FILE_FLAG_OPEN_REPARSE_POINT` opens
// a link itself instead of its target, and the handle then says whether
// it is one (a symbolic link or a junction): refused, never written
// through. A link is opened before it is refused, so a caller that may
// truncate checks the path first (`safe_file::open_output`).
#[cfg(windows)]
pub(crate) fn open_no_follow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
    let file = options
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    if file.metadata()?.file_type().is_symlink() {
        return Err(io::Error::from_raw_os_error(LINK_REFUSED));
    }
    Ok(file)
}

/// An exclusive lock on a directory among processes, released when
/// dropped: `flock` on the directory itself on Unix.
#[cfg(unix)]
pub(crate) struct DirLock(File);

#[cfg(unix)]
impl DirLock {
    /// Takes the lock on `dir`, waiting for it at most `patience`.
    pub(crate) fn exclusive(dir: &Path, patience: Duration) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        use std::time::Instant;
        let directory = File::open(dir)?;
        let deadline = Instant::now() + patience;
        loop {
            // SAFETY: a valid open descriptor, owned by the lock.
            if unsafe { libc::flock(directory.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(DirLock(directory));
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                io::ErrorKind::WouldBlock => return Err(stayed_locked(patience)),
                _ => return Err(err),
            }
        }
    }
}

#[cfg(unix)]
impl Drop for DirLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor the lock was taken on, still open.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// An exclusive lock on a directory among processes, released when
/// dropped: on Windows, a named mutex of the session.
///
/// NOTE: Windows cannot lock a directory (`LockFileEx` takes a file, and
/// a lock file would be left in the user's directory), so the lock is a
/// mutex named after the directory's canonical path: every process of the
/// user's session that writes into that directory takes the same one. A
/// process that dies holding it leaves it abandoned, which the next one
/// takes. The mutex is its thread's: the lock is dropped on the thread
/// that took it.
#[cfg(windows)]
pub(crate) struct DirLock(windows_sys::Win32::Foundation::HANDLE);

#[cfg(windows)]
impl DirLock {
    /// Takes the lock on `dir`, waiting for it at most `patience`.
    pub(crate) fn exclusive(dir: &Path, patience: Duration) -> io::Result<Self> {
        use windows_sys::Win32::Foundation::{
            CloseHandle, WAIT_ABANDONED, WAIT_OBJECT_0, WAIT_TIMEOUT,
        };
        use windows_sys::Win32::System::Threading::{CreateMutexW, WaitForSingleObject};
        let canonical = std::fs::canonicalize(dir)?;
        let name: Vec<u16> = format!(
            "Local\\memprof-dir-{:016x}",
            fnv1a(
                &canonical
                    .as_os_str()
                    .as_encoded_bytes()
                    .to_ascii_lowercase()
            )
        )
        .encode_utf16()
        .chain([0])
        .collect();
        // SAFETY: default security, not owned yet, a NUL-terminated name.
        let mutex = unsafe { CreateMutexW(std::ptr::null(), 0, name.as_ptr()) };
        if mutex.is_null() {
            return Err(io::Error::last_os_error());
        }
        // `INFINITE` is `u32::MAX`: a longer patience waits one millisecond less.
        let millis =
            u32::try_from(patience.as_millis()).map_or(u32::MAX - 1, |ms| ms.min(u32::MAX - 1));
        // SAFETY: the mutex opened above.
        let waited = unsafe { WaitForSingleObject(mutex, millis) };
        if waited == WAIT_OBJECT_0 || waited == WAIT_ABANDONED {
            return Ok(DirLock(mutex));
        }
        let err = match waited {
            WAIT_TIMEOUT => stayed_locked(patience),
            _ => io::Error::last_os_error(),
        };
        // SAFETY: the handle opened above, not owned by this thread.
        unsafe { CloseHandle(mutex) };
        Err(err)
    }
}

#[cfg(windows)]
impl Drop for DirLock {
    fn drop(&mut self) {
        use windows_sys::Win32::Foundation::CloseHandle;
        use windows_sys::Win32::System::Threading::ReleaseMutex;
        // SAFETY: the mutex this thread owns since `exclusive`.
        unsafe {
            ReleaseMutex(self.0);
            CloseHandle(self.0);
        }
    }
}

/// A 64-bit FNV-1a hash: a mutex's name from a path, the same in every
/// process and every build.
#[cfg(windows)]
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// [`DirLock::exclusive`]'s error when `patience` ran out.
fn stayed_locked(patience: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "its directory stayed locked by another process for {} s",
            patience.as_secs()
        ),
    )
}
