//! Size and count limits of the collection API.

/// Limits applied to collection requests. Sizes count decompressed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest single call, and largest item of a batch, as raw JSON text;
    /// a batch item counts the batch-level `context`/`integrations` merged
    /// into it too ([`crate::merge`]).
    pub max_call_bytes: usize,
    /// Largest batch request body.
    pub max_batch_bytes: usize,
    /// Most items in one batch.
    pub max_batch_events: usize,
}

impl Default for Limits {
    /// 32 KiB per call, 500 KiB per batch, 2500 events per batch. Real clients
    /// cap themselves below these (analytics-go v3: 32000 B and 500000 B).
    fn default() -> Self {
        Limits {
            max_call_bytes: 32 * 1024,
            max_batch_bytes: 500 * 1024,
            max_batch_events: 2500,
        }
    }
}

impl Limits {
    /// The most bytes a request body on this endpoint may have.
    pub fn max_body_bytes(&self, endpoint: crate::Endpoint) -> usize {
        match endpoint {
            crate::Endpoint::Batch => self.max_batch_bytes,
            crate::Endpoint::Single(_) => self.max_call_bytes,
        }
    }
}
