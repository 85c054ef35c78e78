#[memprof::profile(limit = "")]
fn work() {}

fn main() {}
