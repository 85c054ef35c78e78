//! Bad input: one clear lowercase line on stderr, a non-zero exit, and never
//! a panic or a backtrace.

mod common;

use common::{assert_one_line_error, mprof, png_size, scratch, stderr};

const GOOD: &str = "CMDLINE prog\n\
                    MEM 1.000000 1795300840.0000\n\
                    MEM 2.000000 1795300840.1000\n\
                    MEM 1.500000 1795300840.2000\n";

#[test]
fn a_command_that_does_not_exist() {
    let dir = scratch("no-such-command");
    let out = mprof(&dir, &["run", "memprof-no-such-command", "--flag"]);
    assert_one_line_error(&out, "cannot run `memprof-no-such-command`: no such file");
    assert_eq!(out.status.code(), Some(127));
    // No file is left behind for a run that never started.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_command_that_is_not_executable() {
    let dir = scratch("not-executable");
    std::fs::write(dir.join("script"), "#!/bin/sh\n").unwrap();
    let out = mprof(&dir, &["run", "./script"]);
    assert_one_line_error(&out, "cannot run `./script`: permission denied");
    assert_eq!(out.status.code(), Some(126));
}

#[test]
fn an_empty_file() {
    let dir = scratch("empty");
    std::fs::write(dir.join("empty.dat"), "").unwrap();
    let out = mprof(&dir, &["plot", "empty.dat"]);
    assert_one_line_error(&out, "empty.dat holds no MEM samples");
    let out = mprof(&dir, &["peak", "empty.dat"]);
    assert_one_line_error(&out, "empty.dat holds no MEM samples");
}

#[test]
fn a_file_cut_short() {
    let dir = scratch("truncated");
    // Cut in the middle of the first sample.
    std::fs::write(dir.join("cut.dat"), "CMDLINE prog\nMEM 1.00").unwrap();
    let out = mprof(&dir, &["plot", "cut.dat"]);
    assert_one_line_error(&out, "cut.dat holds no MEM samples");
    // Cut after some samples: what is there is plotted, with one warning.
    std::fs::write(dir.join("cut.dat"), format!("{GOOD}MEM 3.0000")).unwrap();
    let out = mprof(&dir, &["plot", "cut.dat", "-o", "cut.png"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .next()
            .unwrap()
            .contains("skipped malformed line 5"),
        "{err}"
    );
    png_size(&std::fs::read(dir.join("cut.png")).unwrap());
}

#[test]
fn garbage_lines_are_skipped_with_one_warning() {
    let dir = scratch("garbage");
    let text =
        format!("{GOOD}\u{1}\u{2}binary junk\nMEM not-a-number 3\nFUNC f 1 2\n\nhello world\n");
    std::fs::write(dir.join("junk.dat"), text).unwrap();
    let out = mprof(&dir, &["plot", "junk.dat", "-o", "junk.png"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("junk.dat: skipped malformed line 5")
            && warnings[0].contains("and 4 more"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    let out = mprof(&dir, &["peak", "junk.dat"]);
    assert_eq!(common::stdout(&out), "junk.dat\t2.000 MiB\n");
}

#[test]
fn an_unwritable_output() {
    let dir = scratch("unwritable");
    std::fs::write(dir.join("ok.dat"), GOOD).unwrap();
    let out = mprof(&dir, &["plot", "ok.dat", "-o", "no-such-dir/out.png"]);
    assert_one_line_error(
        &out,
        "cannot write no-such-dir/out.png: no such file or directory",
    );
    let out = mprof(&dir, &["plot", "ok.dat", "-o", "out.jpg"]);
    assert_one_line_error(&out, "the output must end in .png or .svg");
    let out = mprof(&dir, &["run", "-o", "no-such-dir/run.dat", "true"]);
    assert_one_line_error(
        &out,
        "cannot create no-such-dir/run.dat: no such file or directory",
    );
}

#[test]
fn plot_with_no_files() {
    let dir = scratch("no-files");
    for command in ["plot", "peak"] {
        let out = mprof(&dir, &[command]);
        assert_one_line_error(&out, "no mprofile_*.dat file in the current directory");
    }
    let out = mprof(&dir, &["plot", "missing.dat"]);
    assert_one_line_error(&out, "`missing.dat` is neither a file nor the index");
    let out = mprof(&dir, &["rm", "0"]);
    assert_one_line_error(&out, "`0` is neither a file nor the index");
}

#[test]
fn a_directory_instead_of_a_file() {
    let dir = scratch("directory");
    std::fs::create_dir(dir.join("sub.dat")).unwrap();
    let out = mprof(&dir, &["plot", "sub.dat"]);
    assert_one_line_error(&out, "cannot read sub.dat: is a directory");
}
