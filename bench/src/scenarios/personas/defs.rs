//! The definitions the personas scenario creates: 10 computed traits and 20
//! audiences (windows, counts, NOT, nesting) over the workload's events.

use serde_json::{Value, json};

const E: &str = "Order Completed";

/// Ten computed traits, one of each kind and a few variants.
pub fn traits() -> Vec<Value> {
    vec![
        json!({"kind": "counter", "event": E}),
        json!({"kind": "sum", "event": E, "property": "revenue"}),
        json!({"kind": "avg", "event": E, "property": "revenue"}),
        json!({"kind": "max", "event": E, "property": "revenue", "window": {"days": 30}}),
        json!({"kind": "most_frequent", "event": E, "property": "currency"}),
        json!({"kind": "first", "event": E, "property": "orderId"}),
        json!({"kind": "last", "event": E, "property": "coupon"}),
        json!({"kind": "unique_list", "event": E, "property": "currency"}),
        json!({"kind": "unique_count", "event": E, "property": "orderId", "window": {"hours": 24}}),
        json!({"kind": "counter", "event": E, "where": [{"property": "revenue", "op": "gt", "value": 100}]}),
    ]
}

/// Twenty audiences, `bench_audience_0` … `_19`; every fifth refers to an
/// earlier one.
pub fn audiences() -> Vec<Value> {
    (0..20)
        .map(|i| {
            let condition = match i % 5 {
                0 => json!({"performed": {"event": E, "count": {"at_least": i / 5 + 1},
                                          "window": {"days": 30}}}),
                1 => json!({"not": {"performed": {"event": "Refund Requested", "window": {"days": 7}}}}),
                2 => json!({"and": [
                    {"performed": {"event": E, "count": {"exactly": 2}}},
                    {"not": {"trait": {"key": "plan", "op": "equals", "value": "pro"}}},
                ]}),
                3 => json!({"or": [
                    {"performed": {"event": E, "count": {"at_most": 3}, "window": {"hours": 24},
                                   "where": [{"property": "currency", "op": "equals", "value": "USD"}]}},
                    {"not": {"performed": {"type": "page"}}},
                ]}),
                _ => json!({"and": [
                    {"audience": format!("bench_audience_{}", i - 4)},
                    {"not": {"audience": format!("bench_audience_{}", i - 3)}},
                    {"performed": {"event": E, "window": {"days": 1}}},
                ]}),
            };
            json!({"name": format!("bench audience {i}"), "definition": {"condition": condition}})
        })
        .collect()
}
