//! The scanner: a cursor over the bytes and the tiny predicates that a
//! parser calls on every byte. None of these allocates.

/// A position in the text.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn at(bytes: &'a [u8], pos: usize) -> Self {
        Cursor { bytes, pos }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    pub fn bump(&mut self) {
        self.pos += 1;
    }

    pub fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.bytes.len());
    }

    /// Skips bytes while `keep` holds; returns how many.
    pub fn skip_while(&mut self, keep: impl Fn(u8) -> bool) -> usize {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if !keep(b) {
                break;
            }
            self.bump();
        }
        self.pos - start
    }

    /// The end of the current line (the index of its newline, or the end).
    pub fn line_end(&self) -> usize {
        let mut end = self.pos;
        while end < self.bytes.len() && !is_newline(self.bytes[end]) {
            end += 1;
        }
        end
    }

    /// How many times `b` repeats from here.
    pub fn run_of(&self, b: u8) -> usize {
        let mut n = 0;
        while self.peek_at(n) == Some(b) {
            n += 1;
        }
        n
    }
}

pub fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

pub fn is_newline(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

pub fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

pub fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

pub fn is_punct(b: u8) -> bool {
    matches!(
        b,
        b'*' | b'_' | b'`' | b'[' | b']' | b'(' | b')' | b'!' | b'\\' | b'<' | b'&'
    )
}

pub fn needs_escape(b: u8) -> bool {
    matches!(b, b'<' | b'>' | b'&' | b'"')
}
