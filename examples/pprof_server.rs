//! A service that serves its own heap profile at `/debug/pprof/heap`, as Go
//! services do and as jemalloc_pprof's users do, with memprof's figures:
//! any allocator, exact or sampled, symbolized (the viewer needs no binary).
//! A plain `std::net` server, one request at a time: enough for a profiler
//! that fetches now and then.
//!
//! ```sh
//! cargo run --example pprof_server            # prints the address
//! curl -o heap.pb.gz http://127.0.0.1:6060/debug/pprof/heap
//! go tool pprof -http=: heap.pb.gz            # or: mprof flamegraph heap.pb.gz -o heap.svg
//! ```
//!
//! `PPROF_ADDR` sets the address (`127.0.0.1:0` picks a free port);
//! `MEMPROF_SITES=1` adds each line's allocation stacks.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

/// The service's state: a cache of `n` pages of 4 KiB, kept.
#[memprof::profile]
pub fn load_pages(n: usize) -> Vec<Vec<u8>> {
    let pages: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 4096]).collect();
    pages
}

/// Answers one request: the heap profile at `/debug/pprof/heap`, 404
/// elsewhere.
pub fn answer(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // The headers, up to the blank line: nothing in them matters here.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = request.split(' ').nth(1).unwrap_or("");
    let (status, kind, body) = match path {
        "/debug/pprof/heap" => (
            "200 OK",
            "application/octet-stream",
            memprof::heap_profile(),
        ),
        _ => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
    };
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// Answers requests until the listener fails; one that fails is dropped.
pub fn serve(listener: TcpListener) {
    for stream in listener.incoming().flatten() {
        if let Err(err) = answer(stream) {
            eprintln!("pprof_server: {err}");
        }
    }
}

fn main() {
    let pages = load_pages(256);
    let addr = std::env::var("PPROF_ADDR").unwrap_or_else(|_| "127.0.0.1:6060".to_owned());
    let listener = match TcpListener::bind(&addr) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("pprof_server: cannot listen on {addr}: {err}");
            std::process::exit(1);
        }
    };
    match listener.local_addr() {
        Ok(local) => println!("serving http://{local}/debug/pprof/heap"),
        Err(_) => println!("serving http://{addr}/debug/pprof/heap"),
    }
    serve(listener);
    drop(pages);
}
