//! Compresses N MiB of generated text with lz4_flex (LZ4 frames) and
//! decompresses it back, three times; prints the compressed size.
//! `--features dhat` runs it under dhat's heap profiler.

use std::io::{Read, Write};

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn text(mebibytes: usize) -> Vec<u8> {
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
    let mut out = Vec::with_capacity(mebibytes << 20);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    while out.len() < mebibytes << 20 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(words[(seed % 8) as usize].as_bytes());
        out.extend_from_slice(format!(" {} ", seed % 1000).as_bytes());
    }
    out
}

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let mebibytes = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let text = text(mebibytes);
    let mut compressed = 0;
    for _ in 0..3 {
        let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
        encoder.write_all(&text).expect("compresses");
        let packed = encoder.finish().expect("finishes");
        let mut unpacked = Vec::new();
        lz4_flex::frame::FrameDecoder::new(packed.as_slice())
            .read_to_end(&mut unpacked)
            .expect("decompresses");
        assert_eq!(unpacked, text);
        compressed = packed.len();
    }
    println!("{compressed}");
}
