//! Allocation flame graphs: a heap profile's stacks as folded lines
//! (`root;...;leaf bytes`), drawn by inferno (a port of flamegraph.pl)
//! into SVG. The root is the profiled function, above it its profiled
//! line, above that the sites' frames, outermost first: the profiled line is
//! the last frame of each of memprof's stacks.

use crate::error::Error;
use memprof_runtime::{HeapProfile, SiteFrame};
use std::path::Path;

/// What the widths are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Width {
    /// Bytes allocated (`alloc_space`).
    Allocated,
    /// Bytes in use (`inuse_space`): `mprof flamegraph`'s default, as a
    /// heap profile's default sample type is in pprof's viewers.
    #[default]
    InUse,
}

/// The profile's stacks as folded lines, root first, sorted; stacks whose
/// width is not above zero are left out (a flame graph has no negative
/// widths).
pub fn folded(profile: &HeapProfile, width: Width) -> Vec<String> {
    let mut lines: Vec<String> = profile
        .samples
        .iter()
        .filter_map(|(stack, values)| {
            let bytes = match width {
                Width::Allocated => values.alloc_space,
                Width::InUse => values.inuse_space,
            };
            (bytes > 0).then(|| format!("{} {bytes}", frames(stack).join(";")))
        })
        .collect();
    lines.sort();
    lines
}

/// A stack's frames root first: the profiled function, its lines
/// outermost first (`file:LINE`), then the sites' frames outermost first
/// (`function (file:LINE)`).
fn frames(stack: &[SiteFrame]) -> Vec<String> {
    let mut out = Vec::with_capacity(stack.len() + 1);
    let Some(root) = stack.last() else {
        return out;
    };
    // The profiled lines are the stack's last frames, in the root's function.
    let lines = stack
        .iter()
        .rev()
        .take_while(|f| f.function == root.function && f.file == root.file)
        .count();
    let (sites, lines) = stack.split_at(stack.len() - lines);
    out.push(clean(&root.function));
    out.extend(lines.iter().rev().map(|f| match (&f.file, f.line) {
        (Some(file), Some(line)) => clean(&format!("{file}:{line}")),
        _ => clean(&at(f)),
    }));
    out.extend(sites.iter().rev().map(|f| clean(&at(f))));
    out
}

/// `function (file:line)`, or less where the frame has less.
fn at(frame: &SiteFrame) -> String {
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!("{} ({file}:{line})", frame.function),
        (Some(file), None) => format!("{} ({file})", frame.function),
        _ => frame.function.clone(),
    }
}

/// A frame's text [`printable`](crate::printable), without what the folded
/// format uses: `;` separates frames and a line ends the stack.
fn clean(text: &str) -> String {
    crate::printable::printable(text)
        .chars()
        .map(|c| match c {
            ';' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// The flame graph of `profile` as an SVG document; `None` when no stack
/// has a width.
pub fn svg(profile: &HeapProfile, width: Width, title: &str) -> Result<Option<String>, Error> {
    let lines = folded(profile, width);
    if lines.is_empty() {
        return Ok(None);
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "bytes".to_owned();
    options.name_type = "Stack:".to_owned();
    // The start of a frame (the function) says more than its end.
    options.text_truncate_direction = inferno::flamegraph::TextTruncateDirection::Right;
    options.colors =
        inferno::flamegraph::color::Palette::Basic(inferno::flamegraph::color::BasicPalette::Mem);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| Error::Plot(format!("inferno: {e}")))?;
    Ok(Some(String::from_utf8_lossy(&out).into_owned()))
}

/// `mprof flamegraph INPUT -o FILE [--allocated]`.
pub fn flamegraph(input: &Path, output: &Path, width: Width) -> Result<i32, Error> {
    let profile = super::read(input)?;
    let what = match width {
        Width::Allocated => "bytes allocated",
        Width::InUse => "bytes in use",
    };
    let name = input.file_name().map_or(input.as_os_str(), |n| n);
    let title = format!("{what}: {}", crate::printable::path(Path::new(name)));
    let Some(svg) = svg(&profile, width, &title)? else {
        // A finished run's report often keeps nothing: say what would draw.
        let hint = match width {
            Width::InUse => " (--allocated draws bytes allocated, freed or not)",
            Width::Allocated => "",
        };
        return Err(Error::Report {
            path: input.to_path_buf(),
            problem: format!("no stack has {what} to draw{hint}"),
        });
    };
    memprof_runtime::safe_file::write(output, svg.as_bytes())
        .map_err(|e| Error::io("write", output, e))?;
    eprintln!("mprof: wrote {}", crate::printable::path(output));
    Ok(0)
}
