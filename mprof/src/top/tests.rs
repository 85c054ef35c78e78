//! `mprof top`'s screen and keys, drawn on ratatui's test backend.

use super::app::{Action, App, Screen};
use super::model::tests::snapshot;
use super::view::frame_text;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(app: &mut App, code: KeyCode) -> Action {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// An app that has seen two snapshots two seconds apart.
fn watching() -> App {
    let mut app = App::default();
    app.update(snapshot(
        1000.0,
        &[
            ("app::cache::grow", 10, 1000, 100, 10),
            ("app::parse", 4, 0, 64, 8),
        ],
    ));
    app.update(snapshot(
        1002.0,
        &[
            ("app::cache::grow", 20, 5000, 400, 30),
            ("app::parse", 8, 0, 64, 16),
            ("app::render", 1, 2048, 4096, 3),
        ],
    ));
    app
}

/// The frame's lines, trailing blanks trimmed.
fn frame(app: &App) -> Vec<String> {
    frame_text(app, 80, 9).lines().map(str::to_owned).collect()
}

#[test]
fn the_functions_screen_shows_heap_rates_and_keys() {
    let app = watching();
    assert_eq!(
        frame(&app),
        [
            "pid 42  up 2.0s  heap 3.0 MiB now, 5.0 MiB highest seen",
            // The window (a minute) is filling: the rates cover 2 s.
            "3 functions, sorted by kept; rates over 2.0s of 1m 00s",
            "  Function                  Calls        Peak        Kept     Kept/min  Allocs/s",
            // 4,000 B more in 2 s: 120,000 B a minute; 20 allocations.
            "> app::cache::grow             20       400 B     4.9 KiB   +117.2 KiB      10.0",
            // New since the first snapshot: all it keeps is growth.
            "  app::render                   1     4.0 KiB     2.0 KiB    +60.0 KiB       1.5",
            "  app::parse                    8        64 B         0 B          0 B       4.0",
            "",
            "",
            "q: quit  s: sort  /: filter  p: pause  Up/Down: select  Enter: lines",
        ]
    );
}

#[test]
fn once_has_no_selection_and_no_keys() {
    let mut app = App::for_once();
    app.update(snapshot(1005.0, &[("app::cache::grow", 1, 8, 8, 1)]));
    assert_eq!(
        frame_text(&app, 80, 4),
        "pid 42  up 5.0s  heap 3.0 MiB now, 5.0 MiB highest seen\n\
         1 function, sorted by kept\n\
         Function                    Calls        Peak        Kept     Kept/min  Allocs/s\n\
         app::cache::grow                1         8 B         8 B            -         -\n"
    );
}

const LONG: &str = "live_service::handlers::orders::idempotency::grow_cache";

#[test]
fn a_long_name_is_elided_from_the_left_on_the_screen() {
    let mut app = App::default();
    app.update(snapshot(1005.0, &[(LONG, 1, 8, 8, 1)]));
    // The name's column: 80 less the figures' 52, 5 gaps and the mark.
    let row = frame(&app)[3].clone();
    assert_eq!(
        row,
        "> …mpotency::grow_cache         1         8 B         8 B            -         -"
    );
}

#[test]
fn once_without_a_terminal_shows_whole_names() {
    let mut app = App::for_once();
    app.update(snapshot(1005.0, &[(LONG, 1, 8, 8, 1)]));
    // The width `--once` takes where stdout is no terminal: the name and
    // the figures' 52 columns with 5 gaps, and at least 100.
    let width = super::view::width_for_whole_names(&app).max(100);
    assert_eq!(usize::from(width), LONG.len() + 57);
    let text = frame_text(&app, width, 4);
    assert!(text.contains(&format!("\n{LONG}  ")), "{text}");
}

#[test]
fn s_cycles_the_sort_key() {
    let mut app = watching();
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(
        frame(&app)[1],
        "3 functions, sorted by kept/min; rates over 2.0s of 1m 00s"
    );
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(
        frame(&app)[1],
        "3 functions, sorted by peak; rates over 2.0s of 1m 00s"
    );
    assert!(
        frame(&app)[3].starts_with("  app::render "),
        "{:?}",
        frame(&app)
    );
    // The selection stays with its function as the rows move.
    assert!(frame(&app)[4].starts_with("> app::cache::grow "));
}

#[test]
fn slash_filters_by_name_and_esc_clears_it() {
    let mut app = watching();
    key(&mut app, KeyCode::Char('/'));
    typed(&mut app, "cache");
    assert_eq!(
        frame(&app)[1],
        "1 function, sorted by kept, filter: cache_; rates over 2.0s of 1m 00s"
    );
    assert_eq!(
        frame(&app)[8],
        "type a name's part, Enter: keep, Esc: clear"
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        frame(&app)[1],
        "1 function, sorted by kept, filter: cache; rates over 2.0s of 1m 00s"
    );
    // Keys are keys again: `q` quits rather than filtering.
    assert_eq!(key(&mut app, KeyCode::Char('q')), Action::Quit);
    key(&mut app, KeyCode::Char('/'));
    key(&mut app, KeyCode::Esc);
    assert_eq!(
        frame(&app)[1],
        "3 functions, sorted by kept; rates over 2.0s of 1m 00s"
    );
}

#[test]
fn p_pauses_and_new_snapshots_wait() {
    let mut app = watching();
    key(&mut app, KeyCode::Char('p'));
    app.update(snapshot(1003.0, &[("app::cache::grow", 99, 1, 1, 1)]));
    assert!(frame(&app)[0].ends_with("highest seen  [paused]"));
    assert!(frame(&app)[3].contains(" 20 "), "{:?}", frame(&app));
    key(&mut app, KeyCode::Char('p'));
    app.update(snapshot(1004.0, &[("app::cache::grow", 99, 1, 1, 1)]));
    assert!(frame(&app)[3].contains(" 99 "), "{:?}", frame(&app));
}

#[test]
fn enter_opens_the_selected_functions_lines_and_esc_goes_back() {
    let mut app = watching();
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    assert_eq!(app.selected.as_deref(), Some("app::parse"));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.screen, Screen::Lines("app::cache::grow".to_owned()));
    assert_eq!(
        &frame(&app)[2..],
        [
            "app::cache::grow (src/app.rs), 20 calls",
            " Line #   Increment        Peak  Occurrences Line Contents",
            "      1                                      #[profile]",
            "      2     4.9 KiB       400 B           20 fn f() {",
            "      3     4.9 KiB       400 B           20     cache.push(entry);",
            "",
            "q: quit  Esc: back  p: pause",
        ]
    );
    // Refreshed live: the next snapshot's figures.
    app.update(snapshot(1003.0, &[("app::cache::grow", 21, 6000, 400, 31)]));
    assert_eq!(
        frame(&app)[5],
        "      2     5.9 KiB       400 B           21 fn f() {"
    );
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.screen, Screen::Functions);
}

