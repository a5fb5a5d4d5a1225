//! TODO: conformance suite
