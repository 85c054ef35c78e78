//! An order service on axum, shaped like a small JSON backend's:
//! `POST /orders` takes an order as JSON, normalizes its SKU, prices it and
//! answers a JSON receipt; `GET /orders/{id}` answers the receipt an order
//! got. Its receipt store keeps every receipt and never evicts: the planted
//! leak, a few hundred bytes per order.
//!
//! `memprof-axum-service [REQUESTS] [CLIENTS] [hold]` starts the service on
//! 127.0.0.1 (a free port; axum on a tokio runtime of two workers), then
//! sends REQUESTS requests (default 20,000) from CLIENTS client threads
//! (default 4) in the same process, each over one HTTP/1.1 keep-alive
//! connection, a request at a time: three orders, then a look-up of the
//! last, and so on, timed after a warm-up of a tenth as many orders,
//! untimed. It prints the answers' checksum, then the throughput the
//! clients achieved, the 99th percentile of a request's latency and the
//! CPU time the process (the service and its clients) spent per request
//! meanwhile. With `hold` it then prints its pid and keeps serving until
//! its standard input closes (for a snapshot of the service as the load
//! left it). With `--features dhat` it runs under dhat's heap profiler.
//!
//! The service and its load in two processes, as a service meets its
//! clients: `memprof-axum-service serve` starts the service, prints its
//! port and pid, serves until its standard input closes, then prints the
//! receipts it kept; `memprof-axum-service load PORT PID [REQUESTS]
//! [CLIENTS]` sends the same load to the service at PORT and prints the
//! same figures, the CPU time counted being process PID's (the service's).

mod load;
mod pricing;
mod routes;
mod store;

use load::Server;

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    match args.first().map(String::as_str) {
        Some("serve") => {
            let service = routes::Service::start();
            println!("port {}", service.port());
            println!("pid {}", std::process::id());
            hold();
            println!("{} receipts kept", service.kept());
        }
        Some("load") => {
            let port = u16::try_from(number(1, 0)).expect("a port");
            let pid = u32::try_from(number(2, 0)).expect("a pid");
            let load = load::run(
                port,
                number(3, 20_000),
                number(4, 4).max(1),
                Server::Pid(pid),
            );
            println!(
                "{} requests answered, checksum {}",
                load.answered, load.checksum
            );
            print_figures(&load);
        }
        _ => {
            let (requests, clients) = (number(0, 20_000), number(1, 4).max(1));
            let service = routes::Service::start();
            let load = load::run(service.port(), requests, clients, Server::InProcess);
            println!(
                "{} requests answered, {} receipts kept, checksum {}",
                load.answered,
                service.kept(),
                load.checksum
            );
            print_figures(&load);
            if args.get(2).is_some_and(|a| a == "hold") {
                println!("pid {}", std::process::id());
                hold();
            }
        }
    }
}

fn print_figures(load: &load::Load) {
    println!("{:.0} requests/s", load.per_second());
    println!("{:.0} us p99", load.p99_micros());
    println!("{:.1} us of CPU per order", load.cpu_micros_per_request());
}

/// Waits for standard input to close, the service still serving.
fn hold() {
    use std::io::{Read, Write};
    let _ = std::io::stdout().flush();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
}
