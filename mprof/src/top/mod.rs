//! `mprof top PID` and `mprof top -- CMD ARGS`: a running program's
//! functions, refreshed from its snapshots (`MEMPROF_LIVE`'s channel): heap
//! now and the highest seen; per function its calls, peak, kept bytes,
//! kept's growth per minute and allocations per second over `--window`;
//! sort, filter and pause keys; Enter opens a function's line table.
//! `--once` prints one frame as text, from two snapshots an interval apart
//! (its header says so): the functions, or with `--lines NAME` one
//! function's lines.
//!
//! `model` makes the rows from snapshots, `window` keeps the figures the
//! rates are taken against, `app` holds the state and the keys, `view`
//! draws (ratatui), `program` starts a command with `MEMPROF_LIVE=1` and
//! holds its output back while the screen is shown.

pub mod app;
pub mod model;
mod program;
pub mod view;
pub mod window;

use crate::error::Error;
use app::{Action, App, Screen};
use model::Snapshot;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct TopOptions {
    pub pid: Option<u32>,
    pub program: Vec<OsString>,
    pub once: bool,
    /// `--lines`: the function whose lines `--once` prints, by its name or
    /// a part of it.
    pub lines: Option<String>,
    pub interval: Duration,
    /// What the screen's rates cover: from the oldest snapshot of the last
    /// `window` to the newest.
    pub window: Duration,
}

/// `--interval` and `--window`, read: a number of seconds, alone or with
/// `s`, `m` or `h`; the refresh from 0.1 s to an hour, the window from a
/// second to a day (a mark kept per 240th of it, see `window`). Each
/// mistake is one line (status 2).
pub fn durations(interval: &str, window: &str) -> Result<(Duration, Duration), Error> {
    let read = |flag: &str, text: &str, low: f64, high: f64, range: &str| {
        seconds(text)
            .filter(|s| (low..=high).contains(s))
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{flag} takes a time from {range}, such as 2, 2s, 5m or 1h, not `{}`",
                    crate::printable::printable(text)
                ))
            })
    };
    let interval = read("--interval", interval, 0.1, 3600.0, "0.1s to 1h")?;
    let window = read("--window", window, 1.0, 86400.0, "1s to 24h")?;
    Ok((interval, window))
}

/// `text` as seconds: a number, alone or with `s`, `m` or `h`.
fn seconds(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, unit) = match text.strip_suffix('s') {
        Some(number) => (number, 1.0),
        None => match (text.strip_suffix('m'), text.strip_suffix('h')) {
            (Some(number), _) => (number, 60.0),
            (_, Some(number)) => (number, 3600.0),
            (None, None) => (text, 1.0),
        },
    };
    let value = number.trim().parse::<f64>().ok()? * unit;
    value.is_finite().then_some(value)
}

/// Columns of `--once`'s text when stdout is not a terminal.
const ONCE_WIDTH: u16 = 100;

pub fn top(options: &TopOptions) -> Result<i32, Error> {
    if options.lines.is_some() && !options.once {
        return Err(Error::Usage(
            "--lines goes with --once; on the screen, Enter opens a function's lines".to_owned(),
        ));
    }
    if options
        .lines
        .as_deref()
        .is_some_and(|name| name.trim().is_empty())
    {
        return Err(Error::Usage(
            "--lines takes a function's name, or a part of it".to_owned(),
        ));
    }
    // `--once` takes its two snapshots `--interval` apart, whatever the
    // window; the screen's rates need two snapshots in the window.
    if !options.once && options.window < options.interval {
        return Err(Error::Usage(format!(
            "--window ({}s) is shorter than --interval ({}s): the rates need two snapshots in it",
            options.window.as_secs_f64(),
            options.interval.as_secs_f64()
        )));
    }
    let lines = options.lines.as_deref();
    let (pid, mut started) = match (options.pid, options.program.is_empty()) {
        (Some(_), false) => {
            return Err(Error::Live(
                "give a process id or a command after --, not both".to_owned(),
            ));
        }
        (None, true) => {
            return Err(Error::Live(
                "give a process id, or a command after -- to start".to_owned(),
            ));
        }
        (Some(pid), true) => (crate::live::client::listening(pid), None),
        (None, false) => {
            let mut program = program::Program::start(&options.program)?;
            match program.wait_until_listening()? {
                program::Listening::Pid(pid) => (pid, Some(program)),
                // A program that ended before mprof could connect: its
                // figures at exit, as `--once` prints a frame, then its
                // output and its exit status.
                program::Listening::Ended(report) => {
                    let mut app = App::for_once();
                    app.update(report);
                    print_frame(&mut app, lines)?;
                    return program.finish();
                }
            }
        }
    };
    let watched = if options.once {
        once(pid, options.interval, lines)
    } else {
        watch(pid, options, started.as_mut())
    };
    match started {
        // The program's own output, held back while the screen was shown,
        // then its end: mprof exits as it did.
        Some(program) => {
            watched?;
            program.finish()
        }
        None => watched.map(|()| 0),
    }
}

