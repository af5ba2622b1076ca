//! The host's memory as `/proc/meminfo` states it, read in one place for
//! every engine: the simulator's memory guard, the native engine's
//! preflight, the VM engine's check of the guest's RAM and the per-worker
//! share of a sweep.

/// `MemTotal` and `MemAvailable` in bytes; None for a line the file lacks
/// (or when it cannot be read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: Option<u64>,
    pub available: Option<u64>,
}

/// Read `/proc/meminfo`.
pub fn meminfo() -> MemInfo {
    parse(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default())
}

/// The fields of a `/proc/meminfo` text (`Key:   value kB` lines).
pub fn parse(text: &str) -> MemInfo {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    MemInfo {
        total: get("MemTotal"),
        available: get("MemAvailable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_bytes_and_missing_ones() {
        let m = parse("MemTotal:       16318412 kB\nMemFree: 1 kB\nMemAvailable:    9000 kB\n");
        assert_eq!(m.total, Some(16_318_412 * 1024));
        assert_eq!(m.available, Some(9000 * 1024));
        // A kernel before 3.14 has no MemAvailable line.
        let old = parse("MemTotal: 2048 kB\nMemFree: 1024 kB\n");
        assert_eq!(old.available, None);
        assert_eq!(parse("").total, None);
    }

    #[test]
    fn this_host_has_memory() {
        assert!(meminfo().total.is_some_and(|t| t > 0));
    }
}
