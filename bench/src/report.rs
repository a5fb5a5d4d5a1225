//! The results: measured figures (judged against the budget in full runs
//! only) and correctness checks, printed as one table or written as JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::resources::{self, Machine};
use crate::scenarios::Plan;

/// A budget line a figure is held to.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    AtLeast(f64),
    AtMost(f64),
}

impl Budget {
    fn met(self, value: f64) -> bool {
        match self {
            Budget::AtLeast(b) => value >= b,
            Budget::AtMost(b) => value <= b,
        }
    }

    fn describe(self) -> String {
        match self {
            Budget::AtLeast(b) => format!(">= {}", number(b)),
            Budget::AtMost(b) => format!("<= {}", number(b)),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: &'static str,
    pub metric: String,
    pub value: f64,
    pub unit: &'static str,
    pub budget: Option<Budget>,
    /// Whether the budget is met; absent without a budget or in quick runs.
    pub met: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
struct Meta {
    date: String,
    commit: String,
    mode: &'static str,
    synchronous: String,
    backend: &'static str,
    nodes: usize,
    machine: Machine,
}

#[derive(Debug, Serialize)]
pub struct Report {
    meta: Meta,
    rows: Vec<Row>,
    checks: Vec<Check>,
    #[serde(skip)]
    judge_budget: bool,
}

impl Report {
    pub fn new(plan: &Plan) -> Report {
        Report {
            meta: Meta {
                date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
                commit: resources::commit(&plan.sluice),
                mode: if plan.quick { "quick" } else { "full" },
                synchronous: plan.server.synchronous.clone(),
                backend: match plan.server.backend {
                    crate::server::Backend::Sqlite => "sqlite",
                    crate::server::Backend::Postgres { kafka: None, .. } => "postgres",
                    crate::server::Backend::Postgres { kafka: Some(_), .. } => "kafka",
                },
                nodes: plan.nodes,
                machine: resources::machine(),
            },
            rows: Vec::new(),
            checks: Vec::new(),
            judge_budget: !plan.quick,
        }
    }

    /// Records a figure; `budget` is judged only in full runs.
    pub fn figure(
        &mut self,
        scenario: &'static str,
        metric: impl Into<String>,
        value: f64,
        unit: &'static str,
        budget: Option<Budget>,
    ) {
        let met = budget.filter(|_| self.judge_budget).map(|b| b.met(value));
        self.rows.push(Row {
            scenario,
            metric: metric.into(),
            value,
            unit,
            budget,
            met,
        });
    }

    /// Records a correctness check and echoes it, so progress is visible.
    pub fn check(&mut self, name: impl Into<String>, passed: bool, detail: impl Into<String>) {
        let check = Check {
            name: name.into(),
            passed,
            detail: detail.into(),
        };
        let mark = if check.passed { "PASS" } else { "FAIL" };
        eprintln!("  {mark} {}: {}", check.name, check.detail);
        self.checks.push(check);
    }

    pub fn check_counts(&self) -> (usize, usize) {
        let passed = self.checks.iter().filter(|c| c.passed).count();
        (passed, self.checks.len() - passed)
    }

    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    pub fn table(&self) -> String {
        let m = &self.meta;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nSluice benchmarks ({} run) | {} | commit {} | {} cores, {} MiB, {} | storage.synchronous={} | backend {} × {} node(s)\n",
            m.mode,
            m.date,
            m.commit,
            m.machine.cores,
            m.machine.memory_mib,
            m.machine.cpu_model,
            m.synchronous,
            m.backend,
            m.nodes
        );
        let _ = writeln!(
            out,
            "| {:<10} | {:<44} | {:>14} | {:<8} | {:<14} |",
            "scenario", "metric", "value", "unit", "budget"
        );
        let _ = writeln!(
            out,
            "|{}|{}|{}|{}|{}|",
            "-".repeat(12),
            "-".repeat(46),
            "-".repeat(16),
            "-".repeat(10),
            "-".repeat(16)
        );
        for r in &self.rows {
            let budget = match (r.budget, r.met) {
                (Some(b), Some(true)) => format!("{} ok", b.describe()),
                (Some(b), Some(false)) => format!("{} MISS", b.describe()),
                (Some(b), None) => format!("({})", b.describe()),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                out,
                "| {:<10} | {:<44} | {:>14} | {:<8} | {:<14} |",
                r.scenario,
                r.metric,
                number(r.value),
                r.unit,
                budget
            );
        }
        let _ = writeln!(out, "\nChecks:");
        for c in &self.checks {
            let mark = if c.passed { "PASS" } else { "FAIL" };
            let _ = writeln!(out, "  {mark} {}: {}", c.name, c.detail);
        }
        out
    }
}

/// Human form: thousands separators for large values, 2 decimals for small.
fn number(v: f64) -> String {
    if v.abs() >= 1000.0 {
        let whole = v.round() as i64;
        let digits = whole.unsigned_abs().to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        if whole < 0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_or_rounded() {
        assert_eq!(number(152_345.4), "152,345");
        assert_eq!(number(1000.0), "1,000");
        assert_eq!(number(12.345), "12.35");
        assert_eq!(number(7.0), "7");
    }

    #[test]
    fn budgets_judge_both_directions() {
        assert!(Budget::AtLeast(10.0).met(10.0));
        assert!(!Budget::AtLeast(10.0).met(9.9));
        assert!(Budget::AtMost(25.0).met(3.0));
        assert!(!Budget::AtMost(25.0).met(26.0));
    }
}
