#[memprof::profile(limit = "12 parsecs")]
fn work() {}

fn main() {}
