//! GPU memory without the `gpu` feature: no NVML, no CUPTI, no GPU columns.
//!
//! The same interface as the `gpu` module it stands for, answering "no GPU"
//! at every call, so that the layers above compile unchanged and a CPU-only
//! build links neither nvml-wrapper nor libloading.

/// Where an open GPU region started: never, without the feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpuMark {}

/// One closed GPU region's figures: never made without the feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuFigures {
    pub(crate) increment: i64,
    pub(crate) usage: i64,
    pub(crate) peak: u64,
}

#[inline]
pub(crate) fn active() -> bool {
    false
}

#[inline]
pub(crate) fn counted() -> bool {
    false
}

#[inline]
pub(crate) fn per_statement() -> bool {
    false
}

pub(crate) fn description() -> Option<&'static str> {
    None
}

#[inline]
pub(crate) fn sample() -> Option<i64> {
    None
}

#[inline]
pub(crate) fn begin(_process: bool) -> Option<GpuMark> {
    None
}

#[inline]
pub(crate) fn end(mark: GpuMark) -> Option<GpuFigures> {
    match mark {}
}

#[inline]
pub(crate) fn step(
    _mark: Option<GpuMark>,
    _process: bool,
) -> (Option<GpuFigures>, Option<GpuMark>) {
    (None, None)
}

pub(crate) fn driver() -> Option<i64> {
    None
}

pub(crate) fn driver_description() -> Option<&'static str> {
    None
}
