//! End-to-end tests of the delivery engine (in progress).
