#[memprof::profile(scope = "thread", scope = "process")]
fn work() {}

fn main() {}
