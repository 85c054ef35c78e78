fn main() {
    memprof::memit!();
}
