//! Text taken from a report or a data file, made safe to show with the
//! runtime's one escaping rule ([`printable`], in `memprof_runtime::text`):
//! control characters and Unicode's bidirectional overrides come out
//! escaped, as `\n` or `\u{1b}`, a tab kept. Reports are read raw (the
//! runtime's one reader, `memprof_runtime::ReportDocument`) and each text
//! is escaped once, where it is written: mprof's terminal tables, Markdown,
//! HTML and plots here, the runtime's tables and pprof profiles there.

use std::borrow::Cow;

pub use memprof_runtime::text::printable;

/// `text`, [`printable`], without copying it where nothing is escaped.
pub fn owned(text: String) -> String {
    let escaped = match printable(&text) {
        Cow::Owned(escaped) => Some(escaped),
        Cow::Borrowed(_) => None,
    };
    escaped.unwrap_or(text)
}

/// A path as mprof prints it: lossy where it is not UTF-8, and
/// [`printable`].
pub fn path(path: &std::path::Path) -> String {
    owned(path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_acts_and_keeps_the_rest() {
        let evil = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\nx\r\u{202e}y\tz é ✓".to_owned();
        assert_eq!(
            owned(evil),
            "evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\nx\\r\\u{202e}y\tz é ✓"
        );
        assert_eq!(owned("plain::name".to_owned()), "plain::name");
    }
}
