//! The load: client threads, each with one HTTP/1.1 keep-alive connection,
//! sending a request at a time and reading each answer before the next (a
//! closed loop: the clients never outrun the service), each request's
//! latency recorded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Instant;

pub struct Load {
    pub answered: usize,
    /// Order-independent: the same for every run of the same load.
    pub checksum: u64,
    pub seconds: f64,
    /// CPU time the process used meanwhile, all its threads, in seconds.
    pub cpu_seconds: f64,
    /// Every request's latency, in µs, sorted.
    pub latencies: Vec<u32>,
}

impl Load {
    pub fn per_second(&self) -> f64 {
        self.answered as f64 / self.seconds
    }

    pub fn cpu_micros_per_request(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.answered as f64
    }

    /// The latency 99 % of the requests stayed within, in µs.
    pub fn p99_micros(&self) -> f64 {
        let n = self.latencies.len();
        if n == 0 {
            return 0.0;
        }
        f64::from(self.latencies[(n * 99).div_ceil(100) - 1])
    }
}

/// What one client saw.
struct Client {
    answered: usize,
    checksum: u64,
    latencies: Vec<u32>,
}

/// Sends `requests` requests from `clients` threads; the clock runs from
/// when every client has connected and sent its share of a warm-up of
/// `requests / 10` more (orders of their own ids, answered but not timed:
/// the service's steady state is measured, not its first requests') to
/// the last answer.
pub fn run(port: u16, requests: usize, clients: usize, server: Server) -> Load {
    let ready = Arc::new(Barrier::new(clients + 1));
    let warm = requests / 10 / clients;
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let ids = (c * requests / clients)..((c + 1) * requests / clients);
            let warm_up = (requests + c * warm)..(requests + (c + 1) * warm);
            let ready = Arc::clone(&ready);
            std::thread::spawn(move || client(port, warm_up, ids, &ready))
        })
        .collect();
    ready.wait();
    let start = Instant::now();
    let cpu_start = server.cpu_seconds();
    let mut load = Load {
        answered: 0,
        checksum: 0,
        seconds: 0.0,
        cpu_seconds: 0.0,
        latencies: Vec::with_capacity(requests),
    };
    for thread in threads {
        let client = thread.join().expect("a client thread");
        load.answered += client.answered;
        load.checksum = load.checksum.wrapping_add(client.checksum);
        load.latencies.extend(client.latencies);
    }
    load.seconds = start.elapsed().as_secs_f64();
    load.cpu_seconds = server.cpu_seconds() - cpu_start;
    load.latencies.sort_unstable();
    load
}

/// The process whose CPU time a load counts: this one (the service runs in
/// it, beside its clients) or the service's own, by its pid.
#[derive(Clone, Copy)]
pub enum Server {
    InProcess,
    Pid(u32),
}

impl Server {
    /// The CPU time the process has used, user and system, its ended
    /// threads included, in seconds.
    fn cpu_seconds(self) -> f64 {
        match self {
            Server::InProcess => own_cpu_seconds(),
            Server::Pid(pid) => cpu_seconds_of(pid).expect("the service's /proc/PID/stat"),
        }
    }
}

/// This process's CPU time (getrusage's `RUSAGE_SELF`).
fn own_cpu_seconds() -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct,
    // and getrusage writes only into the one it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Process `pid`'s CPU time: the sum of its threads' time on a CPU, in
/// nanoseconds (the first field of each `/proc/PID/task/TID/schedstat`;
/// `/proc/PID/stat` counts in clock ticks, a hundredth of a second, too
/// coarse for a run of half a second). The service's threads live as long
/// as it does.
fn cpu_seconds_of(pid: u32) -> Option<f64> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        nanos += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(nanos as f64 / 1e9)
}

/// One client's requests: the warm-up's orders, then, timed, request `i`
/// of its range orders `i`, except that every fourth looks up the order it
/// sent last.
fn client(
    port: u16,
    warm_up: std::ops::Range<usize>,
    ids: std::ops::Range<usize>,
    ready: &Barrier,
) -> Client {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("the service");
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let mut writer = &stream;
    let mut seen = Client {
        answered: 0,
        checksum: 0,
        latencies: Vec::with_capacity(ids.len()),
    };
    let (mut request, mut body) = (Vec::with_capacity(256), Vec::with_capacity(256));
    for id in warm_up {
        request.clear();
        order(&mut request, id);
        writer.write_all(&request).expect("a request sent");
        answer(&mut reader, &mut body).expect("an answer");
    }
    let mut last = None;
    ready.wait();
    for id in ids {
        request.clear();
        match last {
            Some(last) if id % 4 == 3 => lookup(&mut request, last),
            _ => {
                order(&mut request, id);
                last = Some(id);
            }
        }
        let sent = Instant::now();
        writer.write_all(&request).expect("a request sent");
        let Some(status) = answer(&mut reader, &mut body) else {
            break;
        };
        let micros = sent.elapsed().as_micros();
        seen.latencies
            .push(u32::try_from(micros).unwrap_or(u32::MAX));
        seen.answered += 1;
        let hash = fnv(&body, fnv(status.to_string().as_bytes(), FNV_START));
        seen.checksum = seen.checksum.wrapping_add(hash);
    }
    seen
}

/// `POST /orders` with order `id` as JSON.
fn order(request: &mut Vec<u8>, id: usize) {
    let body = format!(
        r#"{{"id":"{id:06}","sku":" {}-{:03}x ","quantity":{}}}"#,
        ["ab", "Cd", "eF"][id % 3],
        id % 500,
        1 + id % 5
    );
    let _ = write!(
        request,
        "POST /orders HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
}

/// `GET /orders/{id}`.
fn lookup(request: &mut Vec<u8>, id: usize) {
    let _ = write!(
        request,
        "GET /orders/{id:06} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
    );
}

/// Reads one response: its status, its body into `body`. `None` when the
/// connection closed.
fn answer(reader: &mut BufReader<TcpStream>, body: &mut Vec<u8>) -> Option<u16> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let status = line.split(' ').nth(1)?.parse().ok()?;
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    body.resize(length, 0);
    reader.read_exact(body).ok()?;
    Some(status)
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(bytes: &[u8], start: u64) -> u64 {
    bytes.iter().fold(start, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
