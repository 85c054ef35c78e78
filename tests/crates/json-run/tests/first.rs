#[test]
fn first() {
    assert_eq!(memprof_json_run::from_first(), 100);
}
