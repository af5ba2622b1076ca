//! `foliosim`: an executable model of Linux folio-based memory management.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod calibrate;
mod completions;
mod counters;
mod inputs;
mod output;
mod plot;
mod sweep;

use clap::{Parser, Subcommand};
use foliosim_report::{render_styled, Format, Report};
use foliosim_run::{Engine, Given, Job};
use foliosim_scenario::Arch;

/// The end of the top-level `--help`.
const AFTER_HELP: &str = "\
Results go to standard output (or -o FILE), notes and errors to standard error.
Formats, provenance and the JSON shape: docs/output.md.

Exit status:
  0  success: every scenario ran and every judged expectation held
     (compare: the engines agree)
  1  an expectation failed, or compare found a disagreement
  2  a usage, input or tool error (bad option, unreadable or invalid
     scenario, a run that could not complete); in a batch the scenarios
     that ran are still reported

Colour: the table's verdicts are coloured only on a terminal; NO_COLOR
(https://no-color.org) turns colour off, CLICOLOR_FORCE=1 forces it.";

#[derive(Parser)]
#[command(
    name = "foliosim",
    version = foliosim_run::VERSION_AND_COMMIT,
    about = "An executable model of Linux folio-based memory management (Linux 6.18)",
    after_help = AFTER_HELP
)]
pub(crate) struct Cli {
    /// Print only errors on standard error: no notes, warnings or progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Also print each run's scenario, engine and duration on standard error.
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Let -o write through a symbolic link (to what it points to); without
    /// it a link at the -o path is refused.
    #[arg(long, global = true)]
    follow: bool,
    /// Let -o write into a FIFO, a device or a socket (in place); without
    /// it only regular files, `-`, /dev/stdout, /dev/stderr and /dev/null
    /// are written. A FIFO must have its reader already.
    #[arg(long, global = true)]
    to_device: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// A size like `16G` (the scenario language's size syntax).
fn size_arg(s: &str) -> Result<u64, String> {
    foliosim_scenario::parse_size(s).map_err(|e| e.to_string())
}

/// `--format`: one of the report's formats.
fn format_arg() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Format::NAMES)
        .map(|s: String| Format::from_name(&s).expect("a listed format"))
}

/// `--arch`: an architecture the model simulates.
fn arch_arg() -> impl clap::builder::TypedValueParser<Value = Arch> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Arch::ALL.map(Arch::as_str))
        .map(|s: String| Arch::from_name(&s).expect("a listed architecture"))
}

#[derive(clap::Args)]
pub(crate) struct Common {
    /// Scenario files (TOML); `-` reads one from standard input.
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Simulated architecture (overrides the scenario's `arch`).
    #[arg(long, value_parser = arch_arg())]
    arch: Option<Arch>,
    /// Override any scenario key: `fault_around_bytes=4096`,
    /// `transparent_hugepage.hugepages-64kB.enabled=always`, `step.3.len=1M`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A recording's replay: a new phase every EPOCHS epochs of the
    /// recording (as --set replay.phase_every=EPOCHS; default one phase).
    #[arg(long, value_name = "EPOCHS")]
    phase_every: Option<u64>,
    /// Output format.
    #[arg(long, value_parser = format_arg(), default_value = "table")]
    format: Format,
    /// Write the output to FILE (atomically) instead of stdout: a regular
    /// file, `-` (stdout) or /dev/null (see --follow, --to-device).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Seed for random choices without their own seed (the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Refuse a simulation whose estimated memory exceeds SIZE (like
    /// `16G`); the default is the host's available memory.
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    max_memory: Option<u64>,
    /// Run the model's invariant checker after every step (slow on large
    /// memories).
    #[arg(long)]
    check: bool,
    /// Do not judge the scenario's `[[expect]]`s (for sweeps that move
    /// counters away from them): the output has no expectations, and none
    /// can fail the run.
    #[arg(long)]
    no_expect: bool,
    /// Cost profile for the modelled time of simulated phases: a file or
    /// the name of a shipped profile (x86_64-kvm-host, arm64-neoverse).
    /// Default: the simulated architecture's shipped profile.
    #[arg(long, value_name = "FILE|NAME")]
    profile: Option<String>,
    /// Run each scenario N times (native and vm) and report per counter
    /// the mean, standard deviation, coefficient of variation, minimum and
    /// maximum; the JSON keeps every run's report and adds `repeat`
    /// (docs/output.md). `compare` holds the model to the range the N
    /// runs span (the median shown). The simulator is deterministic: `run`
    /// refuses it.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

/// `run`: the scenario options and `--ab`.
#[derive(clap::Args)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// Run each scenario twice, with KEY off (0) and on (1), and print the
    /// base-vs-patched diff of every changed counter instead of the
    /// reports; KEY=BASE,PATCHED names the two values of another key.
    #[arg(long, value_name = "KEY[=BASE,PATCHED]")]
    ab: Option<String>,
}

#[derive(clap::Args)]
struct CalibrateArgs {
    /// Directory of calibration scenarios (every *.toml in it).
    #[arg(long, default_value = "scenarios/calibrate")]
    corpus: PathBuf,
    /// Native runs per scenario; the fit uses the median.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Write the fitted profile to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The prior profile: its costs fix the ratios inside each group, the
    /// fit scales each group.
    #[arg(
        long,
        default_value = "profiles/x86_64-prior.toml",
        value_name = "FILE|NAME"
    )]
    prior: String,
    /// Name of the written profile.
    #[arg(long, default_value = "x86_64-kvm-host")]
    name: String,
    /// Phases measured natively below this many milliseconds are reported
    /// but not fitted (timer and set-up noise dominate them).
    #[arg(long, default_value_t = 1.0)]
    min_ms: f64,
    /// Also write the raw measurements (per phase: counts, every run's
    /// times) to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    save_runs: Option<PathBuf>,
    /// Fit measurements a previous --save-runs wrote instead of running
    /// the corpus (no root needed).
    #[arg(long, value_name = "FILE")]
    from_runs: Option<PathBuf>,
    /// With --from-runs: simulate the corpus again for the counts (after a
    /// model change) and keep the saved native times.
    #[arg(long, requires = "from_runs")]
    recount: bool,
    /// Shrinkage of every group's scale towards the common scale (ridge
    /// weight λ; 0 = plain NNLS). See docs/cost-model.md.
    #[arg(long, default_value_t = foliosim_cost::fit::DEFAULT_SHRINK)]
    shrink: f64,
    /// Warn when a scenario's repeats spread more than this fraction of
    /// their median ((max - min) / median).
    #[arg(long, default_value_t = 0.10)]
    max_spread: f64,
    /// Leave out the corpus files whose name starts with PREFIX
    /// (repeatable), e.g. `pagemap-`, whose costs another fit prices.
    #[arg(long, value_name = "PREFIX")]
    exclude: Vec<String>,
    /// Do not fit: print every phase's error under the cost profile
    /// PROFILE (median native time against the modelled time `foliosim
    /// run` computes), for the runs measured or read with --from-runs.
    #[arg(long, value_name = "FILE|NAME", conflicts_with = "out")]
    check: Option<String>,
    /// Fit the `pagemap` cost group instead: one cost per
    /// `sim/pagemap_*` counter from the pagemap step's own time
    /// (`native/pagemap_cpu_ns/<step>`) of the corpus's `pagemap-*.toml`;
    /// prints the fit, writes no profile. --from-runs / --save-runs read
    /// and write pagemap runs.
    #[arg(long, conflicts_with_all = ["out", "check", "recount"])]
    pagemap: bool,
    /// Where the corpus is timed: natively on the host (root; x86_64
    /// hosts), or in a kernel booted in a virtual machine (vm, with
    /// --kernel), whose prices then pace the model as that guest runs.
    #[arg(long, default_value = "native", value_parser = ["native", "vm"])]
    engine: String,
    #[command(flatten)]
    vm: VmFlags,
}

