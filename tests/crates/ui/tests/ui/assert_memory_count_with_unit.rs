fn main() {
    memprof::assert_memory!(allocations < 10 MiB, { vec![0u8; 10] });
}
