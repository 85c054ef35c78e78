#[test]
fn second() {
    let kept = [
        memprof_json_run::from_second(),
        memprof_json_run::from_second(),
    ];
    assert_eq!(kept.iter().map(Vec::len).sum::<usize>(), 400);
}
