#[memprof::profile(scope = 3)]
fn work() {}

fn main() {}