#[derive(clap::Args)]
struct NativeArgs {
    #[command(flatten)]
    common: Common,
    /// Do not count tracepoints (`tlb:tlb_flush`, `kmem:mm_page_alloc/...`,
    /// ...): perf's handler runs on every hit and adds its cost to the
    /// measured time. For timing runs; those counters are then missing.
    #[arg(long)]
    no_trace: bool,
}

/// Where and how a guest runs.
#[derive(clap::Args, Clone)]
struct VmFlags {
    /// The guest's kernel: a name from `foliosim vm kernel list` (like
    /// `6.18.35-arm64`, or `6.18.35` with --arch) or a path to an image.
    #[arg(long, value_name = "NAME|PATH")]
    kernel: Option<String>,
    /// Stop a guest that has not finished after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    timeout: u64,
    /// QEMU accelerator: kvm when the host can run the guest with it.
    #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(foliosim_vm::Accel::NAMES))]
    accel: String,
}

impl VmFlags {
    fn options(&self, arch: Option<Arch>) -> Result<foliosim_vm::VmOptions, String> {
        let kernel = self
            .kernel
            .clone()
            .ok_or("--kernel is required: `foliosim vm kernel list` shows the kernels available")?;
        Ok(foliosim_vm::VmOptions {
            kernel,
            arch,
            timeout: std::time::Duration::from_secs(self.timeout),
            accel: foliosim_vm::Accel::from_name(&self.accel).expect("a listed accelerator"),
        })
    }
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct VmArgs {
    #[command(subcommand)]
    cmd: Option<VmCmd>,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    vm: VmFlags,
}

#[derive(Subcommand)]
enum VmCmd {
    /// Guest kernels: list them, or build one from a source tree.
    #[command(subcommand)]
    Kernel(KernelCmd),
}

#[derive(Subcommand)]
enum KernelCmd {
    /// The kernels `--kernel` can name, and where they are.
    List,
    /// Build a kernel from a Linux source tree with the project's config
    /// fragments and keep it in ~/.cache/foliosim/kernels.
    Build {
        /// The Linux source tree.
        #[arg(long)]
        src: PathBuf,
        /// The kernel's architecture.
        #[arg(long, value_parser = arch_arg())]
        arch: Arch,
        /// Parallel make jobs (default: the CPUs of this machine).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
}

/// `compare`: the scenario options and the engine to compare with.
#[derive(clap::Args)]
struct CompareArgs {
    #[command(flatten)]
    common: Common,
    /// The engine the model is compared with: the host kernel (native) or
    /// a kernel booted in a virtual machine (vm, with --kernel).
    #[arg(long, default_value = "native", value_parser = ["native", "vm"])]
    engine: String,
    #[command(flatten)]
    vm: VmFlags,
    /// Compare with runs measured earlier instead of running the kernel:
    /// the JSON of `foliosim vm` or `foliosim native` (`--format json`,
    /// with or without --repeat); repeat the option to pool files. Each
    /// scenario takes the runs of its name (one comparison per kernel;
    /// of several scenarios, those without runs are left out), and the
    /// model runs on each run's machine as at the time; --set still
    /// applies, to try a knob of the model against the same runs.
    #[arg(long = "runs", value_name = "FILE")]
    runs: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate scenarios on the kernel model.
    ///
    /// Examples:
    ///   foliosim run scenarios/seed001/seq-16g.toml
    ///   foliosim run scenarios/seed001/seq-16g.toml --set fault_around_bytes=4096 --format json
    ///   foliosim run scenarios/seed003/anon-scan.toml --set transparent_hugepage.hugepages-64kB.enabled=always
    ///   foliosim run scenarios/seed000/pageout-256m.toml --set transparent_hugepage.hugepages-64kB.enabled=always \
    ///       --ab series.batch_anon_unmap
    ///   foliosim run scenarios/seed001/seq-16g.toml --ab fault_around_bytes=4096,65536
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Run a scenario over a grid of keys and write one tidy table.
    ///
    /// Each --grid key takes a list of values; the keys combine as a
    /// Cartesian product (--zip: advance together). Any scenario key can be
    /// swept (knobs, `arch`, `series.*`, `swap.0.kind`, `step.N.field`),
    /// and `folio_size` (4K, 16K, ..., 1M, 2M) sets the THP knobs of one
    /// anonymous folio size. Simulations run in parallel (--jobs); the
    /// table has a row per point, phase and value, with the columns
    ///   point, <one per grid key>, scenario, arch, engine, phase, kind, name, value, error
    /// (a failed point is one row with its error; the sweep goes on, and
    /// exits 1 at the end). Re-run with the same -o FILE, a sweep runs only
    /// the points the file lacks. Formats: csv, jsonl, arrow (Arrow IPC).
    ///
    /// Examples:
    ///   foliosim sweep scenarios/seed001/seq-16g.toml --grid 'fault_around_bytes=4096<<[0..9]' -o fa.csv
    ///   foliosim sweep scenarios/seed000/pageout-256m.toml --grid arch=x86_64,arm64 \
    ///       --grid series.batch_anon_unmap=0,1 --grid folio_size=4K,16K,64K,256K,1M,2M \
    ///       --grid swap.0.kind=file,block,zram -o pageout.csv
    ///   foliosim sweep s.toml --zip --grid step.1.size=64M,256M --grid memory=1G,2G
    ///   foliosim sweep --file sweeps/seed000-pageout.toml -o pageout.arrow
    #[command(verbatim_doc_comment)]
    Sweep(sweep::SweepArgs),
    /// Compare base and patched: the table posted to linux-mm.
    ///
    /// Report files of repeated runs (`native --repeat N --format json`),
    /// more than two files, or --label give the mmtests compare-kernels
    /// table: per value Amean, Stddev and CoeffVar per file (the first is
    /// the base), % change, and `*...%*` around a change of the mean that
    /// Welch's t-test finds significant at --level.
    ///
    /// A and B are reports (`foliosim run --format json -o a.json`); or A
    /// is a sweep table and --by KEY compares its points with KEY's first
    /// value (base) against those with its second (patched), column groups
    /// per arch (--columns: other keys), row blocks per remaining key.
    /// Columns: base, patched, change and % change (n/a where base is 0),
    /// for every counter and the modelled time `modelled_ns`; only values
    /// that changed unless --all. Text is fixed-width ASCII for a mail;
    /// --format md, csv or json.
    ///
    /// Examples:
    ///   foliosim diff vanilla.json patched.json
    ///   foliosim diff pageout.csv --by series.batch_anon_unmap
    ///   foliosim diff pageout.csv --by series.batch_anon_unmap --columns arch --format md
    ///   foliosim diff fa.csv --by fault_around_bytes=4096,65536 --all
    ///   foliosim diff never.json always.json --label never --label always
    #[command(verbatim_doc_comment)]
    Diff(sweep::DiffArgs),
    /// Run scenarios natively on the host kernel (root; x86_64 hosts).
    ///
    /// Every THP setting the scenario changes is restored afterwards, also on
    /// errors and on SIGINT/SIGTERM. Counters the host cannot provide are
    /// left out (listed on stderr), never reported as zero.
    ///
    /// Example:
    ///   sudo foliosim native scenarios/seed003/anon-scan.toml --set transparent_hugepage.hugepages-64kB.enabled=always
    #[command(verbatim_doc_comment)]
    Native(NativeArgs),
    /// Run the simulator and the host kernel on the same scenarios and
    /// print both side by side; exit 1 when they disagree.
    ///
    /// Per-process fault counters, tracepoint counts and folio histograms
    /// are compared exactly; system-wide counters are shown for information.
    /// In a phase where the model's machine reclaims globally (kswapd, or
    /// the workload's direct reclaim outside a cgroup) they are judged
    /// within 5% and allocstall_* within 25%: kswapd races the workload.
    ///
    /// Examples:
    ///   sudo foliosim compare scenarios/corpus/file-warm-4k-writes.toml
    ///   foliosim compare --engine vm --kernel 6.18.35-arm64 --repeat 5 scenarios/guest/global-reclaim-file-read.toml
    ///   foliosim vm --kernel 6.18.35-x86_64 --repeat 5 --format json -o runs.json scenarios/guest/global-reclaim-mixed.toml
    ///   foliosim compare --runs runs.json --set machine.swap_write_rate=800M scenarios/guest/global-reclaim-mixed.toml
    #[command(verbatim_doc_comment)]
    Compare(CompareArgs),
    /// Run scenarios natively in a Linux kernel booted in a virtual machine
    /// (QEMU), for any kernel and architecture; the host is not changed.
    ///
    /// The guest's RAM is the scenario's `memory` (or, when the scenario
    /// leaves it at its default, the working set and room for the kernel),
    /// its CPUs the scenario's `cpus`; the series switches the kernel's
    /// release contains are on. Output, expectations and exit codes as for
    /// `run`.
    ///
    /// Examples:
    ///   foliosim vm scenarios/seed003/anon-scan.toml --kernel 6.18.35-arm64
    ///   foliosim vm kernel list
    ///   foliosim vm kernel build --src ~/linux --arch arm64
    #[command(verbatim_doc_comment)]
    Vm(VmArgs),
    /// Record a real program, to replay it as a scenario (root; x86_64).
    ///
    /// Runs CMD and its children with THP disabled and address-space
    /// randomisation off, and records their memory-management system calls
    /// (mmap, munmap, mremap, mprotect, madvise, brk; fork, clone, exec,
    /// exit) and every page fault (address, write, thread, time) into a
    /// directory: `recording.toml`, the replay's scenario header (its
    /// [system] is the recording policy; edit or --set it like any
    /// scenario's), and `trace.fsr`, the compact trace. Every command that
    /// takes a scenario takes the directory: `run`, `native`, `vm`,
    /// `compare`, `sweep`. The directory appears only when the recording
    /// is complete.
    ///
    /// Examples:
    ///   sudo foliosim record --out xz.rec -- xz -9 -k -f big.bin
    ///   foliosim record --summary xz.rec
    ///   foliosim run xz.rec --set transparent_hugepage.hugepages-64kB.enabled=always
    ///   foliosim record --scenario xz.rec > xz-replay.toml
    #[command(verbatim_doc_comment)]
    Record(RecordArgs),
    /// Describe the host as a scenario `[system]` fragment.
    Probe,
    /// Folio sizes of a running process, per kind of mapping (root).
    ///
    /// Reads /proc/PID/maps, /proc/PID/pagemap and /proc/kpageflags and
    /// prints, for anonymous, file, shmem and other mappings, how many
    /// folios of each size hold its present pages and their share, the
    /// zero-page and swap entries: a real program's folio histogram in the
    /// buckets of a scenario's. arm64's contiguous bit is invisible there.
    ///
    /// Example:
    ///   foliosim census --pid "$(pgrep -n sqlite3)"
    #[command(verbatim_doc_comment)]
    Census {
        /// The process.
        #[arg(long)]
        pid: i32,
        /// Output format: table or json.
        #[arg(long, default_value = "table", value_parser = ["table", "json"])]
        format: String,
    },
    /// Put back what a killed native run left on the host (root).
    ///
    /// A native run restores the host itself when it ends, on a signal,
    /// and (through a supervisor process) when it is SIGKILLed. Should the
    /// run and its supervisor die together (a cgroup-wide kill, `systemctl
    /// stop`, the OOM killer), its saved state in /run/foliosim-native.saved
    /// lists what is left; every foliosim command run as root puts it back
    /// first, and this command does only that: knob values, swap areas,
    /// loop and zram devices, memory cgroups, and the work directories
    /// under --workdir of runs that are over. Exit 1 if something could
    /// not be restored (it stays listed for the next try).
    ///
    /// Example (a systemd unit that starts foliosim native):
    ///   ExecStopPost=/usr/local/bin/foliosim restore
    #[command(verbatim_doc_comment)]
    Restore {
        /// The directory native runs were given for their work files.
        #[arg(long, default_value = "/var/tmp")]
        workdir: PathBuf,
    },
    /// Fit a cost profile to native measurements (root; x86_64 hosts), or
    /// to a guest kernel's (--engine vm).
    ///
    /// Runs every scenario of the corpus natively --repeat times (median of
    /// the workload thread's CPU time per phase) and once in the model (its
    /// counts), fits the prior's group scales by non-negative least squares
    /// on relative errors, prints measured / modelled / error and the
    /// leave-one-out error per phase, and writes the profile. With
    /// --engine vm the runs are a guest's, booted in QEMU: its profile
    /// prices the model as that guest runs (under TCG, an emulated CPU).
    ///
    /// Examples:
    ///   foliosim calibrate --repeat 5 --out profiles/x86_64-kvm-host.toml
    ///   foliosim calibrate --engine vm --kernel 6.18.35-x86_64 --repeat 3 \
    ///       --exclude pagemap- --name x86_64-tcg --out profiles/x86_64-tcg.toml
    #[command(verbatim_doc_comment)]
    Calibrate(CalibrateArgs),
    /// List every counter a report can carry: its kind (per-process,
    /// system-wide, model-only, kernel-function), the engines that report
    /// it, and whether only x86 kernels have it.
    ///
    /// Examples:
    ///   foliosim counters
    ///   foliosim counters --format json | jq -r '.counters[] | select(.kind == "model-only") | .name'
    #[command(verbatim_doc_comment)]
    Counters {
        /// Output format.
        #[arg(long, value_parser = ["table", "json"], default_value = "table")]
        format: String,
    },
    /// Print a shell completion script.
    ///
    /// Examples:
    ///   foliosim completions bash > ~/.local/share/bash-completion/completions/foliosim
    ///   foliosim completions zsh > ~/.zfunc/_foliosim
    ///   foliosim completions fish > ~/.config/fish/completions/foliosim.fish
    #[command(verbatim_doc_comment)]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), or write one page per command to DIR.
    ///
    /// Examples:
    ///   foliosim man | man -l -
    ///   foliosim man -o ~/.local/share/man/man1
    #[command(verbatim_doc_comment)]
    Man {
        /// Write foliosim.1, foliosim-run.1, ... into DIR.
        #[arg(short = 'o', value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Draw a sweep's value against one grid key, or a region's folio map.
    ///
    /// A sweep plot has a line per combination of the other grid keys (and
    /// architectures); a folio map has a row per page table, a cell per
    /// page coloured by folio size, contpte blocks and PMD mappings
    /// outlined, swap entries and zero pages shown, holes blank. The
    /// picture's format comes from the -o extension: .svg or .png.
    ///
    /// Examples:
    ///   foliosim plot sweep.csv --y pgfault --x fault_around_bytes -o faults.svg
    ///   foliosim plot sweep.jsonl --y modelled_ns --x fault_around_bytes --phase measured -o time.png
    ///   foliosim run scenarios/seed000/pageout-256m.toml --set step.1.map=true --format json -o r.json
    ///   foliosim plot --map r.json --phase measured --region buf -o map.svg
    #[command(verbatim_doc_comment)]
    Plot(plot::PlotArgs),
    /// Write one self-contained HTML file (no network, pictures inline)
    /// from JSON reports and sweep tables.
    ///
    /// Per report: the scenario, its system knobs, the non-zero counters,
    /// modelled time, folio histograms, folio maps and expectations. With
    /// exactly two reports, also their difference (the first is the base,
    /// the second the patched run). Per sweep: a plot per --y value.
    ///
    /// Examples:
    ///   foliosim report base.json patched.json -o report.html
    ///   foliosim report sweep.csv --y modelled_ns --y pgfault --x fault_around_bytes -o sweep.html
    #[command(verbatim_doc_comment)]
    Report(plot::ReportArgs),
}

/// The overrides of `c` as the user gave them.
fn given(c: &Common) -> Result<Given, String> {
    let mut set = Vec::new();
    for s in &c.set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s}: expected KEY=VALUE"))?;
        set.push((k.trim().to_string(), v.trim().to_string()));
    }
    if let Some(n) = c.phase_every {
        set.push(("replay.phase_every".to_string(), n.to_string()));
    }
    Ok(Given {
        set,
        arch: c.arch,
        seed: c.seed,
    })
}

/// The simulator's options of `c`.
fn sim_options(c: &Common) -> foliosim_run::SimOptions {
    foliosim_run::SimOptions {
        check: c.check,
        profile: c.profile.clone(),
        max_memory: c.max_memory,
    }
}

/// Say how a run went (with `--verbose`), and warn when its report has
/// no phase.
fn ran(r: &Report, started: std::time::Instant) {
    let path = r
        .provenance
        .as_ref()
        .map_or("", |p| p.scenario_path.as_str());
    foliosim_uapi::detail!(
        "foliosim: {path}: scenario {} on {} ({}): {} phases in {:.2} s",
        r.scenario,
        r.engine,
        r.arch,
        r.phases.len(),
        started.elapsed().as_secs_f64()
    );
    if r.phases.is_empty() {
        foliosim_uapi::note!(
            "foliosim: warning: {path}: the scenario has no phase (no `op = \"phase\"` \
             step), so its report has no values"
        );
    }
}

/// Run `one` on every scenario; the errors of those that fail are printed
/// as they happen and the others go on. Returns the results and, when
/// some failed, the error that ends the command with exit status 2. Err:
/// a usage error (nothing ran), or the error of the only scenario.
fn run_batch<T>(
    scenarios: &[PathBuf],
    mut one: impl FnMut(&foliosim_scenario::Source) -> Result<T, String>,
) -> Result<(Vec<T>, Option<String>), String> {
    let sources = inputs::read_all(scenarios)?;
    let (mut done, mut failed) = (Vec::new(), 0);
    for src in sources {
        match src.and_then(|src| one(&src).map_err(|e| foliosim_run::in_file(&src.label, e))) {
            Ok(r) => done.push(r),
            Err(e) if scenarios.len() == 1 => return Err(e),
            Err(e) => {
                eprintln!("foliosim: {e}");
                failed += 1;
            }
        }
    }
    let failed = (failed > 0).then(|| {
        format!(
            "{failed} of {} scenarios could not run (errors above); the output holds the others",
            scenarios.len()
        )
    });
    Ok((done, failed))
}

fn cmd_run(c: &Common, engine: Engine) -> Result<bool, String> {
    let given = given(c)?;
    let ov = given.overrides();
    if !matches!(engine, Engine::Sim(_)) && c.profile.is_some() {
        return Err(
            "--profile applies to simulated runs (run, compare); a native run \
                    reports measured time (native/wall_ns, native/thread_cpu_ns)"
                .into(),
        );
    }
    if matches!(engine, Engine::Sim(_)) && c.repeat > 1 {
        return Err(format!(
            "--repeat {}: the simulator is deterministic, so every run of a scenario \
             gives the same report; repeat native or vm runs",
            c.repeat
        ));
    }
    if let Some(o) = &c.output {
        output::check_output(o, &c.scenarios)?;
    }
    let (runs, failed) = run_batch(&c.scenarios, |src| {
        let job = Job {
            source: src,
            overrides: &ov,
            expect: !c.no_expect,
            given: Some(&given),
        };
        (1..=c.repeat)
            .map(|i| {
                let started = std::time::Instant::now();
                let r = foliosim_run::run(&job, &engine).map_err(|e| match c.repeat {
                    1 => e.to_string(),
                    n => format!("run {i} of {n}: {e}"),
                })?;
                ran(&r, started);
                Ok(r)
            })
            .collect::<Result<Vec<Report>, String>>()
    })?;
    let reports: Vec<Report> = runs.into_iter().flatten().collect();
    if !reports.is_empty() {
        let text = if c.repeat > 1 {
            repeated_text(&reports, c.format)
        } else {
            let colour = c.output.is_none() && c.format == Format::Table && inputs::stdout_colour();
            render_styled(&reports, c.format, colour)
        };
        inputs::emit(c.output.as_deref(), &text, &c.scenarios)?;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(reports.iter().all(Report::expectations_ok)),
    }
}

/// The output of repeated runs (`--repeat`): their statistics.
fn repeated_text(reports: &[Report], format: Format) -> String {
    use foliosim_report::stats;
    match format {
        Format::Json => {
            let doc = stats::repeat_document(reports, foliosim_report::VERSION);
            serde_json::to_string_pretty(&doc).expect("serialisable") + "\n"
        }
        Format::Csv => stats::repeat_csv(reports),
        Format::Table => stats::repeat_table(reports),
    }
}

/// One comparison of `compare`: the table text, the JSON object,
/// agreement.
type Comparison = (String, serde_json::Value, bool);

/// The comparisons of one scenario of `compare`: one, or with --runs one
/// per kernel its kept runs came from (none when several scenarios are
/// given and it has no runs).
fn compare_one(
    a: &CompareArgs,
    sim: &foliosim_run::SimOptions,
    vm: Option<&foliosim_vm::VmOptions>,
    host: &[(String, String)],
    given: &Given,
    saved: Option<&[(PathBuf, Report)]>,
    src: &foliosim_scenario::Source,
) -> Result<Vec<Comparison>, String> {
    let c = &a.common;
    let ov = given.overrides();
    let job = Job {
        source: src,
        overrides: &ov,
        expect: !c.no_expect,
        given: Some(given),
    };
    let pairs = match saved {
        None => {
            let other = match vm {
                Some(opts) => Engine::Vm(opts.clone()),
                None => Engine::Native { trace: true },
            };
            let pair = foliosim_run::compare_repeated(&job, &other, sim, host, c.repeat as usize)
                .map_err(|e| e.to_string())?;
            vec![pair]
        }
        Some(saved) => {
            let groups = runs_of(src, saved, c.scenarios.len() == 1).map_err(|e| e.to_string())?;
            groups
                .into_iter()
                .map(|runs| foliosim_run::compare_saved(&job, sim, runs))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?
        }
    };
    Ok(pairs
        .into_iter()
        .map(|(sims, runs)| {
            let (t, mut j, o) = foliosim_report::compare::compare_runs_each(&sims, &runs);
            if let Some(prov) = &sims[0].provenance {
                j["provenance"] = prov.to_json_value();
            }
            (t, j, o)
        })
        .collect())
}

/// The runs of `--runs FILE`s: every report of every file, with its
/// file; the simulator's own reports are refused.
fn load_saved_runs(files: &[PathBuf]) -> Result<Vec<(PathBuf, Report)>, String> {
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", f.display()))?;
        let reports =
            foliosim_report::reports_from_json(&v).map_err(|e| format!("{}: {e}", f.display()))?;
        for (i, r) in reports.into_iter().enumerate() {
            if r.engine != "vm" && r.engine != "native" {
                return Err(format!(
                    "{}: reports[{i}].engine: `{}`: --runs takes runs of a kernel \
                     (`foliosim vm` or `foliosim native` with --format json)",
                    f.display(),
                    r.engine
                ));
            }
            out.push((f.clone(), r));
        }
    }
    Ok(out)
}

