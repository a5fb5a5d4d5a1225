//! Integration tests of the SQLite backend.

mod sqlite;
