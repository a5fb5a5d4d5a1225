//! How many deliveries the next claim may take while a destination's queue
//! is full.
//!
//! Why: a destination holds at most `concurrency_per_destination +
//! max_queued_per_destination` deliveries; a claimed delivery that finds its
//! lane full is handed back (written back with a short delay). With one busy
//! destination and a backlog, every claim used to find the lane full again:
//! the dispatcher claimed a batch, handed nearly all of it back, and did so
//! again each time a send finished: store writes for nothing, and each
//! handed-back delivery 100 ms late. A window closing for 100,000 audience
//! members at once is exactly that backlog (BENCHMARKS.md, "Measured choices").
//!
//! The rule: when every row of the last claim went to lanes that have
//! handed back for want of room ("saturated"), the next claim takes no more
//! than those lanes have free, and waits until that is a useful amount
//! (`want`) rather than claiming a row or two at a time. The wait is short
//! (`waited_out`): after it the claim takes whatever is free, or, with
//! nothing free, a normal batch, which also finds work for other
//! destinations. A claim whose rows reach any other lane returns to normal
//! sizing, so a busy destination never holds back its neighbours.

/// A lane the last claim's rows went to, as it stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LaneRoom {
    /// Deliveries it can still take before handing back.
    pub free: usize,
    /// It handed back a delivery for want of room since it last emptied.
    pub saturated: bool,
}

/// The size of the next claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClaimSize {
    /// As many as the global room and the claim batch allow.
    Normal,
    /// At most this many: what the saturated lanes can take.
    UpTo(usize),
    /// Wait for sends to finish before claiming.
    Wait,
}

/// Sizes the next claim from the lanes the last claim reached (`focus`).
pub(super) fn size_claim(focus: &[LaneRoom], want: usize, waited_out: bool) -> ClaimSize {
    if focus.is_empty() || focus.iter().any(|lane| !lane.saturated) {
        return ClaimSize::Normal;
    }
    let free: usize = focus.iter().map(|lane| lane.free).sum();
    if free >= want.max(1) {
        ClaimSize::UpTo(free)
    } else if !waited_out {
        ClaimSize::Wait
    } else if free > 0 {
        ClaimSize::UpTo(free)
    } else {
        ClaimSize::Normal
    }
}

/// The amount worth a claim: a whole batch, or half a lane when a lane holds
/// less than a batch.
pub(super) fn want(claim_batch: usize, lane_cap: usize) -> usize {
    claim_batch.min(lane_cap / 2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saturated(free: usize) -> LaneRoom {
        LaneRoom {
            free,
            saturated: true,
        }
    }

    #[test]
    fn claims_normally_when_no_lane_is_saturated() {
        assert_eq!(size_claim(&[], 256, false), ClaimSize::Normal);
        let open = LaneRoom {
            free: 0,
            saturated: false,
        };
        assert_eq!(size_claim(&[open], 256, false), ClaimSize::Normal);
    }

    #[test]
    fn claims_normally_when_the_last_claim_reached_another_lane() {
        let other = LaneRoom {
            free: 512,
            saturated: false,
        };
        assert_eq!(
            size_claim(&[saturated(0), other], 256, false),
            ClaimSize::Normal
        );
    }

    #[test]
    fn waits_until_a_saturated_lane_has_room_for_a_batch() {
        assert_eq!(size_claim(&[saturated(3)], 256, false), ClaimSize::Wait);
        assert_eq!(
            size_claim(&[saturated(300)], 256, false),
            ClaimSize::UpTo(300)
        );
        assert_eq!(
            size_claim(&[saturated(200), saturated(100)], 256, false),
            ClaimSize::UpTo(300)
        );
    }

    #[test]
    fn after_the_wait_takes_what_is_free_or_probes_with_a_batch() {
        assert_eq!(size_claim(&[saturated(3)], 256, true), ClaimSize::UpTo(3));
        assert_eq!(size_claim(&[saturated(0)], 256, true), ClaimSize::Normal);
    }

    #[test]
    fn want_is_a_batch_or_half_a_small_lane() {
        assert_eq!(want(256, 512), 256);
        assert_eq!(want(256, 8), 4);
        assert_eq!(want(256, 1), 1);
    }
}
