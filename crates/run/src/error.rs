//! [`RunError`]: why a run produced no report, by kind, with the message
//! the command line prints.

use std::fmt;

/// Why a run produced no report. Every kind carries the message, which
/// names the scenario file ([`in_file`]); `Display` prints it as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// Bad input: the scenario, an override, an option, a cost profile.
    Usage(String),
    /// The scenario asks for something the engine does not model or
    /// support.
    Unsupported(String),
    /// The workload ended as the kernel ends it: a signal (SIGSEGV,
    /// SIGBUS), an OOM kill, a system call failing.
    Killed(String),
    /// A broken invariant or a panic in the model: a foliosim bug.
    Invariant(String),
    /// The host cannot run it: not enough memory, no root, a host
    /// setting, a tool or file missing, an operation of the engine
    /// failing.
    Host(String),
    /// The guest kernel did not bring back a result: it panicked, hung,
    /// stopped early, or its run failed there.
    Guest(String),
}

impl RunError {
    /// Every kind's name, as [`RunError::kind`] spells it.
    pub const KINDS: [&'static str; 6] = [
        "usage",
        "unsupported",
        "killed",
        "invariant",
        "host",
        "guest",
    ];

    /// The kind's name: `usage`, `unsupported`, `killed`, `invariant`,
    /// `host` or `guest`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::Usage(_) => "usage",
            RunError::Unsupported(_) => "unsupported",
            RunError::Killed(_) => "killed",
            RunError::Invariant(_) => "invariant",
            RunError::Host(_) => "host",
            RunError::Guest(_) => "guest",
        }
    }

    /// The error of kind `kind` (a name of [`RunError::KINDS`]; any other
    /// is `Guest`) with `message`.
    pub fn of_kind(kind: &str, message: String) -> RunError {
        match kind {
            "usage" => RunError::Usage(message),
            "unsupported" => RunError::Unsupported(message),
            "killed" => RunError::Killed(message),
            "invariant" => RunError::Invariant(message),
            "host" => RunError::Host(message),
            _ => RunError::Guest(message),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        match self {
            RunError::Usage(m)
            | RunError::Unsupported(m)
            | RunError::Killed(m)
            | RunError::Invariant(m)
            | RunError::Host(m)
            | RunError::Guest(m) => m,
        }
    }

    /// A simulator error of scenario `label`.
    pub(crate) fn from_sim(label: &str, e: foliosim_sim::SimError) -> RunError {
        use foliosim_sim::SimError as S;
        let msg = in_file(label, e.to_string());
        match e {
            S::Unsupported { .. } => RunError::Unsupported(msg),
            S::Killed { .. } | S::Syscall { .. } => RunError::Killed(msg),
            S::Invariant { .. } => RunError::Invariant(msg),
            S::TooBig { .. } | S::HostRefused { .. } => RunError::Host(msg),
        }
    }

    /// A panic in the model while simulating scenario `label`: a limit of
    /// the model is unsupported, anything else a bug.
    pub(crate) fn from_panic(label: &str, p: foliosim_sim::Panicked) -> RunError {
        let msg = in_file(label, p.message);
        if p.limit {
            RunError::Unsupported(msg)
        } else {
            RunError::Invariant(msg)
        }
    }

    /// A native engine error of scenario `label`.
    pub(crate) fn from_native(label: &str, e: foliosim_native::NativeError) -> RunError {
        RunError::of_kind(native_kind(&e), in_file(label, e.to_string()))
    }

    /// A VM engine error of scenario `label`: the guest's own run keeps
    /// the kind it had there.
    pub(crate) fn from_vm(label: &str, e: foliosim_vm::VmError) -> RunError {
        use foliosim_vm::VmError as V;
        let msg = in_file(label, e.to_string());
        match e {
            V::Host(_) => RunError::Host(msg),
            V::Guest(_) => RunError::Guest(msg),
            V::Run { kind, .. } => match RunError::of_kind(&kind, String::new()) {
                RunError::Unsupported(_) => RunError::Unsupported(msg),
                RunError::Killed(_) => RunError::Killed(msg),
                RunError::Usage(_) => RunError::Usage(msg),
                RunError::Invariant(_) => RunError::Invariant(msg),
                RunError::Host(_) | RunError::Guest(_) => RunError::Guest(msg),
            },
        }
    }
}

/// The kind of a native engine error.
pub(crate) fn native_kind(e: &foliosim_native::NativeError) -> &'static str {
    use foliosim_native::NativeError as N;
    match e {
        N::Unsupported { .. } => "unsupported",
        N::Killed { .. } => "killed",
        N::Refused(_) | N::Io { .. } | N::Changed(_) => "host",
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for RunError {}

/// An error of the run of scenario `label`, naming the file once: errors
/// that point into the file already start with its label.
pub fn in_file(label: &str, e: String) -> String {
    if e.starts_with(&format!("{label}:")) {
        e
    } else {
        format!("{label}: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_is_named_once() {
        assert_eq!(in_file("a.toml", "boom".into()), "a.toml: boom");
        assert_eq!(in_file("a.toml", "a.toml:3:1: x".into()), "a.toml:3:1: x");
        // A label that only starts another file's name is not that file.
        assert_eq!(in_file("a", "a.toml:3:1: x".into()), "a: a.toml:3:1: x");
    }

    #[test]
    fn kinds_round_trip_by_name() {
        for k in RunError::KINDS {
            let e = RunError::of_kind(k, "m".into());
            assert_eq!(e.kind(), k);
            assert_eq!(e.to_string(), "m");
        }
        assert_eq!(RunError::of_kind("other", "m".into()).kind(), "guest");
    }
}
