#[memprof::profile]
struct Config {
    size: usize,
}

fn main() {}
