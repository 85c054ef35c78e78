//! Parses a generated JSON document of N thousand records into a
//! `serde_json::Value` and prints it back, three times; prints the bytes
//! printed. `--features dhat` runs it under dhat's heap profiler.

#[cfg(feature = "dhat")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn document(thousands: usize) -> String {
    let mut doc = String::from("[");
    for i in 0..thousands * 1000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            "{{\"id\":{i},\"name\":\"item {i}\",\"tags\":[\"a\",\"b\",\"c\"],\
             \"price\":{}.5,\"nested\":{{\"x\":[1,2,3],\"y\":null}}}}",
            i % 1000
        ));
    }
    doc.push(']');
    doc
}

fn main() {
    #[cfg(feature = "dhat")]
    let _profiler = dhat::Profiler::new_heap();
    let thousands = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let doc = document(thousands);
    let mut printed = 0;
    for _ in 0..3 {
        let value: serde_json::Value = serde_json::from_str(&doc).expect("valid JSON");
        printed += serde_json::to_string(&value).expect("printable").len();
    }
    println!("{printed}");
}
