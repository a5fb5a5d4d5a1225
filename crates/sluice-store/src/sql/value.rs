//! Values crossing the SQL layer: parameters in, rows out.
//!
//! Both backends store the same few types: integers (times are unix
//! milliseconds, counters are 64-bit), text, floating point, blobs and
//! booleans (an integer in SQLite). A [`Param`] borrows what the caller
//! holds; a [`Row`] owns what the driver returned, already converted, so the
//! record mapping is written once for both.

use chrono::{DateTime, Utc};

use crate::{Result, StoreError};

/// One statement parameter. Lists bind as a JSON array in SQLite (read with
/// `json_each`) and as an array in PostgreSQL (read with `UNNEST`); see
/// [`super::Dialect::list`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Null,
    Int(i64),
    Real(f64),
    Bool(bool),
    Text(&'a str),
    Blob(&'a [u8]),
    Texts(&'a [String]),
    Ints(&'a [i64]),
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Param<'_> {
            fn from(v: $t) -> Self {
                Param::Int(i64::from(v))
            }
        }
    )*};
}
from_int!(i64, i32, u32, u16, u8);

impl From<u64> for Param<'_> {
    /// Saturating: counts and sizes never come near the bound.
    fn from(v: u64) -> Self {
        Param::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<usize> for Param<'_> {
    fn from(v: usize) -> Self {
        Param::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<f64> for Param<'_> {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(v: &'a [u8]) -> Self {
        Param::Blob(v)
    }
}

impl<'a> From<&'a [String]> for Param<'a> {
    fn from(v: &'a [String]) -> Self {
        Param::Texts(v)
    }
}

impl<'a> From<&'a Vec<String>> for Param<'a> {
    fn from(v: &'a Vec<String>) -> Self {
        Param::Texts(v)
    }
}

impl<'a> From<&'a [i64]> for Param<'a> {
    fn from(v: &'a [i64]) -> Self {
        Param::Ints(v)
    }
}

impl<'a> From<&'a Vec<i64>> for Param<'a> {
    fn from(v: &'a Vec<i64>) -> Self {
        Param::Ints(v)
    }
}

impl From<DateTime<Utc>> for Param<'_> {
    /// Times are stored as unix milliseconds.
    fn from(v: DateTime<Utc>) -> Self {
        Param::Int(v.timestamp_millis())
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

impl<'a, T: Copy + Into<Param<'a>>> From<&Option<T>> for Param<'a> {
    fn from(v: &Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Param::Null, Param::Text)
    }
}

/// A `LIMIT` bound for a caller's limit where `0` means none: both
/// dialects take a bound that large, neither takes `NULL` the same way.
pub(crate) fn limit(limit: u32) -> Param<'static> {
    Param::Int(if limit == 0 {
        i64::MAX
    } else {
        i64::from(limit)
    })
}

/// `[a, b, c]` as statement parameters.
macro_rules! args {
    ($($v:expr),* $(,)?) => {
        &[$($crate::sql::Param::from($v)),*]
    };
}
pub(crate) use args;

/// One column value as the driver returned it. Booleans arrive as integers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// One result row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    /// Column `idx` as `T`; a missing column or a value of another type is
    /// [`crate::ErrorKind::Corrupt`].
    pub(crate) fn get<T: FromValue>(&self, idx: usize) -> Result<T> {
        let value = self
            .0
            .get(idx)
            .ok_or_else(|| StoreError::internal(format!("no column {idx}")))?;
        T::from_value(value).map_err(|why| StoreError::corrupt(format!("column {idx}: {why}")))
    }

    /// Takes column `idx` out of the row without copying it (text, blobs).
    pub(crate) fn take<T: FromValue>(&mut self, idx: usize) -> Result<T> {
        let value = self
            .0
            .get_mut(idx)
            .map(|v| std::mem::replace(v, Value::Null))
            .ok_or_else(|| StoreError::internal(format!("no column {idx}")))?;
        T::from_owned(value).map_err(|why| StoreError::corrupt(format!("column {idx}: {why}")))
    }
}

/// A Rust type a column converts to.
pub(crate) trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;

    fn from_owned(v: Value) -> Result<Self, String> {
        Self::from_value(&v)
    }
}

fn mismatch(want: &str, got: &Value) -> String {
    let got = match got {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    };
    format!("expected {want}, found {got}")
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Int(i) => Ok(*i),
            other => Err(mismatch("an integer", other)),
        }
    }
}

macro_rules! from_value_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> Result<Self, String> {
                let i = i64::from_value(v)?;
                <$t>::try_from(i).map_err(|_| format!("{i} out of range"))
            }
        }
    )*};
}
from_value_int!(i32, u32, u64, usize, u16, u8);

impl FromValue for bool {
    fn from_value(v: &Value) -> Result<Self, String> {
        Ok(i64::from_value(v)? != 0)
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Real(r) => Ok(*r),
            #[expect(
                clippy::cast_precision_loss,
                reason = "SQLite hands back whole reals as integers"
            )]
            Value::Int(i) => Ok(*i as f64),
            other => Err(mismatch("a real", other)),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            other => Err(mismatch("text", other)),
        }
    }

    fn from_owned(v: Value) -> Result<Self, String> {
        match v {
            Value::Text(s) => Ok(s),
            other => Err(mismatch("text", &other)),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Blob(b) => Ok(b.clone()),
            Value::Text(s) => Ok(s.as_bytes().to_vec()),
            other => Err(mismatch("a blob", other)),
        }
    }
}

impl FromValue for DateTime<Utc> {
    fn from_value(v: &Value) -> Result<Self, String> {
        let ms = i64::from_value(v)?;
        DateTime::from_timestamp_millis(ms).ok_or_else(|| format!("timestamp {ms} ms out of range"))
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }

    fn from_owned(v: Value) -> Result<Self, String> {
        match v {
            Value::Null => Ok(None),
            other => T::from_owned(other).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_booleans_and_times_read_from_integer_columns() {
        let row = Row(vec![
            Value::Int(1),
            Value::Int(1_700_000_000_000),
            Value::Null,
        ]);
        assert!(row.get::<bool>(0).unwrap());
        assert_eq!(row.get::<u32>(0).unwrap(), 1);
        let t: DateTime<Utc> = row.get(1).unwrap();
        assert_eq!(t.timestamp_millis(), 1_700_000_000_000);
        assert_eq!(row.get::<Option<i64>>(2).unwrap(), None);
    }

    #[test]
    fn a_value_of_another_type_is_corrupt_not_a_panic() {
        let row = Row(vec![Value::Text("x".into()), Value::Int(-1)]);
        let e = row.get::<i64>(0).unwrap_err();
        assert_eq!(e.kind(), Some(crate::ErrorKind::Corrupt));
        assert!(row.get::<u32>(1).is_err(), "negative into unsigned");
        assert!(row.get::<String>(5).is_err(), "missing column");
    }

    #[test]
    fn no_limit_is_the_largest_bound() {
        assert!(matches!(limit(0), Param::Int(i64::MAX)));
        assert!(matches!(limit(7), Param::Int(7)));
    }
}
