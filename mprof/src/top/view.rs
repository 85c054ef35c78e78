//! `mprof top`'s screen, drawn with ratatui: a header (the process, its
//! uptime, the heap now and the highest seen; the sort, the filter and the
//! window the rates cover), the functions' table (with a ± column where
//! Live is sampled) and a line of keys; or, after Enter, one function's line table. The same
//! drawing makes `--once`'s text (`frame_text`, through ratatui's test
//! backend) and the terminal's frames.

use super::app::{App, Screen};
use super::model::FunctionRow;
use crate::diff::format::{bytes, signed_bytes};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, HighlightSpacing, Paragraph, Row, Table, TableState};

/// Draws `app` on `frame`.
pub fn draw(frame: &mut Frame, app: &App) {
    let [header, body, keys] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(u16::from(!app.once)),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header_lines(app)), header);
    match &app.screen {
        Screen::Functions => draw_functions(frame, app, body),
        Screen::Lines(name) => draw_lines(frame, app, name, body),
    }
    frame.render_widget(Paragraph::new(keys_line(app)), keys);
}

fn header_lines(app: &App) -> Vec<Line<'static>> {
    let Some(now) = &app.now else {
        let status = app.notice.as_deref().unwrap_or(&app.status);
        return vec![Line::from(format!("mprof top: {status}"))];
    };
    let paused = match (&app.notice, app.paused) {
        (Some(notice), _) => format!("  [{notice}]"),
        (None, true) => "  [paused]".to_owned(),
        (None, false) => String::new(),
    };
    let facts = match &now.at_exit {
        Some(ended) => format!("{ended}: its figures at exit"),
        None => format!(
            "pid {}  up {}  heap {} now, {} highest seen{paused}",
            now.facts.pid,
            duration(now.facts.uptime),
            bytes(now.facts.heap as i64),
            bytes(now.facts.heap_high as i64),
        ),
    };
    vec![
        Line::from(facts),
        Line::from(format!(
            "{} function{}, sorted by {}{}{}{}",
            app.rows.len(),
            if app.rows.len() == 1 { "" } else { "s" },
            live_named(app.sort.name(), is_live(app)),
            match app.filter.is_empty() && !app.editing_filter {
                true => String::new(),
                false => format!(", filter: {}{}", app.filter, cursor(app)),
            },
            window_note(app),
            left_out_note(app),
        )),
    ]
}

/// The seconds the rates cover: from the window's oldest snapshot to the
/// one shown, marked while the window fills. `--once` covers one interval,
/// whatever the window.
fn window_note(app: &App) -> String {
    let Some((span, filled)) = app.now.as_ref().and_then(|n| app.window.span(n.facts.time)) else {
        return String::new();
    };
    match app.once || filled {
        true => format!("; rates over {}", duration(span)),
        false => format!(
            "; rates over {} of {}",
            duration(span),
            duration(app.window.length())
        ),
    }
}

/// What Live leaves out, over every function: memprof's tables had no room
/// to follow some blocks (docs/reliability.md); their Live reads `+`.
fn left_out_note(app: &App) -> String {
    let (allocations, left_out) = app
        .rows
        .iter()
        .filter_map(|r| r.live_left_out)
        .fold((0, 0), |(a, b), (n, bytes)| (a + n, b + bytes));
    if allocations == 0 && left_out == 0 {
        return String::new();
    }
    format!(
        "; Live+ leaves out what is still allocated of {allocations} allocation{}, {}, \
         that memprof's tables had no room to follow",
        if allocations == 1 { "" } else { "s" },
        bytes(left_out as i64)
    )
}

fn cursor(app: &App) -> &'static str {
    if app.editing_filter { "_" } else { "" }
}

/// Seconds as `3h 02m`, `4m 05s` or `12.3s`.
fn duration(seconds: f64) -> String {
    let whole = seconds.max(0.0) as u64;
    match whole {
        0..60 => format!("{seconds:.1}s"),
        60..3600 => format!("{}m {:02}s", whole / 60, whole % 60),
        _ => format!("{}h {:02}m", whole / 3600, whole % 3600 / 60),
    }
}

fn rate(value: Option<f64>, text: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), text)
}

/// One function's cells, as the table and `--once` show them.
pub fn function_cells(row: &FunctionRow) -> [String; 6] {
    [
        row.name.clone(),
        row.calls.to_string(),
        bytes(row.peak as i64),
        match row.live_left_out {
            Some(_) => format!("{}+", bytes(row.kept)),
            None => bytes(row.kept),
        },
        rate(row.kept_per_minute, |v| signed_bytes(v.round() as i64)),
        rate(row.allocs_per_second, |v| format!("{v:.1}")),
    ]
}

