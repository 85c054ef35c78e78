//! Text that memprof did not write, made safe to show: the one rule for
//! every name, file name and line of source that reaches a terminal or a
//! file. Control characters (and Unicode's bidirectional overrides, which
//! reorder what a terminal or a browser shows) come out escaped, as `\n`,
//! `\r` or `\u{1b}`. A function name or a line of source can then neither
//! move the cursor, clear the screen or retitle a terminal, nor split a
//! Markdown table into text that renders. A tab, which indents source and
//! does nothing else, is kept.
//!
//! Applied once, where the text is put into output (the runtime's tables
//! and notes) or as a report is read (mprof's readers), never both: an
//! escaped `\u{1b}` holds no control character, so escaping it again would
//! change nothing, but the rule keeps one place per path all the same. The
//! JSON reports keep the raw text, which JSON escapes itself (and
//! `json_escaped` where JSON leaves a character that acts raw).

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every character that could act on a terminal or a renderer
/// escaped: `\n`, `\r`, and `\u{..}` (lowercase hex) for the other control
/// characters but the tab, and for the bidirectional marks and overrides.
/// Borrowed where there is nothing to escape.
///
/// ```
/// use memprof_runtime::text::printable;
/// assert_eq!(printable("a\u{1b}]0;title\u{7}\tb\n"), "a\\u{1b}]0;title\\u{7}\tb\\n");
/// assert!(matches!(printable("plain::name"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
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
    Cow::Owned(out)
}

/// A JSON document with the characters that act escaped as JSON writes
/// them (`\u007f`), where its writer left them raw: JSON requires only the
/// characters below U+0020 escaped, so DEL, the C1 controls and the
/// bidirectional overrides would reach a terminal that shows the file. The
/// document holds the same text either way. Every such character is inside
/// a string, since JSON's own syntax is ASCII without them.
pub(crate) fn json_escaped(json: String) -> String {
    // PERF: every character that acts and is left raw is DEL or past ASCII,
    // so a document of ASCII without DEL (a report's, mostly) is known by
    // its bytes, without decoding them: a test binary's report is
    // megabytes, and decoding it took 1 to 2 % of a profiled suite.
    if json.bytes().all(|b| b < 0x7f) || !json.chars().any(acts) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        // NOTE: a compact document holds no raw character below U+0020:
        // the writer escaped those in strings, and puts none between.
        if acts(c) && c >= ' ' {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_acts_and_keeps_the_rest() {
        let evil = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\nx\r\u{202e}y\tz é ✓\u{7f}\u{9b}";
        assert_eq!(
            printable(evil),
            "evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\nx\\r\\u{202e}y\tz é ✓\\u{7f}\\u{9b}"
        );
        assert!(matches!(printable("plain::name"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_what_it_left_raw_and_holds_the_same_text() {
        let text = "a\u{1b}]0;t\u{7}\u{7f}\u{9b}\u{202e}\tb é";
        let json = json_escaped(miniserde::json::to_string(&text.to_owned()));
        assert_eq!(json, r#""a\u001b]0;t\u0007\u007f\u009b\u202e\tb é""#);
        assert_eq!(miniserde::json::from_str::<String>(&json).unwrap(), text);
    }

    #[test]
    fn escaped_text_escapes_to_itself() {
        let once = printable("a\u{1b}[2J\u{7}").into_owned();
        assert_eq!(printable(&once), once);
    }
}
