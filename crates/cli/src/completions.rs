//! `foliosim completions SHELL` and `foliosim man`: shell completion
//! scripts (clap_complete) and roff manual pages (clap_mangen), generated
//! from the same clap definition as the command line itself, so they never
//! fall behind it.

use std::path::Path;

use clap::CommandFactory as _;

use crate::Cli;

/// The completion script for `shell`.
pub(crate) fn completions(shell: clap_complete::Shell) -> String {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "foliosim", &mut buf);
    String::from_utf8(buf).expect("completion scripts are UTF-8")
}

/// The manual page of `foliosim` (stdout), or with `dir` one page per
/// command and subcommand (`foliosim.1`, `foliosim-run.1`,
/// `foliosim-vm-kernel-build.1`, ...), each written atomically. Returns
/// the text for stdout (empty when written to `dir`).
pub(crate) fn man(dir: Option<&Path>) -> Result<String, String> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = dir else {
        return page(&cmd);
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fn each(cmd: &clap::Command, dir: &Path, written: &mut Vec<String>) -> Result<(), String> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            each(sub, dir, written)?;
        }
        let name = clap_mangen::Man::new(cmd.clone()).get_filename();
        let path = dir.join(&name);
        crate::output::write_output(&path, &page(cmd)?, &[])
            .map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(name);
        Ok(())
    }
    let mut written = Vec::new();
    each(&cmd, dir, &mut written)?;
    foliosim_uapi::note!(
        "foliosim man: wrote {} pages to {}",
        written.len(),
        dir.display()
    );
    Ok(String::new())
}

fn page(cmd: &clap::Command) -> Result<String, String> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf).map_err(|e| e.to_string())
}
