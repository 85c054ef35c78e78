//! The service: a thread accepts connections on 127.0.0.1, a thread per
//! connection reads its request lines and writes the answers, and each
//! request's handler runs as a task on a tokio runtime of two workers.

use crate::cache::IdempotencyCache;
use crate::{order, pricing, render};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use tokio::runtime::{Handle, Runtime};

pub struct Service {
    port: u16,
    cache: Arc<IdempotencyCache>,
    // Kept for the service's life: its workers run the handlers.
    _runtime: Runtime,
}

impl Service {
    pub fn start() -> Service {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("a tokio runtime");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let port = listener.local_addr().expect("its address").port();
        let cache = Arc::new(IdempotencyCache::default());
        let handle = runtime.handle().clone();
        let shared = Arc::clone(&cache);
        std::thread::spawn(move || accept(listener, handle, shared));
        Service {
            port,
            cache,
            _runtime: runtime,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Orders in the idempotency cache.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

fn accept(listener: TcpListener, runtime: Handle, cache: Arc<IdempotencyCache>) {
    for stream in listener.incoming().flatten() {
        let (runtime, cache) = (runtime.clone(), Arc::clone(&cache));
        std::thread::spawn(move || serve(stream, runtime, cache));
    }
}

/// Answers a connection's requests, one line each, until the client
/// closes it.
fn serve(stream: TcpStream, runtime: Handle, cache: Arc<IdempotencyCache>) {
    let _ = stream.set_nodelay(true);
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut writer = &stream;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let task = runtime.spawn(handle_order(line.clone(), Arc::clone(&cache)));
        let answer = runtime
            .block_on(task)
            .unwrap_or_else(|_| render::error("internal"));
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// One order: its answer, from the cache when the order was seen before.
async fn handle_order(request: String, cache: Arc<IdempotencyCache>) -> String {
    let Some(order) = order::parse(&request) else {
        return render::error("bad request");
    };
    if let Some(answer) = cache.get(&order.id) {
        return answer;
    }
    // As a handler that awaits a store would: the rest may run on the
    // other worker.
    tokio::task::yield_now().await;
    let sku = order::normalize_sku(&order.sku);
    let quote = pricing::price(&sku, order.quantity);
    let answer = render::answer(&order, &sku, &quote);
    cache.remember(&order.id, &answer);
    answer
}
