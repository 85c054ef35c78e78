//! The service: an axum router on a tokio runtime of two workers, serving
//! 127.0.0.1. `POST /orders` prices an order and keeps its receipt; `GET
//! /orders/{id}` answers a kept receipt.

use crate::pricing::{self, Order};
use crate::store::Receipts;
use axum::Router;
use axum::extract::{Json, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use std::sync::Arc;
use tokio::runtime::Runtime;

pub struct Service {
    port: u16,
    receipts: Arc<Receipts>,
    // Kept for the service's life: its workers serve the requests.
    _runtime: Runtime,
}

impl Service {
    pub fn start() -> Service {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
            .expect("a tokio runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let port = listener.local_addr().expect("its address").port();
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let receipts = Arc::new(Receipts::default());
        let app = router(Arc::clone(&receipts));
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, app).await
        });
        Service {
            port,
            receipts,
            _runtime: runtime,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Receipts in the store.
    pub fn kept(&self) -> usize {
        self.receipts.len()
    }
}

fn router(receipts: Arc<Receipts>) -> Router {
    Router::new()
        .route("/orders", post(create_order))
        .route("/orders/{id}", get(find_order))
        .with_state(receipts)
}

/// Prices an order and keeps its receipt; a retried order gets the receipt
/// it got before.
async fn create_order(State(receipts): State<Arc<Receipts>>, Json(order): Json<Order>) -> Response {
    if let Some(receipt) = receipts.get(&order.id) {
        return json(StatusCode::OK, receipt);
    }
    if order.quantity == 0 {
        return json(
            StatusCode::UNPROCESSABLE_ENTITY,
            r#"{"error":"no quantity"}"#.to_owned(),
        );
    }
    let receipt = pricing::price(order);
    let body = serde_json::to_string(&receipt).expect("a receipt serializes");
    receipts.keep(&receipt.id, &body);
    json(StatusCode::CREATED, body)
}

async fn find_order(State(receipts): State<Arc<Receipts>>, Path(id): Path<String>) -> Response {
    match receipts.get(&id) {
        Some(receipt) => json(StatusCode::OK, receipt),
        None => json(
            StatusCode::NOT_FOUND,
            r#"{"error":"no such order"}"#.to_owned(),
        ),
    }
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
