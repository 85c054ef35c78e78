fn main() {
    memprof::assert_memory!(increment > "-5 MiB", { vec![0u8; 10] });
}
