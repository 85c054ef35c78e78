//! Without a memprof allocator there are no figures: memprof says so once,
//! clearly, instead of printing zeros. This test binary installs none.

use std::process::Command;

#[test]
#[ignore = "a child run: this file's tests start it"]
fn child_measure_twice() {
    if std::env::var_os("MEMPROF_CHILD").is_some() {
        let (v, m) = memprof_runtime::measure(|| vec![0u8; 4096]);
        assert_eq!(v.len(), 4096);
        assert_eq!(m.increment, 0);
        let _ = memprof_runtime::measure(|| vec![0u8; 4096]);
        assert!(!memprof_runtime::alloc::is_installed());
    }
}

#[test]
fn says_once_how_to_install_an_allocator() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_measure_twice", "--ignored", "--exact", "--nocapture"])
        .env("MEMPROF_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.matches("memprof: no memprof allocator is installed")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("#[global_allocator] static ALLOC: memprof::Allocator"));
}
