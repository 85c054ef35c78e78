fn main() {
    memprof::assert_memory!(peak < "1.5.2 MiB", { vec![0u8; 10] });
}
