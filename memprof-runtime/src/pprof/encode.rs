//! A [`HeapProfile`] as profile.proto's messages, gzipped, and back: the
//! string table, one function per name and file (its full name as
//! `system_name`, the form pprof prints whole as `name`: see `names`), one
//! location per line of a function.

use super::names;
use super::proto::{Function, Line, Location, Profile, Sample, ValueType};
use super::{HeapProfile, HeapValues};
use crate::sites::SiteFrame;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use foldhash::fast::FixedState;
use prost::Message;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};

/// Go's heap sample types, in the order of [`HeapValues`]' fields.
const SAMPLE_TYPES: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// Why bytes could not be read as a heap profile: one lowercase line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

/// A map with foldhash's hasher, fixed: the same profile from the same
/// report.
type Map<K, V> = HashMap<K, V, FixedState>;

/// The profile's messages as they are built: each string, function and
/// location once.
struct Builder<'p> {
    strings: Strings<'p>,
    functions: Map<(&'p str, &'p str), u64>,
    function: Vec<Function>,
    locations: Map<(u64, u32), u64>,
    location: Vec<Location>,
}

/// The string table, each string once; index 0 is the empty string.
struct Strings<'p> {
    index: Map<&'p str, i64>,
    /// Strings made here (pprof's names), not borrowed from the profile.
    made: Map<String, i64>,
    table: Vec<String>,
}

impl<'p> Strings<'p> {
    fn get(&mut self, s: &'p str) -> i64 {
        let next = self.table.len() as i64;
        let index = *self.index.entry(s).or_insert(next);
        if index == next {
            // Every report text a profile holds goes through here or
            // `get_made`: escaped as it is written, as the tables escape.
            self.table.push(crate::text::printable(s).into_owned());
        }
        index
    }

    /// A string made here, once however often it is made.
    fn get_made(&mut self, s: String) -> i64 {
        if let Some(&index) = self.index.get(s.as_str()) {
            return index;
        }
        if let Some(&index) = self.made.get(&s) {
            return index;
        }
        let index = self.table.len() as i64;
        self.table.push(crate::text::printable(&s).into_owned());
        self.made.insert(s, index);
        index
    }
}

impl<'p> Builder<'p> {
    /// Room for about `frames` frames.
    fn with_capacity(frames: usize) -> Self {
        let mut strings = Strings {
            index: Map::with_capacity_and_hasher(frames, FixedState::default()),
            made: Map::default(),
            table: Vec::with_capacity(frames),
        };
        strings.get("");
        Builder {
            strings,
            functions: Map::with_capacity_and_hasher(frames, FixedState::default()),
            function: Vec::with_capacity(frames),
            locations: Map::with_capacity_and_hasher(frames, FixedState::default()),
            location: Vec::with_capacity(frames),
        }
    }

    fn string(&mut self, s: &'p str) -> i64 {
        self.strings.get(s)
    }

    fn location(&mut self, frame: &'p SiteFrame) -> u64 {
        let file = frame.file.as_deref().unwrap_or("");
        let line = frame.line.unwrap_or(0);
        // PERF: one hash of the strings per frame; the location's key is
        // the function's id.
        let next = self.function.len() as u64 + 1;
        let function_id = *self
            .functions
            .entry((frame.function.as_str(), file))
            .or_insert(next);
        if function_id == next {
            let system_name = self.strings.get(&frame.function);
            let name = match names::readable(&frame.function) {
                Cow::Borrowed(_) => system_name,
                Cow::Owned(name) => self.strings.get_made(name),
            };
            let filename = self.strings.get(file);
            self.function.push(Function {
                id: function_id,
                name,
                system_name,
                filename,
            });
        }
        let next = self.location.len() as u64 + 1;
        let id = *self.locations.entry((function_id, line)).or_insert(next);
        if id == next {
            self.location.push(Location {
                id,
                line: vec![Line {
                    function_id,
                    line: i64::from(line),
                }],
            });
        }
        id
    }
}