/// The ± of a row's Live/min (see [`is_sampled`]): its relative standard
/// error, or blank where nothing grew.
pub fn error_cell(row: &FunctionRow) -> String {
    match row.kept_per_minute_error {
        Some(error) if error * 100.0 < 999.5 => format!("±{:.0}%", error * 100.0),
        Some(_) => "±>999%".to_owned(),
        None => String::new(),
    }
}

/// The function table's columns after the name, and the spaces between
/// the six.
const FIGURE_COLUMNS: [u16; 5] = [9, 11, 11, 12, 9];
const COLUMN_GAPS: u16 = 5;
/// The ± column, after Live/min, where Live is sampled.
const ERROR_COLUMN: u16 = 7;

/// Whether Live is an estimate from sampled sites: the table then has a ±
/// column.
fn is_sampled(app: &App) -> bool {
    is_live(app)
        && app
            .now
            .as_ref()
            .is_some_and(|n| n.facts.sample_mean.is_some())
}

/// The columns the figures take, with the spaces before each.
fn figure_columns(app: &App) -> u16 {
    let error = if is_sampled(app) { ERROR_COLUMN + 1 } else { 0 };
    FIGURE_COLUMNS.iter().sum::<u16>() + COLUMN_GAPS + error
}
/// The selection's mark before a row, on the screen.
const HIGHLIGHT: u16 = 2;

/// Columns a `--once` frame needs to show every function's whole name.
pub fn width_for_whole_names(app: &App) -> u16 {
    let longest = app.rows.iter().map(|r| r.name.chars().count()).max();
    let name = longest.unwrap_or(0).max(20).min(usize::from(u16::MAX / 2)) as u16;
    name + figure_columns(app)
}

/// The columns and rows a `--once` frame of the function `name`'s lines
/// needs for every whole line: the header, the title, the table's header
/// and a row per line.
pub fn lines_extent(app: &App, name: &str) -> (u16, usize) {
    let Some(function) = app.rows.iter().find(|r| r.name == name) else {
        return (0, 3);
    };
    let longest = function.lines.iter().map(|l| l.contents.chars().count());
    let text = longest
        .max()
        .unwrap_or(0)
        .max(20)
        .min(usize::from(u16::MAX / 2)) as u16;
    let live = function.lines.iter().any(|l| l.live.is_some());
    // The figures' columns and a space after each (see `draw_lines`).
    let figures = LINE_COLUMNS.iter().sum::<u16>() + LINE_COLUMNS.len() as u16;
    let live_column = if live { LIVE_COLUMN + 1 } else { 0 };
    (figures + live_column + text, function.lines.len() + 4)
}

/// The line table's columns before its text (Live apart), as
/// `draw_lines` lays them out: Line #, Increment, Peak, Occurrences.
const LINE_COLUMNS: [u16; 4] = [7, 11, 11, 12];
const LIVE_COLUMN: u16 = 11;

/// Whether the figures are bytes in use (the snapshot has them: sites are
/// recorded), not kept bytes.
fn is_live(app: &App) -> bool {
    app.rows.iter().any(|r| r.live)
}

/// A sort key's name, `kept` read as `live` where the figures are.
fn live_named(name: &str, live: bool) -> String {
    match live {
        true => name.replace("kept", "live"),
        false => name.to_owned(),
    }
}

/// `name` in `room` columns: its end kept, where a function's own name is,
/// and its start elided (`…::grow_cache`).
fn elide_left(name: &str, room: usize) -> String {
    let length = name.chars().count();
    if length <= room || room == 0 {
        return name.to_owned();
    }
    let tail: String = name.chars().skip(length - (room - 1)).collect();
    format!("…{tail}")
}

