//! The code behind the `mprof` and `cargo-memprof` commands, shared by both
//! binaries (`main.rs` and `bin/cargo-memprof.rs`). Not a library API: its
//! items change with the commands.

// NOTE: the `///` comments on the argument types are clap's --help text,
// written for a terminal, not Markdown: `<YYYYmmddHHMMSS>` is not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]
// NOTE: the module headers were written for the binary's documentation,
// which shows private items, and link to the modules they describe.
#![allow(rustdoc::private_intra_doc_links)]

pub mod cargo_memprof;
pub mod dat;
pub mod diff;
pub mod error;
pub mod files;
pub mod gpu;
pub mod html;
pub mod live;
pub mod plot;
pub mod printable;
pub mod procfs;
pub mod profile;
pub mod report;
pub mod run;
pub mod summary;
pub mod text;
pub mod top;