/// The saved runs of the scenario of `src` (by its name), grouped by
/// engine and kernel in the order the files give them; a scenario without
/// runs is an error when it is the only one (`alone`), else skipped with a
/// note.
fn runs_of(
    src: &foliosim_scenario::Source,
    saved: &[(PathBuf, Report)],
    alone: bool,
) -> Result<Vec<Vec<Report>>, foliosim_run::RunError> {
    let usage = foliosim_run::RunError::Usage;
    let name = src.parse(&[]).map_err(|e| usage(e.to_string()))?.name;
    let mine: Vec<&(PathBuf, Report)> = saved.iter().filter(|(_, r)| r.scenario == name).collect();
    let kernel = |r: &Report| {
        let k = r.provenance.as_ref().and_then(|p| p.kernel.clone());
        match k {
            Some((name, release)) => format!("{} {name} ({release})", r.engine),
            None => format!("{} ({})", r.engine, r.arch),
        }
    };
    if mine.is_empty() {
        let names: std::collections::BTreeSet<&str> =
            saved.iter().map(|(_, r)| r.scenario.as_str()).collect();
        let why = format!(
            "--runs: no run of scenario `{name}` (the files hold runs of {})",
            names.into_iter().collect::<Vec<_>>().join(", ")
        );
        if alone {
            return Err(usage(why));
        }
        foliosim_uapi::note!("foliosim: {}: {why}; left out", src.label);
        return Ok(Vec::new());
    }
    let mut groups: Vec<(String, Vec<Report>)> = Vec::new();
    for (_, r) in mine {
        let k = kernel(r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, runs)) => runs.push(r.clone()),
            None => groups.push((k, vec![r.clone()])),
        }
    }
    Ok(groups.into_iter().map(|(_, runs)| runs).collect())
}

