#[memprof::profile(gpu = "off")]
fn f() {}

fn main() {}
