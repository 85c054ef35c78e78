use memprof::profile;

#[profile]
#[memprof::profile(scope = "process")]
fn twice() -> usize {
    let v = vec![0u8; 8];
    v.len()
}

fn main() {
    twice();
}
