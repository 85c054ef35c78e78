#[memprof::profile(limit = "1.5.2 MiB")]
fn work() {}

fn main() {}
