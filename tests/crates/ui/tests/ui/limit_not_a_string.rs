#[memprof::profile(limit = 24)]
fn work() {}

fn main() {}
