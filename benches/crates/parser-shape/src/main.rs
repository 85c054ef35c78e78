//! A small Markdown-like parser over a generated document: the shape of a
//! real parser's profile. Most of its calls go to tiny functions that look
//! at a byte or two and never allocate (scanners, classifiers, accessors),
//! called hundreds of millions of times; a few functions build the large
//! buffers (the block tree, the inline runs, the rendered HTML).
//!
//! `memprof-parser-shape [MEGABYTES]` parses and renders a document of that
//! size (default 8) and prints its checksum. With `--features dhat` it runs
//! under dhat's heap profiler.

mod document;
mod inline;
mod render;
mod scan;

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let megabytes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8);
    let text = document::generate(megabytes << 20);
    let blocks = document::parse(&text);
    let html = render::render(&text, &blocks);
    println!(
        "{} blocks, {} bytes of html, checksum {}",
        blocks.len(),
        html.len(),
        checksum(&html)
    );
}

/// A checksum of the output, so that nothing is optimized away.
fn checksum(html: &str) -> u64 {
    html.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
