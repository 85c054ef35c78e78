//! Unit tests of `annotate`: what the text gets, and what is counted.

use super::*;

fn annotate_text(text: &str, selection: &Selection) -> (String, Vec<String>, Tally) {
    // A directory per call: the tests run at once.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cargo-memprof-unit-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = dir.join("lib.rs");
    std::fs::write(&root, text).unwrap();
    let mut out = CrateAnnotation::default();
    let mut seen = Default::default();
    annotate_crate(&root, "demo", selection, &mut seen, &mut out).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let annotated = out
        .files
        .get(&root)
        .cloned()
        .unwrap_or_else(|| text.to_string());
    let paths = out.functions.iter().map(|f| f.path.clone()).collect();
    (annotated, paths, out.tally)
}

#[test]
fn a_function_calling_the_crates_item_free_macros_names_them() {
    let text = "macro_rules! tri { ($e:expr) => { match $e { Ok(v) => v, Err(e) => return Err(e) } }; }\n\
                macro_rules! new_type { ($n:ident) => { struct $n; }; }\n\
                fn a(r: Result<u8, ()>) -> Result<u8, ()> { let v = tri!(r); new_type!(X); Ok(v) }\n\
                fn b() -> u8 { 1 }\n";
    let (out, _, _) = annotate_text(text, &Selection::default());
    assert!(
        out.contains("#[::memprof::profile(expr_macros(tri))] fn a("),
        "{out}"
    );
    assert!(out.contains("#[::memprof::profile] fn b("), "{out}");
}

#[test]
fn attribute_goes_after_outer_attributes_on_the_same_line() {
    let text =
        "#[inline]\npub fn a() {}\nconst fn b() {}\nstruct S;\nimpl S {\n    fn c(&self) {}\n}\n";
    let (out, paths, tally) = annotate_text(text, &Selection::default());
    assert_eq!(
        out,
        "#[inline]\n#[::memprof::profile] pub fn a() {}\nconst fn b() {}\nstruct S;\nimpl S {\n    #[::memprof::profile] fn c(&self) {}\n}\n"
    );
    assert_eq!(paths, ["demo::a", "demo::S::c"]);
    assert_eq!(tally.annotated, 2);
    assert_eq!(tally.const_fn, 1);
}

#[test]
fn a_path_that_climbs_is_named_as_the_copy_names_it() {
    assert_eq!(
        lexically_normal(Path::new("/w/src/bin/../work.rs")),
        Path::new("/w/src/work.rs")
    );
    assert_eq!(
        lexically_normal(Path::new("/w/./src/a/b/../../c.rs")),
        Path::new("/w/src/c.rs")
    );
    assert_eq!(lexically_normal(Path::new("../x.rs")), Path::new("../x.rs"));
}

#[test]
fn counts_what_it_leaves_as_written() {
    let text = "macro_rules! m { () => { fn x() {} fn y() {} } }\n#[memprof::profile]\nfn done() {}\nmod inner { fn f() {} }\n";
    let skip = Selection {
        only: None,
        skip: Some(Regex::new("inner").unwrap()),
        ..Selection::default()
    };
    let (_, paths, tally) = annotate_text(text, &skip);
    assert!(paths.is_empty());
    assert_eq!(tally.in_macros, 2);
    assert_eq!(tally.already, 1);
    assert_eq!(tally.deselected, 1);
}
