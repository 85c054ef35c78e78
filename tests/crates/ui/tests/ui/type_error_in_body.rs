#[memprof::profile]
fn work() -> u32 {
    let text: u32 = "not a number";
    text
}

fn main() {}