fn draw_functions(frame: &mut Frame, app: &App, area: Rect) {
    let sampled = is_sampled(app);
    let mut header = match is_live(app) {
        true => vec!["Function", "Calls", "Peak", "Live", "Live/min", "Allocs/s"],
        false => vec!["Function", "Calls", "Peak", "Kept", "Kept/min", "Allocs/s"],
    };
    if sampled {
        header.insert(5, "±");
    }
    let header = header_row(&header, 0);
    let marks = if app.once { 0 } else { HIGHLIGHT };
    let room = area.width.saturating_sub(figure_columns(app) + marks);
    let rows = app.rows.iter().map(|row| {
        let mut cells = function_cells(row).to_vec();
        if sampled {
            cells.insert(5, error_cell(row));
        }
        Row::new(cells.into_iter().enumerate().map(|(i, text)| match i {
            0 => Cell::from(elide_left(&text, usize::from(room))),
            _ => Cell::from(Line::from(text).right_aligned()),
        }))
    });
    let [calls, peak, kept, per_minute, per_second] = FIGURE_COLUMNS;
    let mut widths = vec![
        Constraint::Min(20),
        Constraint::Length(calls),
        Constraint::Length(peak),
        Constraint::Length(kept),
        Constraint::Length(per_minute),
        Constraint::Length(per_second),
    ];
    if sampled {
        widths.insert(5, Constraint::Length(ERROR_COLUMN));
    }
    let mut table = Table::new(rows, widths).header(header);
    if !app.once {
        table = table
            .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
            .highlight_symbol("> ")
            .highlight_spacing(HighlightSpacing::Always);
    }
    let mut state = TableState::default().with_selected(app.selected_index());
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_lines(frame: &mut Frame, app: &App, name: &str, area: Rect) {
    let Some(function) = app.rows.iter().find(|r| r.name == name) else {
        let gone = format!("{name}: not in the latest snapshot (filtered out, or reset)");
        frame.render_widget(Paragraph::new(gone), area);
        return;
    };
    let [title, table_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let title_text = format!(
        "{} ({}), {} calls",
        function.name, function.file, function.calls
    );
    frame.render_widget(Paragraph::new(title_text), title);
    // Bytes in use by the line that made them, where the snapshot has them.
    let live = function.lines.iter().any(|l| l.live.is_some());
    let [number, increment, peak, occurrences] = LINE_COLUMNS;
    let mut titles = vec!["Line #", "Increment", "Peak"];
    let mut widths = vec![
        Constraint::Length(number),
        Constraint::Length(increment),
        Constraint::Length(peak),
    ];
    if live {
        titles.push("Live");
        widths.push(Constraint::Length(LIVE_COLUMN));
    }
    titles.extend(["Occurrences", "Line Contents"]);
    widths.extend([Constraint::Length(occurrences), Constraint::Min(20)]);
    let header = header_row(&titles, titles.len() - 1);
    let rows = function.lines.iter().map(|line| {
        let figure = |value: Option<String>| Line::from(value.unwrap_or_default()).right_aligned();
        let mut cells = vec![
            Cell::from(Line::from(line.line.to_string()).right_aligned()),
            Cell::from(figure(line.increment.map(bytes))),
            Cell::from(figure(line.peak.map(|p| bytes(p as i64)))),
        ];
        if live {
            cells.push(Cell::from(figure(line.live.map(|b| bytes(b as i64)))));
        }
        cells.extend([
            Cell::from(figure(
                (line.occurrences > 0).then(|| line.occurrences.to_string()),
            )),
            Cell::from(line.contents.clone()),
        ]);
        Row::new(cells)
    });
    frame.render_widget(Table::new(rows, widths).header(header), table_area);
}

/// A table's header in bold, its figures' titles right-aligned as the
/// figures are; `text` is the one left-aligned column.
fn header_row(titles: &[&'static str], text: usize) -> Row<'static> {
    Row::new(
        titles
            .iter()
            .enumerate()
            .map(|(i, &title)| match i == text {
                true => Cell::from(title),
                false => Cell::from(Line::from(title).right_aligned()),
            }),
    )
    .style(Style::new().add_modifier(Modifier::BOLD))
}

fn keys_line(app: &App) -> Line<'static> {
    let text = match (&app.screen, app.editing_filter) {
        (_, true) => "type a name's part, Enter: keep, Esc: clear",
        (Screen::Functions, false) => {
            "q: quit  s: sort  /: filter  p: pause  Up/Down: select  Enter: lines"
        }
        (Screen::Lines(_), false) => "q: quit  Esc: back  p: pause",
    };
    Line::from(text).style(Style::new().add_modifier(Modifier::DIM))
}

/// `app` drawn on a `width` × `height` screen, as text: one line per row,
/// trailing blanks trimmed (`--once`, and the tests).
pub fn frame_text(app: &App, width: u16, height: u16) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let Ok(mut terminal) = ratatui::Terminal::new(backend) else {
        return String::new();
    };
    if terminal.draw(|frame| draw(frame, app)).is_err() {
        return String::new();
    }
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        for x in 0..buffer.area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
