//! The document: generating one, and parsing it into blocks. `parse` and
//! `generate` build the large buffers; the line classifiers they call on
//! every line allocate nothing.

use crate::inline::{self, Inline};
use crate::scan::{Cursor, is_digit, is_newline, is_space};

/// A block of the document, with its inline runs.
pub enum Block {
    Heading {
        level: usize,
        inlines: Vec<Inline>,
    },
    Paragraph {
        inlines: Vec<Inline>,
    },
    Item {
        number: Option<usize>,
        inlines: Vec<Inline>,
    },
    Code {
        start: usize,
        end: usize,
    },
    Rule,
}

/// A deterministic document of about `size` bytes: headings, paragraphs
/// with emphasis, code spans and links, lists, fenced code and rules.
pub fn generate(size: usize) -> String {
    const WORDS: [&str; 12] = [
        "memory", "profiler", "line", "table", "heap", "bytes", "peak", "call", "parser",
        "scanner", "block", "inline",
    ];
    let mut text = String::with_capacity(size + 256);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    while text.len() < size {
        match next() % 10 {
            0 => text.push_str("## A heading about the heap\n\n"),
            1 => {
                for i in 1..=4 {
                    text.push_str(&format!("{i}. item with *stress* and `code`\n"));
                }
                text.push('\n');
            }
            2 => text.push_str("```\nlet x = vec![1, 2, 3];\n```\n\n"),
            3 => text.push_str("---\n\n"),
            _ => {
                for _ in 0..(40 + next() % 80) {
                    let word = WORDS[(next() % 12) as usize];
                    match next() % 9 {
                        0 => text.push_str(&format!("*{word}* ")),
                        1 => text.push_str(&format!("`{word}` ")),
                        2 => text.push_str(&format!("[{word}](https://example.org/{word}) ")),
                        3 => text.push_str(&format!("{word} & ")),
                        _ => {
                            text.push_str(word);
                            text.push(' ');
                        }
                    }
                }
                text.push_str("\n\n");
            }
        }
    }
    text
}

/// Parses the text into blocks.
pub fn parse(text: &str) -> Vec<Block> {
    let bytes = text.as_bytes();
    let mut blocks = Vec::new();
    let mut c = Cursor::new(bytes);
    while !c.at_end() {
        if blank_line(&c) {
            skip_line(&mut c);
            continue;
        }
        if let Some(level) = heading_level(&c) {
            c.advance(level + 1);
            let end = c.line_end();
            blocks.push(Block::Heading {
                level,
                inlines: inline::parse(bytes, c.pos(), end),
            });
            c = Cursor::at(bytes, end);
            skip_line(&mut c);
        } else if is_rule(&c) {
            skip_line(&mut c);
            blocks.push(Block::Rule);
        } else if is_fence(&c) {
            skip_line(&mut c);
            let start = c.pos();
            while !c.at_end() && !is_fence(&c) {
                skip_line(&mut c);
            }
            blocks.push(Block::Code {
                start,
                end: c.pos(),
            });
            skip_line(&mut c);
        } else if let Some(width) = item_marker(&c) {
            let number = number_at(&c);
            c.advance(width);
            let end = c.line_end();
            blocks.push(Block::Item {
                number,
                inlines: inline::parse(bytes, c.pos(), end),
            });
            c = Cursor::at(bytes, end);
            skip_line(&mut c);
        } else {
            let start = c.pos();
            while !c.at_end() && !blank_line(&c) {
                skip_line(&mut c);
            }
            blocks.push(Block::Paragraph {
                inlines: inline::parse(bytes, start, c.pos()),
            });
        }
    }
    blocks
}

fn skip_line(c: &mut Cursor) {
    let end = c.line_end();
    c.advance(end - c.pos());
    if c.peek().is_some_and(is_newline) {
        c.bump();
    }
}

fn blank_line(c: &Cursor) -> bool {
    let mut ahead = 0;
    while c.peek_at(ahead).is_some_and(is_space) {
        ahead += 1;
    }
    c.peek_at(ahead).is_none_or(is_newline)
}

fn heading_level(c: &Cursor) -> Option<usize> {
    let level = c.run_of(b'#');
    (1..=6)
        .contains(&level)
        .then_some(level)
        .filter(|&l| c.peek_at(l) == Some(b' '))
}

fn is_rule(c: &Cursor) -> bool {
    c.run_of(b'-') >= 3 && c.peek_at(c.run_of(b'-')).is_none_or(is_newline)
}

fn is_fence(c: &Cursor) -> bool {
    c.run_of(b'`') >= 3
}

fn item_marker(c: &Cursor) -> Option<usize> {
    let digits = digits_at(c);
    if digits > 0 && c.peek_at(digits) == Some(b'.') && c.peek_at(digits + 1) == Some(b' ') {
        return Some(digits + 2);
    }
    (matches!(c.peek(), Some(b'-' | b'*')) && c.peek_at(1) == Some(b' ')).then_some(2)
}

fn digits_at(c: &Cursor) -> usize {
    let mut n = 0;
    while c.peek_at(n).is_some_and(is_digit) {
        n += 1;
    }
    n
}

fn number_at(c: &Cursor) -> Option<usize> {
    let digits = digits_at(c);
    (digits > 0).then(|| (0..digits).fold(0, |n, i| n * 10 + digit_value(c.peek_at(i))))
}

fn digit_value(b: Option<u8>) -> usize {
    b.map_or(0, |b| usize::from(b - b'0'))
}