#[test]
fn ctrl_c_quits_even_while_typing_a_filter() {
    let mut app = watching();
    key(&mut app, KeyCode::Char('/'));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.on_key(ctrl_c), Action::Quit);
}

#[test]
fn a_program_that_ended_is_said_in_the_header_over_its_last_figures() {
    let mut app = watching();
    app.notice = Some("process 42 ended (exit status 0)".to_owned());
    let wide = frame_text(&app, 120, 9);
    assert_eq!(
        wide.lines().next().unwrap(),
        "pid 42  up 2.0s  heap 3.0 MiB now, 5.0 MiB highest seen  [process 42 ended (exit status 0)]"
    );
    assert!(frame(&app)[3].starts_with("> app::cache::grow "));
    let mut waiting = App::default();
    assert_eq!(
        frame(&waiting)[0],
        "mprof top: waiting for the first snapshot"
    );
    waiting.notice = Some("process 42 refused: x; trying again".to_owned());
    assert_eq!(
        frame(&waiting)[0],
        "mprof top: process 42 refused: x; trying again"
    );
}

#[test]
fn control_characters_in_a_snapshot_are_shown_escaped() {
    // The program's JSON holds its source raw (JSON escapes the control
    // characters itself); the screen shows them as every output does.
    let document = serde_json::json!({"schema": 1, "time": 1.0, "uptime": 1.0, "pid": 42,
    "heap": 0, "heap_high": 0, "functions": [{
    "name": "app::\u{1b}[2Jtitle", "file": "src/\u{1b}]0;x\u{7}.rs", "calls": 1,
    "lines": [
        {"line": 1, "increment": null, "peak": null, "contents": "#[profile]"},
        {"line": 2, "increment": 11, "peak": 11, "occurrences": 1, "contents": "fn title() {"},
        {"line": 3, "increment": 11, "peak": 11, "occurrences": 1,
         "contents": "let s = String::from(\"\u{1b}]0;title\u{7}\u{7f}\");"},
    ]}]});
    let mut app = App::default();
    app.update(super::model::Snapshot::parse(&document.to_string()).unwrap());
    assert_eq!(
        frame(&app)[3],
        r"> app::\u{1b}[2Jtitle           1        11 B        11 B            -         -"
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        &frame(&app)[2..6],
        [
            r"app::\u{1b}[2Jtitle (src/\u{1b}]0;x\u{7}.rs), 1 calls",
            " Line #   Increment        Peak  Occurrences Line Contents",
            "      1                                      #[profile]",
            "      2        11 B        11 B            1 fn title() {",
        ]
    );
    assert_eq!(
        frame_text(&app, 120, 9).lines().nth(6).unwrap(),
        r#"      3        11 B        11 B            1 let s = String::from("\u{1b}]0;title\u{7}\u{7f}");"#
    );
}

