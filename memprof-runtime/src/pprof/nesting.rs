//! Which of a function's rows enclose which, read from their source text
//! (a report's rows hold every line of the function, figures or not).
//!
//! A statement that opens a block (`for`, `if`, `match`, a block) encloses
//! the rows inside it, and its figures include theirs, as the tables' do;
//! a profile takes each row's own share and puts the rows that enclose it
//! on its stack. Braces are counted outside comments, strings and character
//! literals. Where they do not balance, no row encloses another: each row's
//! figures then stand alone, as the tables show them.

use crate::report::FunctionReport;

/// One open block: the row whose statement opened it, and the last row
/// that started a statement directly inside it, while that statement has
/// not ended (`;`, `,` or its block's `}` outside parentheses).
struct Open {
    owner: usize,
    last: Option<usize>,
    /// Parentheses and brackets open inside the block.
    nested: i32,
}

/// For each of `function`'s lines (same indices), the row that encloses
/// it: `None` for rows before and at the `fn` row, the function's top-level
/// statements, and every row where the braces do not balance.
pub(crate) fn enclosing(function: &FunctionReport) -> Vec<Option<usize>> {
    let lines = &function.lines;
    let none = vec![None; lines.len()];
    let Some(fn_row) = function.fn_row_index() else {
        return none;
    };
    let mut statements = function.statement_indices().peekable();
    let mut parents = none.clone();
    let mut stack = vec![Open {
        owner: fn_row,
        last: None,
        nested: 0,
    }];
    let mut lexer = Lexer::default();
    // The `fn` row's own line may open the body.
    for (i, line) in lines.iter().enumerate().skip(fn_row) {
        if statements.next_if_eq(&i).is_some() {
            let Some(top) = stack.last_mut() else {
                return none;
            };
            parents[i] = (top.owner != fn_row).then_some(top.owner);
            top.last = Some(i);
        }
        let mut popped = None;
        for token in lexer.tokens(&line.contents) {
            let Some(top) = stack.last_mut() else {
                return none;
            };
            match token {
                '{' => {
                    // `} else {` continues the statement just closed.
                    let owner = popped.take().or(top.last).unwrap_or(top.owner);
                    stack.push(Open {
                        owner,
                        last: None,
                        nested: 0,
                    });
                }
                '}' => {
                    if stack.len() == 1 {
                        return none;
                    }
                    popped = stack.pop().map(|open| open.owner);
                    if let Some(top) = stack.last_mut()
                        && top.nested == 0
                    {
                        top.last = None;
                    }
                }
                '(' | '[' => top.nested += 1,
                ')' | ']' => top.nested -= 1,
                ';' | ',' if top.nested <= 0 => top.last = None,
                _ => {}
            }
        }
    }
    if stack.len() == 1 { parents } else { none }
}

/// Finds the tokens that matter here (`{}()[];,`) outside comments,
/// strings and character literals, across lines.
#[derive(Default)]
struct Lexer {
    /// Inside a `/* */` comment, this deep.
    comment: u32,
    /// Inside a string: `Some(hashes)` of a raw string, `None` of a plain
    /// one.
    string: Option<Option<usize>>,
}

