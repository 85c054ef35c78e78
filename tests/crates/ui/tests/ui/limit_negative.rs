#[memprof::profile(max_retained = "-5 MiB")]
fn work() {}

fn main() {}