#[test]
fn live_that_leaves_blocks_out_says_so_in_the_header_and_marks_the_function() {
    // A Live snapshot (with sites): the function's tables had no room for
    // 3 of its blocks, 4,096 bytes.
    let document = serde_json::json!({"schema": 1, "time": 1000.0, "uptime": 1.0, "pid": 42,
        "heap": 3 << 20, "heap_high": 5 << 20, "functions": [
        {"name": "app::keep", "file": "src/app.rs", "calls": 1,
         "sites_left_out": {"unsited_allocations": 0, "unsited_bytes": 0,
             "unfollowed_allocations": 3, "unfollowed_bytes": 4096,
             "unpaired_allocations": 0, "unpaired_bytes": 0},
         "lines": [
            {"line": 1, "increment": null, "peak": null, "contents": "#[profile]"},
            {"line": 2, "increment": 8192, "peak": 8192, "allocations": 5,
             "occurrences": 1, "in_use_bytes": 4096, "in_use_allocations": 2,
             "contents": "fn keep() {"},
        ]},
        {"name": "app::parse", "file": "src/app.rs", "calls": 1, "lines": [
            {"line": 2, "increment": 0, "peak": 64, "allocations": 1, "occurrences": 1,
             "in_use_bytes": 0, "in_use_allocations": 0, "contents": "fn parse() {"},
        ]},
    ]});
    let mut app = App::for_once();
    app.update(super::model::Snapshot::parse(&document.to_string()).unwrap());
    let text = frame_text(&app, 160, 5);
    assert_eq!(
        text.lines().nth(1),
        Some(
            "2 functions, sorted by live; Live+ leaves out what is still allocated of 3 \
             allocations, 4.0 KiB, that memprof's tables had no room to follow"
        ),
        "{text}"
    );
    let keep = text.lines().find(|l| l.starts_with("app::keep")).unwrap();
    assert!(keep.contains(" 4.0 KiB+ "), "{keep}");
    let parse = text.lines().find(|l| l.starts_with("app::parse")).unwrap();
    assert!(!parse.contains('+'), "{parse}");
}

#[test]
fn once_lines_opens_the_named_function_or_the_first_whose_name_has_it() {
    let mut app = App::for_once();
    app.update(snapshot(
        1.0,
        &[
            ("app::grow", 1, 10, 10, 1),
            ("app::grow_cache", 1, 5000, 10, 1),
        ],
    ));
    // Its whole name, though another sorts first.
    assert!(app.open_lines("app::grow"));
    assert_eq!(app.screen, Screen::Lines("app::grow".to_owned()));
    // A part: the first in the sort's order (most kept), as `/` and Enter.
    assert!(app.open_lines("grow"));
    assert_eq!(app.screen, Screen::Lines("app::grow_cache".to_owned()));
    assert!(!app.open_lines("parse"));
}

/// A service leaking 1 KiB blocks at 8 MiB a minute under sampled sites
/// (one sample per 32 KiB, as `MEMPROF_SITES=sample`): its snapshots a
/// second apart from `0` to `seconds`, each function's Live scaled from
/// the blocks sampled so far, as the runtime scales them. A block is
/// sampled with probability `p = 1 - exp(-1024 / 32768)` and stands for
/// 1024 / p bytes; xorshift64* with a fixed seed draws, so the figures
/// repeat.
fn sampled_leak(seconds: u32) -> Vec<super::model::Snapshot> {
    const MEAN: f64 = 32768.0;
    const BLOCK: f64 = 1024.0;
    let p = 1.0 - (-BLOCK / MEAN).exp();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut draw = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut made, mut sampled) = (0u64, 0u64);
    (0..=seconds)
        .map(|second| {
            // 8 MiB a minute in blocks of 1 KiB: 8,192 blocks a minute.
            let due = u64::from(second) * 8192 / 60;
            while made < due {
                made += 1;
                if draw() < p {
                    sampled += 1;
                }
            }
            let live = (sampled as f64 * (BLOCK / p)).round() as u64;
            let blocks = (sampled as f64 / p).round() as u64;
            let document = serde_json::json!({"schema": 1, "time": 1000.0 + f64::from(second),
                "uptime": f64::from(second), "pid": 42, "heap": 3 << 20, "heap_high": 5 << 20,
                "sample_mean": 32768, "functions": [
                {"name": "svc::handle_order", "file": "src/svc.rs", "calls": made, "lines": [
                    {"line": 2, "increment": made * 1024, "peak": 1024, "allocations": made,
                     "occurrences": made, "in_use_bytes": live, "in_use_allocations": blocks,
                     "contents": "fn handle_order() {"},
                ]},
            ]});
            super::model::Snapshot::parse(&document.to_string()).unwrap()
        })
        .collect()
}