impl Lexer {
    fn tokens(&mut self, line: &str) -> Vec<char> {
        let chars: Vec<char> = line.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            if self.comment > 0 {
                match (c, next) {
                    ('*', Some('/')) => {
                        self.comment -= 1;
                        i += 2;
                    }
                    ('/', Some('*')) => {
                        self.comment += 1;
                        i += 2;
                    }
                    _ => i += 1,
                }
                continue;
            }
            if let Some(raw) = self.string {
                match (raw, c) {
                    (None, '\\') => i += 2,
                    (None, '"') => {
                        self.string = None;
                        i += 1;
                    }
                    (Some(hashes), '"')
                        if chars.len() > i + hashes
                            && chars[i + 1..=i + hashes].iter().all(|&h| h == '#') =>
                    {
                        self.string = None;
                        i += 1 + hashes;
                    }
                    _ => i += 1,
                }
                continue;
            }
            match (c, next) {
                ('/', Some('/')) => break,
                ('/', Some('*')) => {
                    self.comment = 1;
                    i += 2;
                }
                ('"', _) => {
                    self.string = Some(None);
                    i += 1;
                }
                ('r', Some('"' | '#')) if !ident(chars.get(i.wrapping_sub(1))) => {
                    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                    if chars.get(i + 1 + hashes) == Some(&'"') {
                        self.string = Some(Some(hashes));
                        i += 2 + hashes;
                    } else {
                        i += 1;
                    }
                }
                ('\'', _) => i += char_literal(&chars[i..]),
                ('{' | '}' | '(' | ')' | '[' | ']' | ';' | ',', _) => {
                    out.push(c);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        out
    }
}

/// Whether `c` continues an identifier (so that `r` before it is not a raw
/// string's prefix).
fn ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// How many characters a `'` at the start of `chars` takes: a character
/// literal (`'{'`, `'\''`, `'\u{7b}'`) whole, a lifetime's quote alone.
fn char_literal(chars: &[char]) -> usize {
    match chars.get(1) {
        Some('\\') => chars
            .iter()
            .skip(2)
            .position(|&c| c == '\'')
            .map_or(1, |end| end + 3),
        Some(_) if chars.get(2) == Some(&'\'') => 3,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::LineReport;

    /// A function of `source`, a row per line; `ran` marks those with
    /// figures.
    fn rows(source: &[(&str, bool)]) -> FunctionReport {
        let lines = source
            .iter()
            .enumerate()
            .map(|(i, (text, ran))| {
                let mut row = LineReport::empty(i as u32 + 1, (*text).to_owned());
                if *ran {
                    row.increment = Some(0);
                }
                row
            })
            .collect();
        FunctionReport::of_lines("f", "src/lib.rs", lines)
    }

    #[test]
    fn loops_ifs_and_matches_enclose_their_bodies() {
        let lines = rows(&[
            ("#[profile]", false),
            ("fn f(v: &mut Vec<String>) {", true),
            ("    let a = format!(\"{{\");", true),
            ("    for i in 0..3 {", true),
            ("        v.push(a.clone());", true),
            ("        if i == 1 {", true),
            ("            v.push('{'.to_string());", true),
            ("        } else {", false),
            ("            let _s = r#\"}\"#; // }", true),
            ("        }", false),
            ("    }", true),
            ("    match v.len() {", true),
            ("        0 => {", false),
            ("            v.clear();", true),
            ("        }", false),
            ("        _ => v.truncate(1),", true),
            ("    }", false),
            ("    let x = Some(1).map(|n| {", true),
            ("        n + 1", false),
            ("    });", false),
            ("}", true),
        ]);
        let parents = enclosing(&lines);
        let expected = [
            None,
            None,
            None,
            None,
            Some(3),
            Some(3),
            Some(5),
            None,
            Some(5),
            None,
            Some(3),
            None,
            None,
            Some(11),
            None,
            Some(11),
            None,
            None,
            None,
            None,
            None,
        ];
        assert_eq!(parents, expected);
    }

    #[test]
    fn struct_literals_else_ifs_and_one_line_blocks_enclose_what_they_should() {
        let lines = rows(&[
            ("fn g() {", true),
            ("    let v = Foo {", true),
            ("        a: \"{\",", false),
            ("    };", false),
            ("    if a {", true),
            ("        x();", true),
            ("    } else if b {", false),
            ("        y(); /* { */", true),
            ("    }", false),
            ("    loop { z(); }", true),
            ("    w(|c| c == '}');", true),
            ("}", true),
        ]);
        let expected = [
            None,
            None,
            None,
            None,
            None,
            Some(4),
            None,
            Some(4),
            None,
            None,
            None,
            None,
        ];
        assert_eq!(enclosing(&lines), expected);
    }

    #[test]
    fn braces_that_do_not_balance_enclose_nothing() {
        let lines = rows(&[
            ("#[profile]", true),
            ("fn f() {", false),
            ("    for _ in 0..3 {", true),
            ("        g();", true),
            ("}", true),
        ]);
        assert_eq!(enclosing(&lines), vec![None; 5]);
    }
}
