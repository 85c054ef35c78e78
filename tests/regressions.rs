//! Regression tests, each named after what broke.

/// memprof once depended on serde_json, whose `PartialEq<Value>` impls for
/// the integer types are visible to every crate in the graph: with memprof
/// as a dependency, ordinary comparisons like these stopped compiling in
/// arrayvec's and smallvec's own tests. This file must keep compiling.
#[test]
fn depending_on_memprof_does_not_break_type_inference() {
    let bytes: Vec<u8> = Vec::new();
    assert_eq!(&*bytes, &[]);
    let sizes: [usize; 0] = [];
    assert_eq!(&sizes[..], &[]);
    // Use memprof, so that it and its dependencies are surely linked.
    let (_, m) = memprof::measure(|| 1 + 1);
    assert_eq!(m.increment, 0);
}
