fn main() {
    memprof::assert_memory!(peak < 10 parsecs, { vec![0u8; 10] });
}
