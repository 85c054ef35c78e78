//! The load: client threads, each with one keep-alive connection, sending
//! orders a request at a time and reading each answer before the next.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
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
}

impl Load {
    pub fn per_second(&self) -> f64 {
        self.answered as f64 / self.seconds
    }

    pub fn cpu_micros_per_order(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.answered as f64
    }
}

/// Sends `requests` orders from `clients` threads; the clock runs from
/// when every client has connected to the last answer.
pub fn run(port: u16, requests: usize, clients: usize) -> Load {
    let ready = Arc::new(Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let ids = (c * requests / clients)..((c + 1) * requests / clients);
            let ready = Arc::clone(&ready);
            std::thread::spawn(move || client(port, ids, &ready))
        })
        .collect();
    ready.wait();
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let mut load = Load {
        answered: 0,
        checksum: 0,
        seconds: 0.0,
        cpu_seconds: 0.0,
    };
    for thread in threads {
        let (answered, checksum) = thread.join().expect("a client thread");
        load.answered += answered;
        load.checksum = load.checksum.wrapping_add(checksum);
    }
    load.seconds = start.elapsed().as_secs_f64();
    load.cpu_seconds = cpu_seconds() - cpu_start;
    load
}

/// The CPU time this process has used, user and system, its ended threads
/// included: `utime` and `stime` of `/proc/self/stat`, in Linux's clock
/// ticks of 1/100 s. 0 where there is no such file.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The fields after the command's name, which is in parentheses and may
    // hold spaces: state first, then utime and stime 11 and 12 further.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// One client's orders: how many were answered, and their checksum.
fn client(port: u16, ids: std::ops::Range<usize>, ready: &Barrier) -> (usize, u64) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("the service");
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let mut writer = &stream;
    let (mut request, mut answer) = (String::with_capacity(64), String::with_capacity(256));
    let (mut answered, mut checksum) = (0, 0u64);
    ready.wait();
    for id in ids {
        request.clear();
        let _ = writeln!(
            request,
            "POST /orders?id={id:06}&sku= {}-{:03}x &qty={}",
            ["ab", "Cd", "eF"][id % 3],
            id % 500,
            1 + id % 5
        );
        writer
            .write_all(request.as_bytes())
            .expect("a request sent");
        answer.clear();
        if reader.read_line(&mut answer).expect("an answer") == 0 {
            break;
        }
        answered += 1;
        checksum = checksum.wrapping_add(fnv(&answer));
    }
    (answered, checksum)
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
