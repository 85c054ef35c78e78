#[memprof::profile(scope = "everything")]
fn work() {}

fn main() {}
