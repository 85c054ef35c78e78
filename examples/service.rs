//! An HTTP-style service on tokio, without the network: 6,000 requests,
//! about 2,000 a second, each a `tokio::spawn`ed task that parses its
//! request, looks the page up in a cache shared behind a `Mutex`, "loads"
//! it from a slow store on a miss (an `.await` of 20 ms) and
//! renders a response. Deterministic: the same summary on every run.
//!
//! ```sh
//! cargo run --example service        # tables of the first calls, totals at exit
//! cargo run -p mprof -- run target/debug/examples/service
//! cargo run -p mprof -- plot
//! ```

use memprof::profile;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const REQUESTS: u32 = 6_000;
/// Requests sent together, then a pause: a bursty client.
const BURST: u32 = 40;
const PAUSE: Duration = Duration::from_millis(20);
const PAGES: u32 = 400;

#[derive(Debug)]
struct Request {
    path: String,
    headers: Vec<(String, String)>,
}

type Cache = Arc<Mutex<HashMap<String, Arc<Vec<u8>>>>>;

#[profile]
fn parse_request(raw: &str) -> Option<Request> {
    let mut lines = raw.lines();
    let mut start = lines.next()?.split(' ');
    let (_method, path) = (start.next()?, start.next()?.to_string());
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    Some(Request { path, headers })
}

/// The slow store behind the cache: a page of a few KiB, after a wait.
#[profile]
async fn load_page(path: &str) -> Vec<u8> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let id: usize = path.trim_start_matches("/page/").parse().unwrap_or(0);
    (0..2_048 + 64 * (id % 32))
        .map(|i| (i + id) as u8)
        .collect()
}

#[profile]
fn render(request: &Request, page: &[u8]) -> String {
    let agent = request.headers.iter().find(|(k, _)| k == "user-agent");
    let mut body = format!(
        "HTTP/1.1 200 OK\r\nserver: memprof-demo\r\nx-agent: {}\r\n\r\n",
        agent.map_or("-", |(_, v)| v.as_str())
    );
    for chunk in page.chunks(64) {
        body.push_str(&format!("{:02x}", chunk.iter().fold(0u8, |a, b| a ^ b)));
    }
    body
}

#[profile]
async fn handle(raw: String, cache: Cache) -> usize {
    let Some(request) = parse_request(&raw) else {
        return 0;
    };
    let cached = cache.lock().unwrap().get(&request.path).cloned();
    let page = match cached {
        Some(page) => page,
        None => {
            let page = Arc::new(load_page(&request.path).await);
            let mut cache = cache.lock().unwrap();
            cache.insert(request.path.clone(), page.clone());
            page
        }
    };
    // A little work after the response is ready: logging, metrics.
    tokio::time::sleep(Duration::from_millis(12)).await;
    render(&request, &page).len()
}

/// Request `i`: mostly popular pages, some never seen before.
fn request_text(i: u32) -> String {
    let hash = i.wrapping_mul(2_654_435_761);
    let page = if hash.is_multiple_of(4) {
        hash % 4_000
    } else {
        hash % PAGES
    };
    format!(
        "GET /page/{page} HTTP/1.1\r\nHost: demo\r\nUser-Agent: load/{}\r\nAccept: */*\r\n\r\n",
        i % 7
    )
}

#[profile]
async fn serve(cache: Cache) -> (u32, usize) {
    let mut tasks = Vec::with_capacity(REQUESTS as usize);
    for i in 0..REQUESTS {
        tasks.push(tokio::spawn(handle(request_text(i), cache.clone())));
        if i % BURST == BURST - 1 {
            tokio::time::sleep(PAUSE).await;
        }
    }
    let (mut ok, mut bytes) = (0, 0);
    for task in tasks {
        let sent = task.await.unwrap();
        ok += u32::from(sent > 0);
        bytes += sent;
    }
    (ok, bytes)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let cache: Cache = Arc::default();
    let (ok, bytes) = serve(cache.clone()).await;
    let pages = cache.lock().unwrap().len();
    println!("served {ok} requests, {bytes} bytes; {pages} pages cached");
}
