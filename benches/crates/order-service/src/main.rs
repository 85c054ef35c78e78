//! An order service shaped like a small backend's: a request line is
//! parsed, its SKU normalized, the order priced and a JSON answer rendered,
//! by a handler that runs as a tokio task. Its idempotency cache keeps
//! every answer by order id and never evicts: the planted leak, a few
//! hundred bytes per order.
//!
//! `memprof-order-service [REQUESTS] [CLIENTS] [hold]` starts the service
//! on 127.0.0.1 (a free port), then sends REQUESTS orders (default 20,000)
//! from CLIENTS client threads (default 4), each over one keep-alive
//! connection, a request at a time. It prints the answers' checksum, then
//! the throughput the clients achieved and the CPU time the process (the
//! service and its clients) spent per order meanwhile. With `hold` it then
//! prints its pid and keeps serving until its standard input closes (for a
//! snapshot of the service as the load left it). With `--features dhat`
//! it runs under dhat's heap profiler.

mod cache;
mod load;
mod order;
mod pricing;
mod render;
mod server;

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
    let service = server::Service::start();
    let load = load::run(service.port(), requests, clients);
    println!(
        "{} orders answered, {} cached, checksum {}",
        load.answered,
        service.cached(),
        load.checksum
    );
    println!("{:.0} requests/s", load.per_second());
    println!("{:.1} us of CPU per order", load.cpu_micros_per_order());
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
