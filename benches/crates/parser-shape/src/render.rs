//! HTML output: `render` builds the one large string; the escapes it runs
//! byte by byte allocate nothing beyond it.

use crate::document::Block;
use crate::inline::Inline;
use crate::scan::needs_escape;

/// The document as HTML.
pub fn render(text: &str, blocks: &[Block]) -> String {
    let mut html = String::with_capacity(text.len() / 2);
    for block in blocks {
        match block {
            Block::Heading { level, inlines } => {
                open(&mut html, "h", Some(*level));
                runs(&mut html, text, inlines);
                close(&mut html, "h", Some(*level));
            }
            Block::Paragraph { inlines } => {
                open(&mut html, "p", None);
                runs(&mut html, text, inlines);
                close(&mut html, "p", None);
            }
            Block::Item { number, inlines } => {
                open(&mut html, "li", *number);
                runs(&mut html, text, inlines);
                close(&mut html, "li", None);
            }
            Block::Code { start, end } => {
                open(&mut html, "pre", None);
                escape(&mut html, &text[*start..*end]);
                close(&mut html, "pre", None);
            }
            Block::Rule => html.push_str("<hr />\n"),
        }
    }
    html
}

fn runs(html: &mut String, text: &str, inlines: &[Inline]) {
    for run in inlines {
        match *run {
            Inline::Text(a, b) => escape(html, &text[a..b]),
            Inline::Emphasis(a, b) => wrap(html, "em", &text[a..b]),
            Inline::Code(a, b) => wrap(html, "code", &text[a..b]),
            Inline::Link {
                text: (a, b),
                url: (c, d),
            } => {
                html.push_str("<a href=\"");
                escape(html, &text[c..d]);
                html.push_str("\">");
                escape(html, &text[a..b]);
                html.push_str("</a>");
            }
            Inline::SoftBreak => html.push('\n'),
        }
    }
}

fn wrap(html: &mut String, tag: &str, inner: &str) {
    open(html, tag, None);
    escape(html, inner);
    close(html, tag, None);
}

fn open(html: &mut String, tag: &str, n: Option<usize>) {
    html.push('<');
    html.push_str(tag);
    if let Some(n) = n.filter(|_| tag == "h") {
        html.push(digit(n));
    }
    html.push('>');
}

fn close(html: &mut String, tag: &str, n: Option<usize>) {
    html.push_str("</");
    html.push_str(tag);
    if let Some(n) = n {
        html.push(digit(n));
    }
    html.push_str(">\n");
}

fn digit(n: usize) -> char {
    char::from(b'0' + (n % 10) as u8)
}

fn escape(html: &mut String, s: &str) {
    for b in s.bytes() {
        if needs_escape(b) {
            html.push_str(entity(b));
        } else {
            html.push(char::from(b));
        }
    }
}

fn entity(b: u8) -> &'static str {
    match b {
        b'<' => "&lt;",
        b'>' => "&gt;",
        b'&' => "&amp;",
        _ => "&quot;",
    }
}
