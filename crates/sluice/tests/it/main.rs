//! Tests of the `sluice` binary as a process: crash durability, signals,
//! first start; and the operator commands that talk to a running server.

mod process;

mod backup;
mod cli;
mod config;
mod dns;
mod durability;
mod failure_log;
mod hostile;
mod lifecycle;
mod personas;
mod regulation_crash;
mod secrets;
