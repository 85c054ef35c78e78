//! Byte figures, and the text of tables whose names and source hold
//! control characters.

use super::*;

#[test]
fn auto_units_are_binary() {
    let s = RenderSettings::default();
    assert_eq!(bytes(0, &s), "0 B");
    assert_eq!(bytes(1023, &s), "1023 B");
    assert_eq!(bytes(1024, &s), "1.0 KiB");
    assert_eq!(bytes(-1536, &s), "-1.5 KiB");
    assert_eq!(bytes(8 << 20, &s), "8.0 MiB");
    assert_eq!(bytes(3 << 30, &s), "3.0 GiB");
}

#[test]
fn fixed_unit_and_precision() {
    let s = RenderSettings {
        unit: Some(Unit::MiB),
        precision: 3,
        ..RenderSettings::default()
    };
    assert_eq!(bytes(1 << 19, &s), "0.500 MiB");
    let s = RenderSettings {
        unit: Some(Unit::B),
        precision: 3,
        ..RenderSettings::default()
    };
    assert_eq!(bytes(1 << 20, &s), "1048576 B");
}

#[test]
fn a_small_negative_figure_is_zero_without_a_sign() {
    // Regression: `MEMPROF_UNIT=GB` wrote -0.0 GiB.
    let s = RenderSettings {
        unit: Some(Unit::GiB),
        precision: 1,
        ..RenderSettings::default()
    };
    assert_eq!(bytes(-4096, &s), "0.0 GiB");
    assert_eq!(bytes(4096, &s), "0.0 GiB");
    assert_eq!(bytes(-(3 << 29), &s), "-1.5 GiB");
    let s = RenderSettings {
        unit: Some(Unit::MiB),
        precision: 0,
        ..RenderSettings::default()
    };
    assert_eq!(bytes(-100, &s), "0 MiB");
    assert_eq!(bytes(-(1 << 20), &s), "-1 MiB");
}

/// A function of one call whose name, file and source line hold ESC, an
/// OSC sequence (`ESC ] 0 ; title BEL`, which retitles a terminal) and
/// DEL.
fn hostile() -> Report {
    let row = |line: u32, text: &str, figures: Option<i64>| {
        let mut row = crate::report::LineReport::empty(line, text.to_owned());
        if let Some(bytes) = figures {
            row.mem_usage = Some(bytes);
            row.increment = Some(bytes);
            row.peak = Some(bytes as u64);
            row.occurrences = 1;
        }
        row
    };
    Report {
        functions: vec![FunctionReport::of_lines(
            "app::\u{1b}[2Jtitle",
            "src/\u{1b}]0;x\u{7}.rs",
            vec![
                row(1, "#[profile]", None),
                row(2, "fn title() {", Some(11)),
                row(
                    3,
                    "\tlet s = String::from(\"\u{1b}]0;title\u{7}\u{1b}[2J\u{7f}\");",
                    Some(11),
                ),
                row(4, "}", Some(0)),
            ],
        )],
    }
}

#[test]
fn a_table_shows_control_characters_escaped_and_stays_aligned() {
    let text = table(&hostile().functions[0], true, &RenderSettings::default());
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            r"Filename: src/\u{1b}]0;x\u{7}.rs   Function: app::\u{1b}[2Jtitle   Calls: 1",
            "",
            " Line #    Mem usage     Increment         Peak   Occurrences   Line Contents",
            "=============================================================================",
            "      1                                                         #[profile]",
            "      2         11 B          11 B         11 B             1   fn title() {",
            r#"      3         11 B          11 B         11 B             1       let s = String::from("\u{1b}]0;title\u{7}\u{1b}[2J\u{7f}");"#,
            "      4          0 B           0 B          0 B             1   }",
        ]
    );
}

#[test]
fn the_summary_shows_control_characters_escaped_and_stays_aligned() {
    let summary = hostile().summary();
    let text = super::summary(&summary, &RenderSettings::default());
    let top = r#"      11 B   11 B        0             1        3   app::\u{1b}[2Jtitle   let s = String::from("\u{1b}]0;title\u{7}\u{1b}[2J\u{7f}");"#;
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "Summary: 1 function ran, highest peak first",
            "",
            " Peak   Kept/call   Kept   Allocs   Allocated   Calls   Function              File",
            "==================================================================================",
            r" 11 B        11 B   11 B        0         0 B       1   app::\u{1b}[2Jtitle   src/\u{1b}]0;x\u{7}.rs",
            "",
            "Top lines by Increment",
            "",
            " Increment   Peak   Allocs   Occurrences   Line #   Function              Line Contents",
            "=======================================================================================",
            top,
            "",
            "Top lines by Peak",
            "",
            " Increment   Peak   Allocs   Occurrences   Line #   Function              Line Contents",
            "=======================================================================================",
            top,
        ]
    );
}
