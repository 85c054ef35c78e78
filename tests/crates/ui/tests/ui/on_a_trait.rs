#[memprof::profile]
pub trait Store {
    fn get(&self) -> u32;

    fn twice(&self) -> u32 {
        self.get() * 2
    }
}

fn main() {}
