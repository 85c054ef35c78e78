#[memprof::profile(limit = "99999999999 GiB")]
fn work() {}

fn main() {}
