//! Parses a generated TOML document of N thousand tables into a
//! `toml::Table` and prints it back, three times; prints the bytes
//! printed. `--features dhat` runs it under dhat's heap profiler.

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn document(thousands: usize) -> String {
    let mut doc = String::new();
    for i in 0..thousands * 1000 {
        doc.push_str(&format!(
            "[item{i}]\nid = {i}\nname = \"item {i}\"\ntags = [\"a\", \"b\", \"c\"]\n\
             price = {}.5\nnested = {{ x = [1, 2, 3], y = true }}\n\n",
            i % 1000
        ));
    }
    doc
}

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let thousands = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let doc = document(thousands);
    let mut printed = 0;
    for _ in 0..3 {
        let table: toml::Table = toml::from_str(&doc).expect("valid TOML");
        printed += toml::to_string(&table).expect("printable").len();
    }
    println!("{printed}");
}
