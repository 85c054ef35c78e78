//! The note under a table whose sites or Live leave something out (see
//! [`SitesLeftOut`]): said, never left to an undercount.

use super::bytes;
use crate::config::RenderSettings;
use crate::sites::SitesLeftOut;

/// The note for `left_out`, in `settings`' units (exact bytes without
/// them); `None` when nothing was left out.
pub(crate) fn left_out_note(
    left_out: &SitesLeftOut,
    settings: Option<&RenderSettings>,
) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let b = |n: u64| {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        settings.map_or_else(|| format!("{n} B"), |s| bytes(n, s))
    };
    let count = |n: u64| format!("{n} allocation{}", if n == 1 { "" } else { "s" });
    let mut parts = Vec::new();
    if left_out.unfollowed_allocations > 0 || left_out.unfollowed_bytes > 0 {
        parts.push(format!(
            "Live leaves out what is still allocated of {}, {}, that its in-use map had no room to follow",
            count(left_out.unfollowed_allocations),
            b(left_out.unfollowed_bytes),
        ));
    }
    if left_out.unsited_allocations > 0 || left_out.unsited_bytes > 0 {
        parts.push(format!(
            "sites leave out {}, {}, that a thread's site tables had no room for",
            count(left_out.unsited_allocations),
            b(left_out.unsited_bytes),
        ));
    }
    if left_out.unpaired_allocations > 0 || left_out.unpaired_bytes > 0 {
        parts.push(format!(
            "sites' live figures may still count {}, {}, whose frees their thread could not pair",
            count(left_out.unpaired_allocations),
            b(left_out.unpaired_bytes),
        ));
    }
    Some(format!(
        "(memprof: {}; its tables stay within the address-space budget of docs/reliability.md)\n",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_each_shortfall_in_exact_bytes_and_nothing_when_there_is_none() {
        assert_eq!(left_out_note(&SitesLeftOut::default(), None), None);
        let left_out = SitesLeftOut {
            unfollowed_allocations: 3,
            unfollowed_bytes: 24,
            unsited_allocations: 1,
            unsited_bytes: 8,
            ..SitesLeftOut::default()
        };
        assert_eq!(
            left_out_note(&left_out, None).as_deref(),
            Some(
                "(memprof: Live leaves out what is still allocated of 3 allocations, 24 B, that \
                 its in-use map had no room to follow; sites leave out 1 allocation, 8 B, that a \
                 thread's site tables had no room for; its tables stay within the address-space \
                 budget of docs/reliability.md)\n"
            )
        );
    }
}
