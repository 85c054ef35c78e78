//! Text taken from a report or a data file, made safe to show with the
//! runtime's one escaping rule ([`printable`], in `memprof_runtime::text`):
//! control characters and Unicode's bidirectional overrides come out
//! escaped, as `\n` or `\u{1b}`, a tab kept. Applied as the text is read,
//! so that every output (text, Markdown, HTML, plots) shows the same
//! escaped form; the runtime's tables apply the same function as they
//! write, so a report read into the runtime's own types (`mprof report`,
//! `cargo memprof`) is read raw and escaped once, there.

use serde::{Deserialize, Deserializer};
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

/// For serde's `deserialize_with`: a string field, made [`printable`] as it
/// is read.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    String::deserialize(deserializer).map(owned)
}

/// [`deserialize`] for a string field that may be `null`.
pub fn deserialize_option<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer).map(|text| text.map(owned))
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

    #[test]
    fn a_field_is_escaped_as_it_is_read() {
        #[derive(Deserialize)]
        struct Row {
            #[serde(deserialize_with = "deserialize")]
            contents: String,
        }
        let row: Row =
            serde_json::from_str(r#"{"contents":"s(\"\u001b]0;title\u0007\")"}"#).unwrap();
        assert_eq!(row.contents, "s(\"\\u{1b}]0;title\\u{7}\")");
    }
}
