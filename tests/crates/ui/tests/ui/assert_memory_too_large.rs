fn main() {
    memprof::assert_memory!(peak < 99999999999 GiB, { vec![0u8; 10] });
}
