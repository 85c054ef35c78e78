//! `mprof top`'s state and keys, apart from the terminal: what is shown
//! (the functions, or one function's lines), the sort key, the filter,
//! pause and the selection. `on_key` is all the keys do, so that the tests
//! drive it without a terminal.

use super::model::{FunctionRow, Snapshot, SortKey, arrange, rows_since};
use super::window::{DEFAULT_WINDOW, Window};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Which screen is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    Functions,
    /// One function's line table, by name.
    Lines(String),
}

/// What a key asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    Quit,
}

#[derive(Debug)]
pub struct App {
    pub screen: Screen,
    pub sort: SortKey,
    pub filter: String,
    /// The filter is being typed.
    pub editing_filter: bool,
    /// New snapshots are not shown.
    pub paused: bool,
    /// The selected function, by name, so that it stays selected as rows
    /// move.
    pub selected: Option<String>,
    /// The latest snapshot shown, and the rows made from it.
    pub now: Option<Snapshot>,
    pub rows: Vec<FunctionRow>,
    /// What the header says before the first snapshot.
    pub status: String,
    /// Said in the header: the program ended, or a snapshot failed.
    pub notice: Option<String>,
    /// One frame for a script (`--once`): no line of keys.
    pub once: bool,
    /// The snapshots' figures the rates are taken against (`--window`).
    pub window: Window,
    /// Every function's rows, before sorting and filtering.
    all: Vec<FunctionRow>,
}

impl Default for App {
    fn default() -> Self {
        App {
            screen: Screen::Functions,
            sort: SortKey::Kept,
            filter: String::new(),
            editing_filter: false,
            paused: false,
            selected: None,
            now: None,
            rows: Vec::new(),
            status: "waiting for the first snapshot".to_owned(),
            notice: None,
            once: false,
            window: Window::new(DEFAULT_WINDOW),
            all: Vec::new(),
        }
    }
}

impl App {
    /// The state of `--once`'s frame.
    pub fn for_once() -> App {
        App {
            once: true,
            ..App::default()
        }
    }

    /// The screen's state, its rates over `window`.
    pub fn with_window(window: std::time::Duration) -> App {
        App {
            window: Window::new(window),
            ..App::default()
        }
    }

    /// Shows `snapshot`, with rates against the oldest snapshot of the
    /// window, unless paused.
    pub fn update(&mut self, snapshot: Snapshot) {
        if self.paused {
            return;
        }
        self.window.push(&snapshot);
        self.all = rows_since(&snapshot, self.window.oldest());
        self.now = Some(snapshot);
        self.arrange();
    }

    fn arrange(&mut self) {
        self.rows = arrange(self.all.clone(), self.sort, &self.filter);
        let still_there = self
            .selected
            .as_ref()
            .is_some_and(|name| self.rows.iter().any(|r| &r.name == name));
        if !still_there {
            self.selected = self.rows.first().map(|r| r.name.clone());
        }
    }

    /// Shows the line table of the function named `name`, or else of the
    /// first row whose name has `name` in it, in the sort's order, as `/`
    /// and Enter would open it (`--once --lines`); false, the screen left
    /// as it was, where no function's name has it.
    pub fn open_lines(&mut self, name: &str) -> bool {
        let exact = self.all.iter().find(|r| r.name == name);
        let found = match exact {
            Some(row) => Some(row.name.clone()),
            None => arrange(self.all.clone(), self.sort, name)
                .first()
                .map(|r| r.name.clone()),
        };
        match found {
            Some(found) => {
                self.screen = Screen::Lines(found);
                true
            }
            None => false,
        }
    }

    /// The selected row's index in `rows`.
    pub fn selected_index(&self) -> Option<usize> {
        let name = self.selected.as_ref()?;
        self.rows.iter().position(|r| &r.name == name)
    }

    fn select_by(&mut self, step: isize) {
        let Some(at) = self.selected_index() else {
            return;
        };
        let last = self.rows.len().saturating_sub(1) as isize;
        let to = (at as isize + step).clamp(0, last) as usize;
        self.selected = self.rows.get(to).map(|r| r.name.clone());
    }

    /// Acts on one key.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if self.editing_filter {
            match key.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.editing_filter = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) if !c.is_control() => self.filter.push(c),
                _ => {}
            }
            self.arrange();
            return Action::Continue;
        }
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('p') | KeyCode::Char(' ') => self.paused = !self.paused,
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left => self.screen = Screen::Functions,
            _ if self.screen != Screen::Functions => {}
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.arrange();
            }
            KeyCode::Char('/') | KeyCode::Char('f') => self.editing_filter = true,
            KeyCode::Up | KeyCode::Char('k') => self.select_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.select_by(1),
            KeyCode::PageUp => self.select_by(-10),
            KeyCode::PageDown => self.select_by(10),
            KeyCode::Enter | KeyCode::Right => {
                if let Some(name) = &self.selected {
                    self.screen = Screen::Lines(name.clone());
                }
            }
            _ => {}
        }
        Action::Continue
    }
}