fn cmd_compare(a: &CompareArgs) -> Result<bool, String> {
    let c = &a.common;
    let given = given(c)?;
    let saved = match a.runs.is_empty() {
        true => None,
        false => {
            if c.repeat > 1 {
                return Err("--repeat: --runs compares with runs already measured".into());
            }
            if a.vm.kernel.is_some() || c.arch.is_some() {
                return Err(
                    "--runs: the runs name their kernel and architecture; leave out --kernel \
                     and --arch"
                        .into(),
                );
            }
            Some(load_saved_runs(&a.runs)?)
        }
    };
    let vm = match a.engine.as_str() {
        "vm" if saved.is_none() => Some(a.vm.options(c.arch)?),
        _ => None,
    };
    let host = match vm {
        None if saved.is_some() => Vec::new(),
        None => {
            foliosim_native::probe_overrides(&foliosim_native::NativeOptions::default().workdir)
        }
        Some(_) => Vec::new(),
    };
    let sim = sim_options(c);
    // The kept runs are inputs too: -o never replaces one.
    let inputs: Vec<PathBuf> = c.scenarios.iter().chain(&a.runs).cloned().collect();
    if let Some(o) = &c.output {
        output::check_output(o, &inputs)?;
    }
    let (done, failed) = run_batch(&c.scenarios, |src| {
        compare_one(a, &sim, vm.as_ref(), &host, &given, saved.as_deref(), src)
    })?;
    let done: Vec<Comparison> = done.into_iter().flatten().collect();
    if saved.is_some() && done.is_empty() && failed.is_none() {
        return Err("--runs: the files hold no run of the scenarios given".into());
    }
    if !done.is_empty() {
        let out = match c.format {
            Format::Json => {
                let list: Vec<serde_json::Value> = done.iter().map(|d| d.1.clone()).collect();
                let doc = foliosim_report::compare::json_document(&list, foliosim_report::VERSION);
                serde_json::to_string_pretty(&doc).expect("serialisable") + "\n"
            }
            Format::Csv => {
                let list: Vec<serde_json::Value> = done.iter().map(|d| d.1.clone()).collect();
                foliosim_report::compare::csv(&list)
            }
            Format::Table => done.iter().map(|d| d.0.as_str()).collect(),
        };
        inputs::emit(c.output.as_deref(), &out, &inputs)?;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(done.iter().all(|d| d.2)),
    }
}

