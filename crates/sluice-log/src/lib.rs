//! The event log of Sluice's Kafka deployment shape.
//!
//! In that shape accepted events live in an Apache Kafka topic, not in a
//! database: ingest appends each event to the partition of its (source,
//! person) and answers `200` once every in-sync replica has it; delivery
//! nodes share the partitions as one consumer group and commit a
//! partition's offset only once every earlier event there is delivered or
//! handed to retry state (`docs/kafka.md`).
//!
//! - [`record`]: what one record holds ([`LogEvent`]) and its key
//!   ([`partition_key`]). Pure.
//! - [`error`]: [`LogError`], and which errors are worth a retry.
//! - [`watermark`]: which offsets of each partition may be committed, and
//!   which records past them are dealt with too. Pure.
//! - [`recent`]: the calls a consumer read lately, to drop a client's
//!   retry of one the log already holds. Pure.
//! - `kafka` (feature `kafka`): the producer, the consumer-group reader and
//!   topic creation, on rdkafka.
//!
//! # How librdkafka is built
//!
//! rdkafka wraps librdkafka, a C library. With the feature `kafka` it is
//! compiled from the sources rdkafka-sys ships, with librdkafka's own
//! `configure` and `make` (rdkafka's default build), and linked statically:
//!
//! - Linking the operating system's copy (`dynamic-linking`) is not an
//!   option: rdkafka-sys requires at least the librdkafka it wraps (2.12),
//!   and Debian 12's `librdkafka-dev` is 2.0.
//! - The CMake build (`cmake-build`) of librdkafka 2.12.1 does not compile
//!   without libcurl: its generated `config.h` defines
//!   `WITH_OAUTHBEARER_OIDC` as `0`, which a `#ifdef` reads as set, so it
//!   includes `curl/curl.h`. The `configure` build has no such flaw.
//!
//! The `configure` build needs a C compiler, `make` and `bash`, which a
//! Rust toolchain's machine has, and OpenSSL's headers (Debian's
//! `libssl-dev`, found with `pkg-config`; `scripts/setup` installs both):
//! TLS and SASL to the brokers (`kafka::Security`) link the system OpenSSL,
//! as librdkafka's packages do. It takes about a minute of CPU, once per
//! clean target directory. Compression is zlib (system `libz`) and
//! librdkafka's built-in lz4.

pub mod error;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod recent;
pub mod record;
pub mod watermark;

pub use error::LogError;
pub use record::{LogEvent, format_received_at, partition_key};
