//! The scenarios a command reads (files, or standard input for `-`), and
//! where results go: standard output (coloured only on a terminal without
//! `NO_COLOR`) or `-o FILE`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use foliosim_scenario::Source;

/// Read every scenario once, in order; a file that cannot be read is an
/// error for that file only. `-` (standard input) may be named once: a
/// second `-` is a usage error.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<Result<Source, String>>, String> {
    if paths.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err("`-` (standard input) can be named only once".into());
    }
    Ok(paths
        .iter()
        .map(|p| Source::read(p).map_err(|e| e.to_string()))
        .collect())
}

/// Whether `path` means standard input.
pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Whether the table on standard output may be coloured: a terminal, and
/// neither `NO_COLOR` (https://no-color.org) nor `CLICOLOR=0` nor
/// `TERM=dumb` (anstream's rules, which clap's own help follows too).
pub(crate) fn stdout_colour() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// Write `text` to `output` (atomically, see `output.rs`) or to standard
/// output. A reader that closed the pipe early (`| head`) is not an error.
/// `inputs` (the files read, `-` for standard input) are never replaced.
pub(crate) fn emit(output: Option<&Path>, text: &str, inputs: &[PathBuf]) -> Result<(), String> {
    match output {
        Some(p) => crate::output::write_output(p, text, inputs)
            .map_err(|e| format!("{}: {e}", p.display())),
        None => print(text),
    }
}

/// Write `text` to standard output.
pub(crate) fn print(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("writing the results to standard output: {e}"))
        }
        _ => Ok(()),
    }
}
