//! profile.proto's messages (google/pprof, `proto/profile.proto`), declared
//! by hand with prost's derive: only the fields a heap profile uses, with
//! the format's own field numbers, so that any reader decodes them.

/// The whole profile.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub(crate) sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub(crate) sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub(crate) location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub(crate) function: Vec<Function>,
    /// Index 0 is the empty string.
    #[prost(string, repeated, tag = "6")]
    pub(crate) string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub(crate) time_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub(crate) period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub(crate) period: i64,
    /// Indices into the string table.
    #[prost(int64, repeated, tag = "13")]
    pub(crate) comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub(crate) default_sample_type: i64,
}

/// A kind of value and its unit, as string-table indices.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub(crate) struct ValueType {
    #[prost(int64, tag = "1")]
    pub(crate) r#type: i64,
    #[prost(int64, tag = "2")]
    pub(crate) unit: i64,
}

/// One stack (leaf first) and its values, one per sample type.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub(crate) location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub(crate) value: Vec<i64>,
}

/// A program point: here always one line of one function.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Location {
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    #[prost(message, repeated, tag = "4")]
    pub(crate) line: Vec<Line>,
}

/// A line of a function.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub(crate) struct Line {
    #[prost(uint64, tag = "1")]
    pub(crate) function_id: u64,
    #[prost(int64, tag = "2")]
    pub(crate) line: i64,
}

/// A function: name and file as string-table indices.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub(crate) struct Function {
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    #[prost(int64, tag = "2")]
    pub(crate) name: i64,
    #[prost(int64, tag = "3")]
    pub(crate) system_name: i64,
    #[prost(int64, tag = "4")]
    pub(crate) filename: i64,
}
