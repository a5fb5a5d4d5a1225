//! Printing answers: JSON (indented on a terminal, one line otherwise, so
//! pipes get one document per line) or an aligned text table.

use std::io::{IsTerminal, Write};

use serde_json::Value;

/// Writes `value` to standard output as JSON.
pub fn print_json(value: &Value) {
    let text = if std::io::stdout().is_terminal() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// One column of a table: its header and how to read the cell from a row.
pub struct Column {
    pub header: &'static str,
    pub cell: fn(&Value) -> String,
}

/// Renders `rows` as a table with a header line, columns separated by two
/// spaces and padded to their widest cell. Pure, for tests.
pub fn table(columns: &[Column], rows: &[Value]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| one_line((c.cell)(row))).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.header.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |values: Vec<&str>| {
        let mut text = String::new();
        for (i, v) in values.iter().enumerate() {
            if i + 1 == values.len() {
                text.push_str(v);
            } else {
                text.push_str(v);
                let pad = widths[i] - v.chars().count() + 2;
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(columns.iter().map(|c| c.header).collect());
    for row in &cells {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

pub fn print_table(columns: &[Column], rows: &[Value]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(table(columns, rows).as_bytes());
}

/// A cell for a scalar field: strings bare, `null`/absent as `-`.
pub fn field(row: &Value, name: &str) -> String {
    match row.get(name) {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn one_line(s: String) -> String {
    if s.contains(['\n', '\r', '\t']) {
        s.replace(['\n', '\r', '\t'], " ")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_pads_columns_to_the_widest_cell_and_shows_null_as_dash() {
        let columns = [
            Column {
                header: "ID",
                cell: |r| field(r, "id"),
            },
            Column {
                header: "NAME",
                cell: |r| field(r, "name"),
            },
        ];
        let rows = [
            json!({"id": "src_long_id", "name": "web"}),
            json!({"id": "s2"}),
        ];
        assert_eq!(
            table(&columns, &rows),
            "ID           NAME\nsrc_long_id  web\ns2           -\n"
        );
    }
}