fn cmd_vm(a: &VmArgs) -> Result<bool, String> {
    match &a.cmd {
        Some(VmCmd::Kernel(KernelCmd::List)) => {
            let list = foliosim_vm::kernels::list();
            if list.is_empty() {
                let dirs: Vec<String> = foliosim_vm::kernels::search_dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect();
                println!(
                    "no kernels in {}; build one with `foliosim vm kernel build --src \
                     LINUX_SOURCE --arch ARCH`",
                    dirs.join(", ")
                );
            }
            let mut seen = std::collections::BTreeSet::new();
            for (dir, k) in list {
                match k {
                    Ok(k) => {
                        // The first folder of a name is the one `--kernel`
                        // finds.
                        let shadowed = !seen.insert(k.name.clone());
                        let release = if k.release.is_empty() {
                            "?"
                        } else {
                            &k.release
                        };
                        println!(
                            "{:<20} {:<7} Linux {:<10} {}{}",
                            k.name,
                            k.arch.as_str(),
                            release,
                            dir.display(),
                            if shadowed {
                                "  (shadowed by the one above)"
                            } else {
                                ""
                            }
                        )
                    }
                    Err(e) => println!("{:<20} (unusable: {e})", dir.display()),
                }
            }
            Ok(true)
        }
        Some(VmCmd::Kernel(KernelCmd::Build { src, arch, jobs })) => {
            let jobs = jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            });
            let k = foliosim_vm::kernels::build(src, *arch, jobs, &|l| {
                foliosim_uapi::note!("foliosim vm kernel build: {l}")
            })?;
            println!(
                "built {} (Linux {}): {}",
                k.name,
                k.release,
                k.image.display()
            );
            Ok(true)
        }
        None => {
            let opts = a.vm.options(a.common.arch)?;
            cmd_run(&a.common, Engine::Vm(opts))
        }
    }
}

