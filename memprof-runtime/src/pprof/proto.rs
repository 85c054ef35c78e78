//! profile.proto's messages (google/pprof, `proto/profile.proto`): only the
//! fields a heap profile uses, with the format's own field numbers, so that
//! any reader decodes them. Their `prost::Message` impls are made by
//! [`message!`] from prost's own field encoders, not by prost's derive,
//! whose proc-macro depends on itertools and so on `either`: memprof's
//! graph would then hold `either`, which `cargo memprof --dep either`
//! could no longer annotate.

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, int64, message, skip_field, string, uint64};

/// The whole profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Profile {
    pub(crate) sample_type: Vec<ValueType>,
    pub(crate) sample: Vec<Sample>,
    pub(crate) location: Vec<Location>,
    pub(crate) function: Vec<Function>,
    /// Index 0 is the empty string.
    pub(crate) string_table: Vec<String>,
    pub(crate) time_nanos: i64,
    pub(crate) period_type: Option<ValueType>,
    pub(crate) period: i64,
    /// Indices into the string table.
    pub(crate) comment: Vec<i64>,
    pub(crate) default_sample_type: i64,
}

/// A kind of value and its unit, as string-table indices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ValueType {
    pub(crate) r#type: i64,
    pub(crate) unit: i64,
}

/// One stack (leaf first) and its values, one per sample type.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sample {
    pub(crate) location_id: Vec<u64>,
    pub(crate) value: Vec<i64>,
}

/// A program point: here always one line of one function.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Location {
    pub(crate) id: u64,
    pub(crate) line: Vec<Line>,
}

/// A line of a function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) function_id: u64,
    pub(crate) line: i64,
}

/// A function: name and file as string-table indices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Function {
    pub(crate) id: u64,
    pub(crate) name: i64,
    pub(crate) system_name: i64,
    pub(crate) filename: i64,
}

/// One field's encoding, by its protobuf kind: proto3 scalars (left out
/// when zero), packed repeated scalars, repeated strings and messages, an
/// optional message.
macro_rules! field {
    (encode int64, $tag:literal, $v:expr, $buf:ident) => {
        if $v != 0 {
            int64::encode($tag, &$v, $buf)
        }
    };
    (encode uint64, $tag:literal, $v:expr, $buf:ident) => {
        if $v != 0 {
            uint64::encode($tag, &$v, $buf)
        }
    };
    (encode packed_int64, $tag:literal, $v:expr, $buf:ident) => {
        int64::encode_packed($tag, &$v, $buf)
    };
    (encode packed_uint64, $tag:literal, $v:expr, $buf:ident) => {
        uint64::encode_packed($tag, &$v, $buf)
    };
    (encode strings, $tag:literal, $v:expr, $buf:ident) => {
        string::encode_repeated($tag, &$v, $buf)
    };
    (encode messages, $tag:literal, $v:expr, $buf:ident) => {
        message::encode_repeated($tag, &$v, $buf)
    };
    (encode optional, $tag:literal, $v:expr, $buf:ident) => {
        if let Some(m) = &$v {
            message::encode($tag, m, $buf)
        }
    };
    (merge int64, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        int64::merge($w, &mut $v, $buf, $ctx)
    };
    (merge uint64, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        uint64::merge($w, &mut $v, $buf, $ctx)
    };
    (merge packed_int64, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        int64::merge_repeated($w, &mut $v, $buf, $ctx)
    };
    (merge packed_uint64, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        uint64::merge_repeated($w, &mut $v, $buf, $ctx)
    };
    (merge strings, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        string::merge_repeated($w, &mut $v, $buf, $ctx)
    };
    (merge messages, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        message::merge_repeated($w, &mut $v, $buf, $ctx)
    };
    (merge optional, $w:ident, $v:expr, $buf:ident, $ctx:ident) => {
        message::merge($w, $v.get_or_insert_with(Default::default), $buf, $ctx)
    };
    (len int64, $tag:literal, $v:expr) => {
        if $v != 0 {
            int64::encoded_len($tag, &$v)
        } else {
            0
        }
    };
    (len uint64, $tag:literal, $v:expr) => {
        if $v != 0 {
            uint64::encoded_len($tag, &$v)
        } else {
            0
        }
    };
    (len packed_int64, $tag:literal, $v:expr) => {
        int64::encoded_len_packed($tag, &$v)
    };
    (len packed_uint64, $tag:literal, $v:expr) => {
        uint64::encoded_len_packed($tag, &$v)
    };
    (len strings, $tag:literal, $v:expr) => {
        string::encoded_len_repeated($tag, &$v)
    };
    (len messages, $tag:literal, $v:expr) => {
        message::encoded_len_repeated($tag, &$v)
    };
    (len optional, $tag:literal, $v:expr) => {
        $v.as_ref().map_or(0, |m| message::encoded_len($tag, m))
    };
}

/// `prost::Message` for a struct, from its fields' tags and kinds; fields
/// it does not know are skipped when read.
macro_rules! message {
    ($name:ident { $($tag:literal $field:ident: $kind:ident),* $(,)? }) => {
        impl prost::Message for $name {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                $( field!(encode $kind, $tag, self.$field, buf); )*
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                match tag {
                    $( $tag => field!(merge $kind, wire_type, self.$field, buf, ctx), )*
                    _ => skip_field(wire_type, tag, buf, ctx),
                }
            }

            fn encoded_len(&self) -> usize {
                0 $( + field!(len $kind, $tag, self.$field) )*
            }

            fn clear(&mut self) {
                *self = Self::default();
            }
        }
    };
}

message!(Profile {
    1 sample_type: messages,
    2 sample: messages,
    4 location: messages,
    5 function: messages,
    6 string_table: strings,
    9 time_nanos: int64,
    11 period_type: optional,
    12 period: int64,
    13 comment: packed_int64,
    14 default_sample_type: int64,
});
message!(ValueType { 1 r#type: int64, 2 unit: int64 });
message!(Sample { 1 location_id: packed_uint64, 2 value: packed_int64 });
message!(Location { 1 id: uint64, 4 line: messages });
message!(Line { 1 function_id: uint64, 2 line: int64 });
message!(Function {
    1 id: uint64,
    2 name: int64,
    3 system_name: int64,
    4 filename: int64,
});
