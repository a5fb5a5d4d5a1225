//! The CPU time of the Kafka brokers running on this machine: every Java
//! process whose command line runs `kafka.Kafka` (the broker's main class),
//! so the Kafka shape's cost per event is reported apart from Sluice's and
//! PostgreSQL's. Brokers on other machines are not found.

use crate::resources::proc_stat;

/// CPU seconds every local broker has used so far; `None` when none runs.
pub fn cpu_secs() -> Option<f64> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut total = None;
    for pid in entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
    {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let is_broker = cmdline.split(|b| *b == 0).any(|arg| arg == b"kafka.Kafka");
        if let (true, Ok(stat)) = (is_broker, proc_stat(pid)) {
            *total.get_or_insert(0.0) += stat.cpu_secs();
        }
    }
    total
}