/// `foliosim record`.
#[derive(clap::Args, Debug)]
struct RecordArgs {
    /// The recording directory to create (default: CMD's name and `.rec`).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// After recording, run CMD again without recording and report the
    /// overhead (CMD must be safe to run twice).
    #[arg(long)]
    overhead: bool,
    /// Also record later writes, epoch by epoch (MS milliseconds, 100
    /// when not given): every epoch the recorder write-protects the pages
    /// written since the last, so that the first write to each in the
    /// next epoch is recorded. Without it, first touches only. It costs a
    /// fault per written page per epoch: up to 4x the wall time of a
    /// program that writes a large working set all the time (xz -9).
    #[arg(long, value_name = "MS", num_args = 0..=1, default_missing_value = "100")]
    epoch: Option<u64>,
    /// Run the recorder and the program on these CPUs only (a
    /// comma-separated list, like `0`): a stop of the program wakes the
    /// recorder on the same CPU, which on hosts where waking another CPU
    /// is dear (VMs) makes a program of many small reads and writes
    /// several times faster to record (SQLite: docs/benchmarks.md); a
    /// multi-threaded program then shares those CPUs.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    cpus: Option<Vec<usize>>,
    /// Describe the recording directory DIR instead of recording.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "overhead", "scenario"])]
    summary: Option<PathBuf>,
    /// Print the replay scenario of the recording directory DIR.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "overhead"])]
    scenario: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

fn cmd_record(a: &RecordArgs) -> Result<bool, String> {
    if let Some(dir) = &a.summary {
        let s = foliosim_recording::summary(dir).map_err(|e| e.to_string())?;
        return inputs::print(&s).map(|_| true);
    }
    if let Some(dir) = &a.scenario {
        let src = foliosim_scenario::Source::recording(dir).map_err(|e| e.to_string())?;
        return inputs::print(&src.text).map(|_| true);
    }
    let Some(prog) = a.command.first() else {
        return Err(
            "record: give the program after `--` (foliosim record -- CMD ARGS...), \
                    or --summary DIR"
                .into(),
        );
    };
    let out = a.out.clone().unwrap_or_else(|| {
        let name = Path::new(prog)
            .file_name()
            .map_or_else(|| "program".into(), |n| n.to_string_lossy().into_owned());
        PathBuf::from(format!("{name}.rec"))
    });
    let opts = foliosim_native::record::RecordOptions {
        out: out.clone(),
        command: a.command.clone(),
        overhead: a.overhead,
        progress: true,
        epoch_ms: a.epoch.unwrap_or(0),
        cpus: a.cpus.clone(),
    };
    let r = foliosim_native::record::record(&opts).map_err(|e| match e {
        foliosim_native::NativeError::Refused(why) => format!("record: {why}"),
        e => format!("record: {e}"),
    })?;
    let m = &r.meta;
    let mut line = format!(
        "recorded {} page faults of {} processes ({} threads) in {:.3} s into {} \
         ({} bytes)",
        r.faults,
        r.processes,
        r.threads,
        m.wall_ns as f64 / 1e9,
        out.display(),
        r.trace_bytes
    );
    if m.plain_wall_ns > 0 {
        line += &format!(
            "; without recording {:.3} s ({:.2}x)",
            m.plain_wall_ns as f64 / 1e9,
            m.wall_ns as f64 / m.plain_wall_ns as f64
        );
    }
    println!("{line}");
    if m.lost_faults > 0 {
        foliosim_uapi::note!(
            "foliosim record: {} fault events were lost: the recording is incomplete",
            m.lost_faults
        );
    }
    if m.status & 0x7f != 0 {
        foliosim_uapi::note!(
            "foliosim record: the program was killed by signal {}; the recording replays \
             up to that point",
            m.status & 0x7f
        );
    }
    Ok(true)
}

/// Run the command `cli` names.
fn dispatch(cli: &Cli) -> Result<bool, String> {
    match &cli.cmd {
        Cmd::Run(a) => match &a.ab {
            Some(_) if a.common.repeat > 1 => {
                Err("--repeat: the simulator is deterministic; repeat native or vm runs".into())
            }
            Some(ab) => sweep::run_ab(&a.common, ab),
            None => cmd_run(&a.common, Engine::Sim(sim_options(&a.common))),
        },
        Cmd::Sweep(a) => sweep::cmd_sweep(a),
        Cmd::Diff(a) => sweep::cmd_diff(a),
        Cmd::Native(a) => cmd_run(&a.common, Engine::Native { trace: !a.no_trace }),
        Cmd::Restore { workdir } => cmd_restore(workdir),
        Cmd::Record(a) => cmd_record(a),
        Cmd::Census { pid, format } => foliosim_native::census::census(*pid)
            .map_err(|e| e.to_string())
            .and_then(|c| match format.as_str() {
                // {"pid": P, "kinds": {"anon": {"4kB": N, ...}, ...}}: the
                // keys of a scenario's folio histogram and pagemap summary.
                "json" => inputs::print(&format!(
                    "{:#}\n",
                    serde_json::json!({"pid": c.pid, "kinds": c.kinds})
                )),
                _ => inputs::print(&c.text()),
            })
            .map(|_| true),
        Cmd::Probe => inputs::print(&foliosim_native::probe(
            &foliosim_native::NativeOptions::default().workdir,
        ))
        .map(|_| true),
        Cmd::Compare(c) => cmd_compare(c),
        Cmd::Vm(a) => cmd_vm(a),
        Cmd::Calibrate(a) => calibrate::cmd_calibrate(a),
        Cmd::Counters { format } => Format::from_name(format)
            .ok_or_else(|| format!("--format {format}"))
            .and_then(counters::render)
            .and_then(|t| inputs::print(&t))
            .map(|_| true),
        Cmd::Completions { shell } => {
            inputs::print(&completions::completions(*shell)).map(|_| true)
        }
        Cmd::Plot(a) => plot::cmd_plot(a),
        Cmd::Report(a) => plot::cmd_report(a),
        Cmd::Man { out } => completions::man(out.as_deref())
            .and_then(|t| inputs::print(&t))
            .map(|_| true),
    }
}

/// `foliosim restore`.
fn cmd_restore(workdir: &Path) -> Result<bool, String> {
    match foliosim_native::restore_stale(workdir, true) {
        Ok(Some(r)) if r.restored.is_empty() && r.failed.is_empty() => {
            eprintln!("foliosim: nothing to restore");
            Ok(true)
        }
        Ok(Some(r)) => {
            for what in &r.restored {
                eprintln!("foliosim: restored {what}");
            }
            for what in &r.failed {
                eprintln!("foliosim: could not restore: {what}");
            }
            Ok(r.failed.is_empty())
        }
        Ok(None) => {
            eprintln!("foliosim: a native run is in progress; it restores the host itself");
            Ok(true)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Before any command: put back what a killed native run left (see
/// `foliosim restore`), or say that it is left.
fn restore_stale_first(cmd: &Cmd) {
    if matches!(cmd, Cmd::Restore { .. }) {
        return;
    }
    let workdir = foliosim_native::NativeOptions::default().workdir;
    match foliosim_native::restore_stale(&workdir, false) {
        Ok(Some(r)) => r.note("foliosim"),
        Ok(None) => {}
        Err(e) => foliosim_uapi::note!("foliosim: note: {e}"),
    }
}

fn main() -> ExitCode {
    // The init process of a guest that `foliosim vm` booted.
    if foliosim_run::guest::is_guest_init() {
        foliosim_run::guest::main();
    }
    let cli = Cli::parse();
    output::set_reach(output::Reach {
        follow: cli.follow,
        to_device: cli.to_device,
    });
    foliosim_uapi::diag::set_verbosity(if cli.quiet {
        foliosim_uapi::diag::Verbosity::Quiet
    } else if cli.verbose {
        foliosim_uapi::diag::Verbosity::Verbose
    } else {
        foliosim_uapi::diag::Verbosity::Normal
    });
    restore_stale_first(&cli.cmd);
    // A panic (a foliosim bug) is a tool error, exit status 2, like any
    // other; the default hook has printed its message.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(&cli)))
        .unwrap_or_else(|_| Err("internal error (a foliosim bug; its message is above)".into()));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            match cli.cmd {
                Cmd::Compare(_) => eprintln!("foliosim: the engines disagree"),
                _ => eprintln!("foliosim: some expectations were not met"),
            }
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("foliosim: {e}");
            ExitCode::from(2)
        }
    }
}
