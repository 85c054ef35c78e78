trait Store {
    #[memprof::profile]
    fn get(&self) -> u32;
}

fn main() {}
