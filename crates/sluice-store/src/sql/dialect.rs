//! What differs between SQLite's and PostgreSQL's SQL, in one place.
//!
//! Statements are written once in PostgreSQL's placeholder style (`$1`,
//! `$2`, …; a number may repeat). SQLite reads `?1`, `?2`, … the same way,
//! so [`Dialect::render`] only swaps the sigil. The few constructs that are
//! spelled differently are fragments chosen by the dialect and spliced into
//! the statement text with `format!`; nothing else differs.

use std::borrow::Cow;

/// The SQL dialect of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `sql` with its placeholders in this dialect's form. Text inside
    /// single quotes and quoted identifiers is left alone.
    pub(crate) fn render(self, sql: &str) -> Cow<'_, str> {
        if self == Dialect::Postgres || !sql.contains('$') {
            return Cow::Borrowed(sql);
        }
        let mut out = String::with_capacity(sql.len());
        let mut quote: Option<char> = None;
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (None, '\'' | '"') => quote = Some(c),
                (None, '$') if chars.peek().is_some_and(char::is_ascii_digit) => {
                    out.push('?');
                    continue;
                }
                _ => {}
            }
            out.push(c);
        }
        Cow::Owned(out)
    }

    /// A `FROM` item named `list` with one column `value`: the elements of
    /// the list bound as parameter `n` (a text list). Use it as
    /// `SELECT value FROM {list}` or `x IN (SELECT value FROM {list})`.
    pub(crate) fn list(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("json_each(${n}) AS list"),
            Dialect::Postgres => format!("UNNEST(${n}::text[]) AS list(value)"),
        }
    }

    /// `column` is one of the text list bound as parameter `n`. PostgreSQL
    /// spells it `= ANY`, which it plans as one index probe per element
    /// whatever the table's statistics say; SQLite reads the list as a
    /// table and probes the same way.
    pub(crate) fn any(self, column: &str, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each(${n}))"),
            Dialect::Postgres => format!("{column} = ANY(${n}::text[])"),
        }
    }

    /// [`Dialect::list`] for a list of integers.
    pub(crate) fn int_list(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("json_each(${n}) AS list"),
            Dialect::Postgres => format!("UNNEST(${n}::bigint[]) AS list(value)"),
        }
    }

    /// The larger of two values (SQLite's scalar `max`).
    pub(crate) fn greatest(self) -> &'static str {
        match self {
            Dialect::Sqlite => "max",
            Dialect::Postgres => "GREATEST",
        }
    }

    /// A row lock for a read that decides a write. SQLite has one writer,
    /// so its writes never interleave and it needs none.
    pub(crate) fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// [`Dialect::for_update`], skipping rows another transaction holds.
    pub(crate) fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// A row lock that lets foreign keys to the row be checked meanwhile
    /// (what an engine step takes on the computations it relies on).
    pub(crate) fn for_no_key_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR NO KEY UPDATE",
        }
    }

    /// A shared row lock: the row cannot be deleted until commit.
    pub(crate) fn for_share(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR SHARE",
        }
    }

    /// [`Dialect::list`] with a second column `position`: each element's
    /// place in the list, from 1.
    pub(crate) fn numbered_list(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => {
                format!("(SELECT value, key + 1 AS position FROM json_each(${n})) AS list")
            }
            Dialect::Postgres => {
                format!("UNNEST(${n}::text[]) WITH ORDINALITY AS list(value, position)")
            }
        }
    }

    /// A condition: the JSON array of text in column `array` holds the
    /// text `value`.
    pub(crate) fn json_array_has(self, array: &str, value: &str) -> String {
        match self {
            Dialect::Sqlite => {
                format!("EXISTS (SELECT 1 FROM json_each({array}) WHERE json_each.value = {value})")
            }
            Dialect::Postgres => format!("{array}::jsonb ? {value}"),
        }
    }

    /// A prefix that keeps the column it precedes from choosing an index
    /// (SQLite's unary `+`), where a more selective one should. PostgreSQL's
    /// planner weighs them by statistics and needs no hint.
    pub(crate) fn no_index(self) -> &'static str {
        match self {
            Dialect::Sqlite => "+",
            Dialect::Postgres => "",
        }
    }

    /// A statement that takes the lock numbered `$1` until the transaction
    /// ends, so the transactions taking it run one after another. `None`
    /// for SQLite, whose one writer already runs them so.
    pub(crate) fn xact_lock(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => Some("SELECT pg_advisory_xact_lock($1)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_reads_numbered_placeholders_with_a_question_mark() {
        let sql = "UPDATE t SET a = $2, b = '$1', c = \"x$3\" WHERE id = $1 AND d = $12";
        assert_eq!(
            Dialect::Sqlite.render(sql),
            "UPDATE t SET a = ?2, b = '$1', c = \"x$3\" WHERE id = ?1 AND d = ?12"
        );
        assert_eq!(Dialect::Postgres.render(sql), sql);
    }

    #[test]
    fn text_without_placeholders_is_not_copied() {
        assert!(matches!(
            Dialect::Sqlite.render("SELECT 1"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn membership_in_a_text_list_is_a_probe_per_element() {
        assert_eq!(
            Dialect::Sqlite.any("id", 1),
            "id IN (SELECT value FROM json_each($1))"
        );
        assert_eq!(Dialect::Postgres.any("id", 1), "id = ANY($1::text[])");
    }

    #[test]
    fn lists_expose_one_column_named_value() {
        assert_eq!(Dialect::Sqlite.list(2), "json_each($2) AS list");
        assert_eq!(
            Dialect::Postgres.list(2),
            "UNNEST($2::text[]) AS list(value)"
        );
    }

    #[test]
    fn numbered_lists_count_positions_from_one() {
        assert_eq!(
            Dialect::Sqlite.numbered_list(1),
            "(SELECT value, key + 1 AS position FROM json_each($1)) AS list"
        );
        assert_eq!(
            Dialect::Postgres.numbered_list(1),
            "UNNEST($1::text[]) WITH ORDINALITY AS list(value, position)"
        );
    }

    #[test]
    fn json_membership_reads_the_array_in_each_dialect() {
        assert_eq!(
            Dialect::Sqlite.json_array_has("c.ids", "d.id"),
            "EXISTS (SELECT 1 FROM json_each(c.ids) WHERE json_each.value = d.id)"
        );
        assert_eq!(
            Dialect::Postgres.json_array_has("c.ids", "d.id"),
            "c.ids::jsonb ? d.id"
        );
    }

    #[test]
    fn only_sqlite_needs_a_hint_to_pass_an_index_by() {
        assert_eq!(Dialect::Sqlite.no_index(), "+");
        assert_eq!(Dialect::Postgres.no_index(), "");
    }

    #[test]
    fn only_postgres_takes_a_lock_to_run_transactions_one_at_a_time() {
        assert_eq!(Dialect::Sqlite.xact_lock(), None);
        assert_eq!(
            Dialect::Postgres.xact_lock(),
            Some("SELECT pg_advisory_xact_lock($1)")
        );
    }
}