/// The leaking function's Live/min and ± on each frame of an app with a
/// window of `window` seconds, from the first frame whose window has filled.
fn leak_rates(window: u64) -> Vec<(f64, f64)> {
    let mut app = App::with_window(std::time::Duration::from_secs(window));
    let mut rates = Vec::new();
    for (second, snapshot) in sampled_leak(180).into_iter().enumerate() {
        app.update(snapshot);
        let row = &app.rows[0];
        if second as u64 >= window {
            rates.push((
                row.kept_per_minute.unwrap(),
                row.kept_per_minute_error.unwrap(),
            ));
        }
    }
    rates
}

/// The leak's row after `seconds` of snapshots, on a screen whose rates
/// cover `window` seconds.
fn leak_row(window: u64, seconds: u32) -> String {
    let mut app = App::with_window(std::time::Duration::from_secs(window));
    for snapshot in sampled_leak(seconds) {
        app.update(snapshot);
    }
    frame_text(&app, 100, 5)
        .lines()
        .skip(1)
        .take(3)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_steady_sampled_leak_reads_steady_over_the_default_window() {
    const TRUE: f64 = 8.0 * 1024.0 * 1024.0;
    // Each filled frame's Live/min over the true rate, lowest and highest,
    // and its ± on average.
    let spread = |rates: &[(f64, f64)]| {
        let low = rates.iter().map(|r| r.0 / TRUE).fold(f64::MAX, f64::min);
        let high = rates.iter().map(|r| r.0 / TRUE).fold(0.0, f64::max);
        let error = rates.iter().map(|r| r.1).sum::<f64>() / rates.len() as f64;
        (low, high, error)
    };
    let rates = leak_rates(super::window::DEFAULT_WINDOW.as_secs());
    assert_eq!(rates.len(), 121);
    // A minute holds some 250 samples: ±6 %; 116 of the 121 frames are
    // within 10 % of 8 MiB/min (0.98× to 1.12×), every one within twice
    // its ±.
    let within = |share: f64| {
        rates
            .iter()
            .filter(move |r| (r.0 / TRUE - 1.0).abs() <= share)
    };
    assert_eq!(within(0.10).count(), 116);
    assert_eq!(within(0.12).count(), 121);
    assert!(rates.iter().all(|r| (r.0 / TRUE - 1.0).abs() <= 2.0 * r.1));
    let (low, high, error) = spread(&rates);
    assert!(
        (0.98..0.99).contains(&low) && (1.11..1.12).contains(&high),
        "{low} {high}"
    );
    assert!((0.061..0.063).contains(&error), "{error}");
    assert_eq!(
        leak_row(60, 180),
        "1 function, sorted by live; rates over 1m 00s\n  \
         Function                              Calls        Peak        Live     Live/min       ±  Allocs/s\n\
         > svc::handle_order                     24576     1.0 KiB    25.1 MiB     +8.3 MiB     ±6%     136.5"
    );
    // Half a minute in: the figure so far, marked, ±9 %.
    assert_eq!(
        leak_row(60, 30).lines().nth(2).unwrap(),
        "> svc::handle_order                      4096     1.0 KiB     4.1 MiB     +8.3 MiB     ±9%     136.5"
    );
    // Five seconds hold some 20 samples: ±22 % on average, and the figure
    // swings 0.62× to 1.71×; one second (the old rate) holds 4: ±53 %,
    // 0.24× to 2.14×.
    let (low, high, error) = spread(&leak_rates(5));
    assert!(
        (0.61..0.62).contains(&low) && (1.71..1.72).contains(&high),
        "{low} {high}"
    );
    assert!((0.21..0.22).contains(&error), "{error}");
    assert_eq!(
        leak_row(5, 180).lines().nth(2).unwrap(),
        "> svc::handle_order                     24576     1.0 KiB    25.1 MiB     +6.1 MiB    ±25%     136.6"
    );
    let (low, high, error) = spread(&leak_rates(1));
    assert!(
        (0.23..0.24).contains(&low) && (2.14..2.15).contains(&high),
        "{low} {high}"
    );
    assert!((0.52..0.53).contains(&error), "{error}");
}

#[test]
fn once_says_its_rates_cover_one_interval() {
    let mut app = App::for_once();
    for snapshot in sampled_leak(1) {
        app.update(snapshot);
    }
    assert_eq!(
        frame_text(&app, 100, 4).lines().nth(1).unwrap(),
        "1 function, sorted by live; rates over 1.0s"
    );
}
