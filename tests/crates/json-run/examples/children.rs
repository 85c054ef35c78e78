//! Run by tests/json_run.rs with `cargo run --example children`: calls a
//! profiled function, then starts copies of itself that call it too, one
//! after another. Every process adds to the same `MEMPROF_JSON`.

/// The copies the first process starts.
const CHILDREN: usize = 20;

fn main() {
    assert_eq!(memprof_json_run::from_first(), 100);
    if std::env::var_os("JSON_RUN_CHILD").is_some() {
        return;
    }
    let me = std::env::current_exe().expect("its own path");
    for _ in 0..CHILDREN {
        let status = std::process::Command::new(&me)
            .env("JSON_RUN_CHILD", "1")
            .status()
            .expect("a copy starts");
        assert!(status.success());
    }
}
