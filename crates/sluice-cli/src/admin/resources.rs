//! `sluice sources …` and `sluice destinations …`: list, get, create.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::client::{Api, Connection};
use crate::error::CliError;
use crate::output::{Column, field, print_json, print_table};

#[derive(Debug, Args)]
pub struct Format {
    /// Print an aligned table instead of JSON.
    #[arg(long, global = true)]
    pub table: bool,
}

#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// List every source (write keys are shown only as hints).
    #[command(after_help = "Example:\n  sluice sources list --table")]
    List,
    /// Show one source.
    #[command(after_help = "Example:\n  sluice sources get src_4ywHJu7atksI0JlN")]
    Get { id: String },
    /// Create a source; the answer carries its write key, shown only this once.
    #[command(after_help = "Example:\n  sluice sources create --name web")]
    Create {
        #[arg(long)]
        name: String,
        /// Create it disabled (its key is refused until enabled).
        #[arg(long)]
        disabled: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DestinationsCommand {
    /// List every destination (shared secrets are masked).
    #[command(after_help = "Example:\n  sluice destinations list --table")]
    List,
    /// Show one destination.
    #[command(after_help = "Example:\n  sluice destinations get dst_qdHXbhTVG8DHLrMy")]
    Get { id: String },
    /// Create a Webhooks destination.
    #[command(
        after_help = "Example:\n  sluice destinations create --name hooks \\\n    \
                            --webhook https://example.com/hook --source src_4ywHJu7atksI0JlN \\\n    \
                            --shared-secret s3cret"
    )]
    Create {
        #[arg(long)]
        name: String,
        /// A webhook URL (repeat for up to 5).
        #[arg(long = "webhook", value_name = "URL")]
        webhooks: Vec<String>,
        /// A source whose calls it receives (repeatable).
        #[arg(long = "source", value_name = "ID")]
        sources: Vec<String>,
        /// Sign deliveries with X-Signature using this secret.
        #[arg(long, env = "SLUICE_SHARED_SECRET", hide_env_values = true)]
        shared_secret: Option<String>,
        /// Create it disabled.
        #[arg(long)]
        disabled: bool,
    },
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  sluice sources create --name web\n  sluice sources list --table"
)]
pub struct SourcesArgs {
    #[command(subcommand)]
    pub command: SourcesCommand,
    #[command(flatten)]
    pub format: Format,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  sluice destinations create --name hooks --webhook https://example.com/hook --source src_4ywHJu7atksI0JlN\n  sluice destinations list --table"
)]
pub struct DestinationsArgs {
    #[command(subcommand)]
    pub command: DestinationsCommand,
    #[command(flatten)]
    pub format: Format,
    #[command(flatten)]
    pub conn: Connection,
}

const SOURCE_COLUMNS: &[Column] = &[
    Column {
        header: "ID",
        cell: |r| field(r, "id"),
    },
    Column {
        header: "NAME",
        cell: |r| field(r, "name"),
    },
    Column {
        header: "ENABLED",
        cell: |r| field(r, "enabled"),
    },
    Column {
        header: "WRITE KEY",
        cell: |r| match r.get("write_key") {
            Some(Value::String(k)) => k.clone(),
            _ => field(r, "write_key_hint"),
        },
    },
    Column {
        header: "CREATED",
        cell: |r| field(r, "created_at"),
    },
];

const DESTINATION_COLUMNS: &[Column] = &[
    Column {
        header: "ID",
        cell: |r| field(r, "id"),
    },
    Column {
        header: "NAME",
        cell: |r| field(r, "name"),
    },
    Column {
        header: "ENABLED",
        cell: |r| field(r, "enabled"),
    },
    Column {
        header: "SOURCES",
        cell: |r| join(r.get("source_ids"), |v| v.as_str().map(str::to_owned)),
    },
    Column {
        header: "URLS",
        cell: |r| {
            join(r.pointer("/settings/urls"), |v| {
                v.as_str()
                    .or_else(|| v.get("url").and_then(Value::as_str))
                    .map(str::to_owned)
            })
        },
    },
];

fn join(list: Option<&Value>, item: fn(&Value) -> Option<String>) -> String {
    let items: Vec<String> = list
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(item).collect())
        .unwrap_or_default();
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

pub async fn sources(args: SourcesArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let answer = match args.command {
        SourcesCommand::List => list(&api, "/sources").await?,
        SourcesCommand::Get { id } => get(&api, "/sources", &id).await?,
        SourcesCommand::Create { name, disabled } => {
            let body = json!({"name": name, "enabled": !disabled});
            api.admin(Method::POST, "/sources", Some(&body)).await?
        }
    };
    show(&answer, args.format.table, SOURCE_COLUMNS);
    Ok(())
}

pub async fn destinations(args: DestinationsArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let answer = match args.command {
        DestinationsCommand::List => list(&api, "/destinations").await?,
        DestinationsCommand::Get { id } => get(&api, "/destinations", &id).await?,
        DestinationsCommand::Create {
            name,
            webhooks,
            sources,
            shared_secret,
            disabled,
        } => {
            let mut settings = Map::new();
            settings.insert("urls".into(), json!(webhooks));
            if let Some(secret) = shared_secret {
                settings.insert("sharedSecret".into(), Value::String(secret));
            }
            let body = json!({
                "name": name, "type": "Webhooks", "enabled": !disabled,
                "settings": settings, "source_ids": sources,
            });
            api.admin(Method::POST, "/destinations", Some(&body))
                .await?
        }
    };
    show(&answer, args.format.table, DESTINATION_COLUMNS);
    Ok(())
}

/// A list answer's `data` array.
async fn list(api: &Api, path: &str) -> Result<Value, CliError> {
    let mut answer = api.admin(Method::GET, path, None).await?;
    Ok(answer.get_mut("data").map(Value::take).unwrap_or(json!([])))
}

async fn get(api: &Api, collection: &str, id: &str) -> Result<Value, CliError> {
    let path = format!("{collection}/{}", path_segment(id)?);
    api.admin(Method::GET, &path, None).await
}

/// Ids go into the URL path as they are; anything that could change the
/// path is refused rather than encoded.
pub fn path_segment(id: &str) -> Result<&str, CliError> {
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(CliError::Usage(format!("'{id}' is not a valid id")));
    }
    Ok(id)
}

/// Prints an answer: a table of its rows (one row for an object), or JSON.
pub fn show(answer: &Value, as_table: bool, columns: &[Column]) {
    if !as_table {
        return print_json(answer);
    }
    match answer {
        Value::Array(rows) => print_table(columns, rows),
        one => print_table(columns, std::slice::from_ref(one)),
    }
}