/// `profile` as gzipped profile.proto.
pub(super) fn encode(profile: &HeapProfile) -> Vec<u8> {
    // Room for the common case; tables sized for every frame would be
    // mostly empty where stacks share their functions.
    let frames = profile.samples.len().min(4096);
    let mut b = Builder::with_capacity(frames);
    let sample_type: Vec<ValueType> = SAMPLE_TYPES
        .iter()
        .map(|(kind, unit)| ValueType {
            r#type: b.string(kind),
            unit: b.string(unit),
        })
        .collect();
    let sample = profile
        .samples
        .iter()
        .map(|(stack, v)| Sample {
            location_id: stack.iter().map(|frame| b.location(frame)).collect(),
            value: vec![
                v.alloc_objects,
                v.alloc_space,
                v.inuse_objects,
                v.inuse_space,
            ],
        })
        .collect();
    let period_type = Some(ValueType {
        r#type: b.string("space"),
        unit: b.string("bytes"),
    });
    let note = match profile.sample_mean {
        Some(mean) => format!(
            "memprof: allocation sites sampled, one per {mean} bytes allocated on average; \
             values scaled to estimates"
        ),
        None => {
            "memprof: exact figures, or scaled where the report's sites were sampled".to_owned()
        }
    };
    let mut comment = vec![b.string_owned(note)];
    if let Some(note) = crate::render::left_out_note(&profile.left_out, None) {
        comment.push(b.string_owned(note.trim_end().to_owned()));
    }
    let default_sample_type = sample_type[3].r#type;
    let message = Profile {
        sample_type,
        sample,
        location: b.location,
        function: b.function,
        string_table: b.strings.table,
        time_nanos: profile.time_nanos,
        period_type,
        period: profile
            .sample_mean
            .map_or(1, |m| i64::try_from(m).unwrap_or(i64::MAX)),
        comment,
        default_sample_type,
    };
    let raw = message.encode_to_vec();
    let mut gz = GzEncoder::new(Vec::with_capacity(raw.len() / 4 + 64), Compression::fast());
    // NOTE: writing into a Vec cannot fail.
    let _ = gz.write_all(&raw);
    gz.finish().unwrap_or_default()
}

impl Builder<'_> {
    /// A string made here (not borrowed from the profile), added last.
    fn string_owned(&mut self, s: String) -> i64 {
        let index = self.strings.table.len() as i64;
        self.strings.table.push(s);
        index
    }
}

/// The profile that `bytes` (profile.proto, gzipped or not) holds.
pub(super) fn decode(bytes: &[u8]) -> Result<HeapProfile, DecodeError> {
    let mut raw = Vec::new();
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        GzDecoder::new(bytes)
            .read_to_end(&mut raw)
            .map_err(|e| DecodeError(format!("not a gzipped profile: {e}")))?;
        &raw[..]
    } else {
        bytes
    };
    let message =
        Profile::decode(bytes).map_err(|e| DecodeError(format!("not a pprof profile: {e}")))?;
    let text = |index: i64| -> Result<&str, DecodeError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| message.string_table.get(i))
            .map(String::as_str)
            .ok_or_else(|| DecodeError(format!("string {index} is not in the string table")))
    };
    let mut columns = [None; 4];
    for (column, value_type) in message.sample_type.iter().enumerate() {
        let kind = text(value_type.r#type)?;
        if let Some(i) = SAMPLE_TYPES.iter().position(|(k, _)| *k == kind) {
            columns[i] = Some(column);
        }
    }
    if columns.iter().all(Option::is_none) {
        return Err(DecodeError(
            "not a heap profile: no alloc_objects, alloc_space, inuse_objects or inuse_space \
             sample type"
                .to_owned(),
        ));
    }
    let functions: Map<u64, &Function> = message.function.iter().map(|f| (f.id, f)).collect();
    let mut frames_of: Map<u64, Vec<SiteFrame>> = Map::default();
    for location in &message.location {
        let mut frames = Vec::with_capacity(location.line.len());
        for line in &location.line {
            let function = functions.get(&line.function_id).ok_or_else(|| {
                DecodeError(format!("location {} names no function", location.id))
            })?;
            let file = text(function.filename)?;
            frames.push(SiteFrame {
                function: full_name(text(function.name)?, text(function.system_name)?).to_owned(),
                file: (!file.is_empty()).then(|| file.to_owned()),
                line: u32::try_from(line.line).ok().filter(|&l| l > 0),
            });
        }
        frames_of.insert(location.id, frames);
    }
    let mut profile = HeapProfile {
        sample_mean: u64::try_from(message.period).ok().filter(|&p| p > 1),
        time_nanos: message.time_nanos,
        ..HeapProfile::default()
    };
    for sample in &message.sample {
        let mut stack = Vec::new();
        for id in &sample.location_id {
            let frames = frames_of
                .get(id)
                .ok_or_else(|| DecodeError(format!("sample names location {id}, not listed")))?;
            stack.extend(frames.iter().cloned());
        }
        let value = |i: usize| {
            columns[i]
                .and_then(|c| sample.value.get(c))
                .copied()
                .unwrap_or(0)
        };
        profile.add(
            stack,
            HeapValues {
                alloc_objects: value(0),
                alloc_space: value(1),
                inuse_objects: value(2),
                inuse_space: value(3),
            },
        );
    }
    Ok(profile)
}

