//! An order service on axum, shaped like a small JSON backend's:
//! `POST /orders` takes an order as JSON, normalizes its SKU, prices it and
//! answers a JSON receipt; `GET /orders/{id}` answers the receipt an order
//! got. Its receipt store keeps every receipt and never evicts: the planted
//! leak, a few hundred bytes per order.
//!
//! `memprof-axum-service [REQUESTS] [CLIENTS] [hold]` starts the service on
//! 127.0.0.1 (a free port; axum on a tokio runtime of two workers), then
//! sends REQUESTS requests (default 20,000) from CLIENTS client threads
//! (default 4), each over one HTTP/1.1 keep-alive connection, a request at
//! a time: three orders, then a look-up of the last, and so on, timed after
//! a warm-up of a tenth as many orders, untimed. It prints
//! the answers' checksum, then the throughput the clients achieved, the
//! 99th percentile of a request's latency and the CPU time the process
//! (the service and its clients) spent per request meanwhile. With `hold`
//! it then prints its pid and keeps serving until its standard input
//! closes (for a snapshot of the service as the load left it). With
//! `--features dhat` it runs under dhat's heap profiler.

mod load;
mod pricing;
mod routes;
mod store;

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let requests = number(0, 20_000);
    let clients = number(1, 4).max(1);
    let service = routes::Service::start();
    let load = load::run(service.port(), requests, clients);
    println!(
        "{} requests answered, {} receipts kept, checksum {}",
        load.answered,
        service.kept(),
        load.checksum
    );
    println!("{:.0} requests/s", load.per_second());
    println!("{:.0} us p99", load.p99_micros());
    println!("{:.1} us of CPU per order", load.cpu_micros_per_request());
    if args.get(2).is_some_and(|a| a == "hold") {
        println!("pid {}", std::process::id());
        hold();
    }
}

/// Waits for standard input to close, the service still serving.
fn hold() {
    use std::io::{Read, Write};
    let _ = std::io::stdout().flush();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
}
