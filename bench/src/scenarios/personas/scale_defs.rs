//! The definitions of the personas-scale scenario: a realistic mix where
//! most definitions read one of 1,000 other events, a few read the
//! workload's `Order Completed`, and a few hold for everybody.

use serde_json::{Value, json};

/// Definitions reading the workload's event: one in 1,000, as many as
/// read each of the other event names.
const ORDERS_EVERY: usize = 1000;
/// Definitions holding for a person with nothing: one in 1,000.
const EVERYBODY_EVERY: usize = 1000;
/// Other event names the rest read.
const OTHER_EVENTS: usize = 1000;

fn kind(i: usize) -> Kind {
    if i.is_multiple_of(ORDERS_EVERY) {
        Kind::Orders
    } else if i % EVERYBODY_EVERY == 1 {
        Kind::Everybody
    } else {
        Kind::Other
    }
}

enum Kind {
    Orders,
    Everybody,
    Other,
}

/// Definition `i`: the admin path and the body (key `s{i}`, unconnected).
pub fn definition(i: usize) -> (&'static str, Value) {
    const T: &str = "/computed-traits";
    const A: &str = "/audiences";
    let key = format!("s{i}");
    let name = format!("scale {i}");
    let other = format!("Event {}", i % OTHER_EVENTS);
    let (path, def) = match kind(i) {
        Kind::Orders => match (i / ORDERS_EVERY) % 3 {
            0 => (T, json!({"kind": "counter", "event": "Order Completed"})),
            1 => (
                T,
                json!({"kind": "sum", "event": "Order Completed", "property": "revenue"}),
            ),
            _ => (
                A,
                json!({"condition": {"performed": {"event": "Order Completed",
                    "count": {"at_least": 3}, "window": {"days": 30}}}}),
            ),
        },
        Kind::Everybody => (
            A,
            json!({"condition": {"not_performed": {"event": other}}, "include_anonymous": true}),
        ),
        Kind::Other => match i % 6 {
            0 => (T, json!({"kind": "counter", "event": other})),
            1 => (
                T,
                json!({"kind": "sum", "event": other, "property": "value"}),
            ),
            2 => (
                T,
                json!({"kind": "unique_count", "event": other, "property": "sku",
                       "window": {"days": 7}}),
            ),
            3 => (
                A,
                json!({"condition": {"performed": {"event": other, "count": {"at_least": 2},
                                                   "window": {"days": 30}}}}),
            ),
            4 => (
                A,
                json!({"condition": {"and": [{"performed": {"event": other}},
                    {"trait": {"key": "plan", "op": "equals", "value": "pro"}}]}}),
            ),
            _ if matches!(kind(i - 5), Kind::Other) => (
                A,
                json!({"condition": {"computed_trait": {"key": format!("s{}", i - 5),
                                                        "op": "gt", "value": 2}}}),
            ),
            _ => (A, json!({"condition": {"performed": {"event": other}}})),
        },
    };
    (path, json!({"name": name, "key": key, "definition": def}))
}
