#[memprof::profile(scopes = "thread")]
fn work() {}

fn main() {}
