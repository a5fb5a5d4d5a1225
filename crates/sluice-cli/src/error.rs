//! The CLI's error type and the exit codes it maps to.

/// Exit codes. `2` is also what clap uses for a malformed command line.
pub mod exit {
    pub const OK: u8 = 0;
    /// The server refused the request, could not be reached, or a local
    /// file could not be read or written.
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    /// `import` finished, but the server rejected some lines (see the
    /// reject file).
    pub const REJECTED: u8 = 3;
    /// `import` stopped on SIGINT after recording what was acknowledged.
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The server answered with its error shape.
    #[error("{message} (HTTP {status}{})", if code.is_empty() { String::new() } else { format!(", {code}") })]
    Api {
        status: u16,
        code: String,
        message: String,
    },
    /// The server could not be reached or the answer was cut off.
    #[error("{0}")]
    Transport(String),
    /// Something answered that is not Sluice (a proxy's page, another
    /// service on that port): nothing it said is taken as done.
    #[error("{0}: the answer is not Sluice's (is --url right?)")]
    NotSluice(String),
    /// A local file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// An input could not be read.
    #[error("{0}")]
    Input(String),
    /// Standard output was closed (`sluice tail | head`): not an error.
    #[error("standard output closed")]
    StdoutClosed,
    /// A malformed argument or a missing setting.
    #[error("{0}")]
    Usage(String),
    /// The import checkpoint does not match the input.
    #[error("{0}")]
    Checkpoint(String),
}

impl CliError {
    pub fn io(path: impl std::fmt::Display, source: std::io::Error) -> CliError {
        CliError::Io {
            path: path.to_string(),
            source,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            CliError::StdoutClosed => exit::OK,
            _ => exit::FAILED,
        }
    }
}
