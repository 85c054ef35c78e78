//! Text taken from a report or a data file, made safe to show: control
//! characters (and Unicode's bidirectional overrides, which reorder what a
//! terminal or a browser shows) come out escaped, as `\n` or `\u{1b}`. A
//! function name or a line of source can then neither move the cursor,
//! clear the screen or retitle a terminal, nor split a Markdown table into
//! text that renders. Applied as the text is read, so that every output
//! (text, Markdown, HTML, plots) shows the same escaped form. A tab, which
//! indents source and does nothing else, is kept.

use serde::{Deserialize, Deserializer};
use std::fmt::Write;

/// `text` with every character that could act on a terminal or a renderer
/// escaped.
pub fn printable(text: String) -> String {
    if !text.chars().any(acts) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if acts(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Control characters but the tab, and the bidirectional marks and
/// overrides.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// A path as mprof prints it: lossy where it is not UTF-8, and
/// [`printable`].
pub fn path(path: &std::path::Path) -> String {
    printable(path.display().to_string())
}

/// For serde's `deserialize_with`: a string field, made [`printable`] as it
/// is read.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    String::deserialize(deserializer).map(printable)
}

/// [`deserialize`] for a string field that may be `null`.
pub fn deserialize_option<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer).map(|text| text.map(printable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_acts_and_keeps_the_rest() {
        let evil = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\nx\r\u{202e}y\tz é ✓".to_owned();
        assert_eq!(
            printable(evil),
            "evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\nx\\r\\u{202e}y\tz é ✓"
        );
        assert_eq!(printable("plain::name".to_owned()), "plain::name");
    }
}
