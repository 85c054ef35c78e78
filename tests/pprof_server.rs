//! examples/pprof_server.rs serves the process's heap profile at
//! `/debug/pprof/heap` while it runs: fetched over HTTP here, decoded, and
//! its profiled line's figures exact.

// The example's own code, run here on a thread: its `main` is unused.
#[allow(dead_code)]
#[path = "../examples/pprof_server.rs"]
mod server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

/// GETs `path`: the status line and the body.
fn get(addr: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(response[..end].to_vec()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let body = response[end + 4..].to_vec();
    assert_eq!(body.len(), length);
    (head.lines().next().unwrap().to_owned(), body)
}

#[test]
fn the_service_serves_its_heap_profile_while_it_runs() {
    let pages = server::load_pages(256);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::serve(listener));

    let (status, body) = get(addr, "/debug/pprof/heap");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let profile = memprof::HeapProfile::from_pprof(&body).unwrap();
    let source = include_str!("../examples/pprof_server.rs");
    let line = source
        .lines()
        .position(|l| l.contains("let pages: Vec<Vec<u8>> ="))
        .unwrap() as u32
        + 1;
    let stack = vec![memprof::SiteFrame {
        function: "pprof_server::server::load_pages".to_owned(),
        file: Some("tests/../examples/pprof_server.rs".to_owned()),
        line: Some(line),
    }];
    // 256 pages of 4 KiB and the vector of their 24-byte handles, all kept.
    let bytes = 256 * 4096 + 256 * 24;
    assert_eq!(
        profile.samples.into_iter().collect::<Vec<_>>(),
        [(
            stack,
            memprof::HeapValues {
                alloc_objects: 257,
                alloc_space: bytes,
                inuse_objects: 0,
                inuse_space: bytes,
            }
        )]
    );
    assert_eq!(get(addr, "/elsewhere").0, "HTTP/1.1 404 Not Found");
    drop(pages);
}
