struct Limits;

#[memprof::profile]
impl Limits {
    const MAX: usize = 8;

    const fn max() -> usize {
        Self::MAX
    }
}

fn main() {}
