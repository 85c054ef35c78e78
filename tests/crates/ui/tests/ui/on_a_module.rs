#[memprof::profile]
mod storage {
    pub fn load() -> Vec<u8> {
        vec![0; 16]
    }
}

fn main() {}
