//! `sluice users …` and `sluice tokens …`: people and API tokens, through
//! the admin API like every other command.
//!
//! The first admin of a fresh install is created with the admin token
//! (printed once when the server first starts, or `SLUICE_ADMIN_TOKEN`):
//! `sluice users create --username you --role admin`. The command talks to
//! the running server rather than to its database: the embedded store is
//! locked by the server while it runs, the server hashes the password and
//! writes the audit entry ("admin token", via `cli`), and the command works
//! the same against one node or many.

use std::io::BufRead;

use clap::{Args, Subcommand};
use rand::Rng;
use rand::distr::Alphanumeric;
use reqwest::Method;
use serde_json::{Value, json};

use super::resources::{Format, path_segment, show};
use crate::client::{Api, Connection};
use crate::error::CliError;
use crate::output::{Column, field};

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// List every user.
    #[command(after_help = "Example:\n  sluice users list --table")]
    List,
    /// Create a user who signs in to the dashboard with a password.
    /// Without --password-stdin a password is generated and shown once.
    #[command(
        after_help = "Examples:\n  sluice users create --username alice@example.com --role admin\n  \
                      printf '%s\\n' \"$PASSWORD\" | sluice users create --username bob --role viewer --password-stdin"
    )]
    Create {
        /// 1 to 64 letters, digits or . _ @ + - (an email address works).
        #[arg(long)]
        username: String,
        /// admin, editor or viewer.
        #[arg(long)]
        role: String,
        /// Read the password (at least 12 characters) from the first line
        /// of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Change a user's role.
    #[command(after_help = "Example:\n  sluice users set-role usr_Fq3LrW0xJm2dTz8c --role editor")]
    SetRole {
        id: String,
        #[arg(long)]
        role: String,
    },
    /// Sign a user out of every dashboard session.
    #[command(after_help = "Example:\n  sluice users sign-out usr_Fq3LrW0xJm2dTz8c")]
    SignOut { id: String },
    /// Delete a user, their API tokens and their sessions.
    #[command(after_help = "Example:\n  sluice users delete usr_Fq3LrW0xJm2dTz8c")]
    Delete { id: String },
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// List every API token (hints only).
    #[command(after_help = "Example:\n  sluice tokens list --table")]
    List,
    /// Create an API token; the answer shows it this once.
    #[command(after_help = "Example:\n  sluice tokens create --name deploy --role editor")]
    Create {
        /// What it is for.
        #[arg(long)]
        name: String,
        /// admin, editor or viewer.
        #[arg(long)]
        role: String,
        /// The user it belongs to (its role may not be above theirs).
        #[arg(long)]
        user: Option<String>,
    },
    /// Delete an API token; it stops working at once.
    #[command(after_help = "Example:\n  sluice tokens delete tok_b7Qe0ZkP1sLw9XyA")]
    Delete { id: String },
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example (the first admin of a fresh install, with the admin token):\n  \
                  SLUICE_ADMIN_TOKEN=… sluice users create --username you@example.com --role admin"
)]
pub struct UsersArgs {
    #[command(subcommand)]
    pub command: UsersCommand,
    #[command(flatten)]
    pub format: Format,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  sluice tokens create --name ci --role editor")]
pub struct TokensArgs {
    #[command(subcommand)]
    pub command: TokensCommand,
    #[command(flatten)]
    pub format: Format,
    #[command(flatten)]
    pub conn: Connection,
}

const USER_COLUMNS: &[Column] = &[
    Column {
        header: "ID",
        cell: |r| field(r, "id"),
    },
    Column {
        header: "USERNAME",
        cell: |r| field(r, "username"),
    },
    Column {
        header: "ROLE",
        cell: |r| field(r, "role"),
    },
    Column {
        header: "CREATED",
        cell: |r| field(r, "created_at"),
    },
];

const TOKEN_COLUMNS: &[Column] = &[
    Column {
        header: "ID",
        cell: |r| field(r, "id"),
    },
    Column {
        header: "NAME",
        cell: |r| field(r, "name"),
    },
    Column {
        header: "ROLE",
        cell: |r| field(r, "role"),
    },
    Column {
        header: "TOKEN",
        cell: |r| match r.get("token") {
            Some(Value::String(t)) => t.clone(),
            _ => field(r, "token_hint"),
        },
    },
    Column {
        header: "LAST USED",
        cell: |r| field(r, "last_used_at"),
    },
];

/// The first line of standard input, without its line ending.
fn password_from_stdin() -> Result<String, CliError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::io("standard input", e))?;
    let password = line.trim_end_matches(['\r', '\n']).to_owned();
    if password.is_empty() {
        return Err(CliError::Usage(
            "--password-stdin: standard input had no password".into(),
        ));
    }
    Ok(password)
}

/// A password to show once: 24 letters and digits (about 140 bits).
fn generated_password() -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(24)
        .map(char::from)
        .collect()
}

async fn data(api: &Api, path: &str) -> Result<Value, CliError> {
    let mut answer = api.admin(Method::GET, path, None).await?;
    Ok(answer.get_mut("data").map(Value::take).unwrap_or(json!([])))
}

pub async fn users(args: UsersArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let answer = match args.command {
        UsersCommand::List => data(&api, "/users").await?,
        UsersCommand::Create {
            username,
            role,
            password_stdin,
        } => {
            let (password, generated) = if password_stdin {
                (password_from_stdin()?, false)
            } else {
                (generated_password(), true)
            };
            let body = json!({"username": username, "role": role, "password": password});
            let mut made = api.admin(Method::POST, "/users", Some(&body)).await?;
            if generated {
                // Shown this once, like a new API token.
                made["password"] = Value::String(password);
            }
            made
        }
        UsersCommand::SetRole { id, role } => {
            let path = format!("/users/{}", path_segment(&id)?);
            api.admin(Method::PATCH, &path, Some(&json!({"role": role})))
                .await?
        }
        UsersCommand::SignOut { id } => {
            let path = format!("/users/{}/sessions", path_segment(&id)?);
            api.admin(Method::DELETE, &path, None).await?
        }
        UsersCommand::Delete { id } => {
            let path = format!("/users/{}", path_segment(&id)?);
            api.admin(Method::DELETE, &path, None).await?;
            json!({"deleted": id})
        }
    };
    show(&answer, args.format.table, USER_COLUMNS);
    Ok(())
}

pub async fn tokens(args: TokensArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let answer = match args.command {
        TokensCommand::List => data(&api, "/tokens").await?,
        TokensCommand::Create { name, role, user } => {
            let body = json!({"name": name, "role": role, "user_id": user});
            api.admin(Method::POST, "/tokens", Some(&body)).await?
        }
        TokensCommand::Delete { id } => {
            let path = format!("/tokens/{}", path_segment(&id)?);
            api.admin(Method::DELETE, &path, None).await?;
            json!({"deleted": id})
        }
    };
    show(&answer, args.format.table, TOKEN_COLUMNS);
    Ok(())
}