/// A function's full name: its `system_name` where its `name` is the form
/// memprof writes for pprof (`names`), else its `name` (another writer's
/// `system_name` may be a mangled symbol).
fn full_name<'t>(name: &'t str, system_name: &'t str) -> &'t str {
    if name != system_name && !system_name.is_empty() && names::readable(system_name) == name {
        system_name
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_whose_live_left_blocks_out_says_so_in_a_comment() {
        let mut profile = HeapProfile::default();
        let comments = |profile: &HeapProfile| -> Vec<String> {
            let mut raw = Vec::new();
            GzDecoder::new(&encode(profile)[..])
                .read_to_end(&mut raw)
                .unwrap();
            let message = Profile::decode(&raw[..]).unwrap();
            message
                .comment
                .iter()
                .map(|&i| message.string_table[i as usize].clone())
                .collect()
        };
        assert_eq!(comments(&profile).len(), 1, "the sampling note alone");
        profile.left_out.unfollowed_allocations = 2;
        profile.left_out.unfollowed_bytes = 48;
        assert_eq!(
            comments(&profile)[1],
            "(memprof: Live leaves out what is still allocated of 2 allocations, 48 B, that its \
             in-use map had no room to follow; its tables stay within the address-space budget \
             of docs/reliability.md)"
        );
    }

    fn frame(function: &str) -> SiteFrame {
        SiteFrame {
            function: function.to_owned(),
            file: Some("src/app.rs".to_owned()),
            line: Some(3),
        }
    }

    fn message(bytes: &[u8]) -> Profile {
        let mut raw = Vec::new();
        GzDecoder::new(bytes).read_to_end(&mut raw).unwrap();
        Profile::decode(&raw[..]).unwrap()
    }

    /// pprof simplified a `name` equal to its `system_name` as C++, and
    /// printed `<alloc::string::String as core::clone::Clone>::clone` as
    /// `::clone`.
    #[test]
    fn functions_are_named_for_pprof_and_keep_their_full_name_as_system_name() {
        let clone = "<alloc::string::String as core::clone::Clone>::clone";
        let mut profile = HeapProfile::default();
        profile.add(
            vec![frame(clone), frame("app::build")],
            HeapValues {
                alloc_objects: 1,
                alloc_space: 24,
                inuse_objects: 1,
                inuse_space: 24,
            },
        );
        let bytes = encode(&profile);
        let message = message(&bytes);
        let text = |i: i64| message.string_table[i as usize].as_str();
        let names: Vec<(&str, &str)> = message
            .function
            .iter()
            .map(|f| (text(f.name), text(f.system_name)))
            .collect();
        assert_eq!(
            names,
            [
                ("alloc::string::String::Clone::clone", clone),
                ("app::build", "app::build"),
            ]
        );
        // memprof's own reader gives the full names back.
        assert_eq!(decode(&bytes).unwrap(), profile);
    }

    /// Another writer's `system_name` is its mangled symbol: the name is
    /// read.
    #[test]
    fn another_writer_s_system_name_is_not_read_for_its_name() {
        assert_eq!(full_name("app::build", "_ZN3app5build17h0E"), "app::build");
        assert_eq!(full_name("app::build", ""), "app::build");
        assert_eq!(
            full_name("app::Table::render", "app::Table<'_, u8>::render"),
            "app::Table<'_, u8>::render"
        );
    }
}
