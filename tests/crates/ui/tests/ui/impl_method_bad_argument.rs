struct Parser;

// The block's arguments are checked once, at the block.
#[memprof::profile(limit = "1 parsec")]
impl Parser {
    fn parse(&self) -> Vec<u8> {
        Vec::new()
    }
}

fn main() {}
