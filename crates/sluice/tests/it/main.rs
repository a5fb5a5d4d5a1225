//! Tests of the `sluice` binary as a process: crash durability, signals,
//! first start.

mod process;

mod config;
mod durability;
mod lifecycle;
mod regulation_crash;