fn snapshot(pid: u32) -> Result<Snapshot, Error> {
    Snapshot::parse(&crate::live::client::snapshot(pid)?)
}

/// `--once`: one frame, from two snapshots `interval` apart, as text.
// NOTE: one interval, not `--window`: a script asking for one frame gets
// it in `--interval`, and the header says what the rates cover (`--once
// --interval 60` for a steady Live/min).
fn once(pid: u32, interval: Duration, lines: Option<&str>) -> Result<(), Error> {
    let mut app = App::for_once();
    app.update(snapshot(pid)?);
    std::thread::sleep(interval);
    app.update(snapshot(pid)?);
    print_frame(&mut app, lines)
}

/// One frame as text, on stdout: the header, the table's header and its
/// rows; with `lines`, the line table of that function (see
/// [`App::open_lines`]).
fn print_frame(app: &mut App, lines: Option<&str>) -> Result<(), Error> {
    if let Some(name) = lines
        && !app.open_lines(name)
    {
        return Err(Error::Live(format!(
            "no function in the snapshot has `{}` in its name",
            crate::printable::printable(name)
        )));
    }
    // The header, the table's header (and a function's title) and its
    // rows; a log's or a script's text wide enough for every whole name or
    // line, a terminal's as wide as it is (names elided from the left).
    let (whole, rows) = match &app.screen {
        Screen::Lines(name) => view::lines_extent(app, name),
        Screen::Functions => (view::width_for_whole_names(app), app.rows.len() + 3),
    };
    let width = match ratatui::crossterm::terminal::size() {
        Ok((columns, _)) if columns >= 40 && std::io::stdout().is_terminal() => columns,
        _ => whole.max(ONCE_WIDTH),
    };
    let height = rows.min(u16::MAX as usize) as u16;
    let text = view::frame_text(app, width, height);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("write", std::path::Path::new("stdout"), e))
}

/// The terminal screen, refreshed every `--interval` until `q`.
fn watch(
    pid: u32,
    options: &TopOptions,
    mut program: Option<&mut program::Program>,
) -> Result<(), Error> {
    let interval = options.interval;
    let screen_failed = |e: std::io::Error| {
        Error::Live(format!(
            "cannot draw on the terminal: {}",
            crate::error::describe(&e)
        ))
    };
    let mut terminal = ratatui::try_init().map_err(screen_failed)?;
    let mut app = App::with_window(options.window);
    let mut next = Instant::now();
    let mut gone = false;
    let result = loop {
        if !gone && Instant::now() >= next {
            match snapshot(pid) {
                Ok(snapshot) => {
                    app.notice = None;
                    app.update(snapshot);
                }
                Err(err) => {
                    // The last figures stay; refreshing stops once the
                    // process is gone, and is tried again while it runs.
                    let ended = program.as_mut().and_then(|p| p.ended());
                    gone = ended.is_some() || !crate::live::client::is_running(pid);
                    app.notice = Some(match (ended, gone) {
                        (Some(ended), _) => ended,
                        (None, true) => format!("process {pid} ended"),
                        (None, false) => format!("{err}; trying again"),
                    });
                }
            }
            next = Instant::now() + interval;
        }
        if let Err(err) = terminal.draw(|frame| view::draw(frame, &app)) {
            break Err(screen_failed(err));
        }
        let wait = next.saturating_duration_since(Instant::now());
        match event::poll(wait) {
            Ok(true) => match event::read() {
                Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                    if app.on_key(key) == Action::Quit {
                        break Ok(());
                    }
                }
                Ok(_) => {}
                Err(err) => break Err(screen_failed(err)),
            },
            Ok(false) => {}
            Err(err) => break Err(screen_failed(err)),
        }
    };
    ratatui::restore();
    result
}
#[cfg(test)]
mod screenshot;
#[cfg(test)]
mod tests;
