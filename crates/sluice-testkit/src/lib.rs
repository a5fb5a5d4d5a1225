//! Test helpers for Sluice (in progress).
