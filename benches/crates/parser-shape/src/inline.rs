//! Inline runs of a block: text, emphasis, code spans, links. `parse`
//! builds each block's list; the scanners it calls allocate nothing.

use crate::scan::{Cursor, is_newline, is_punct, is_word};

/// An inline run, as byte ranges into the text.
pub enum Inline {
    Text(usize, usize),
    Emphasis(usize, usize),
    Code(usize, usize),
    Link {
        text: (usize, usize),
        url: (usize, usize),
    },
    SoftBreak,
}

/// The inline runs of `bytes[start..end]`.
pub fn parse(bytes: &[u8], start: usize, end: usize) -> Vec<Inline> {
    let mut out = Vec::new();
    let mut c = Cursor::at(&bytes[..end], start);
    let mut text_start = c.pos();
    while !c.at_end() {
        let here = c.pos();
        let found = match c.peek() {
            Some(b'*' | b'_') => emphasis(&mut c),
            Some(b'`') => code_span(&mut c),
            Some(b'[') => link(&mut c),
            Some(b) if is_newline(b) => {
                c.bump();
                Some(Inline::SoftBreak)
            }
            _ => None,
        };
        match found {
            Some(run) => {
                if text_start < here {
                    out.push(Inline::Text(text_start, here));
                }
                out.push(run);
                text_start = c.pos();
            }
            None => {
                c = Cursor::at(&bytes[..end], here);
                c.bump();
                skip_text(&mut c);
            }
        }
    }
    if text_start < c.pos() {
        out.push(Inline::Text(text_start, c.pos()));
    }
    out
}

fn skip_text(c: &mut Cursor) -> usize {
    c.skip_while(|b| !is_punct(b) && !is_newline(b))
}

fn emphasis(c: &mut Cursor) -> Option<Inline> {
    let mark = c.peek()?;
    c.bump();
    let start = c.pos();
    let len = c.skip_while(|b| b != mark && !is_newline(b));
    (c.peek() == Some(mark) && len > 0 && word_edge(c)).then(|| {
        c.bump();
        Inline::Emphasis(start, start + len)
    })
}

fn word_edge(c: &Cursor) -> bool {
    c.peek_at(1).is_none_or(|b| !is_word(b))
}

fn code_span(c: &mut Cursor) -> Option<Inline> {
    c.bump();
    let start = c.pos();
    let len = c.skip_while(|b| b != b'`' && !is_newline(b));
    (c.peek() == Some(b'`')).then(|| {
        c.bump();
        Inline::Code(start, start + len)
    })
}

fn link(c: &mut Cursor) -> Option<Inline> {
    c.bump();
    let text = bracketed(c, b']')?;
    if c.peek() != Some(b'(') {
        return None;
    }
    c.bump();
    let url = bracketed(c, b')')?;
    Some(Inline::Link { text, url })
}

fn bracketed(c: &mut Cursor, close: u8) -> Option<(usize, usize)> {
    let start = c.pos();
    let len = c.skip_while(|b| b != close && !is_newline(b));
    (c.peek() == Some(close)).then(|| {
        c.bump();
        (start, start + len)
    })
}
