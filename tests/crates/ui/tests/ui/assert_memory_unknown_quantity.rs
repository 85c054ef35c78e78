fn main() {
    memprof::assert_memory!(rss < 10 MiB, { vec![0u8; 10] });
}
