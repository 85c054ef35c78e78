#[memprof::profile]
fn work() -> u32 {
    let x = ;
    x
}

fn main() {}
