//! Short random step sequences on a small simulated machine, with the
//! invariant checker after every step: each byte pair picks a step and its
//! parameters, the sequence becomes a scenario, and the run must end in a
//! report or a modelled outcome (an error value), never a panic or a
//! broken invariant.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;

const SIZES: [&str; 4] = ["64K", "1M", "2M", "4M"];
const ADVICE: [&str; 7] = [
    "dontneed", "pageout", "cold", "free", "hugepage", "nohugepage", "sequential",
];
const MTHP: [&str; 4] = ["16", "64", "128", "2048"];

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let arch = if data[0] & 1 == 0 { "x86_64" } else { "arm64" };
    let mut s = format!(
        "[system]\narch = \"{arch}\"\nmemory = \"64M\"\n\
         transparent_hugepage.enabled = \"{}\"\n\
         transparent_hugepage.hugepages-{}kB.enabled = \"always\"\n\
         lru_gen.enabled = {}\n\
         machine.swap_write_rate = \"{}\"\n\
         [[system.swap]]\nkind = \"{}\"\nsize = \"16M\"\n\
         [[file]]\nname = \"f\"\nsize = \"4M\"\nfill = \"write\"\n",
        ["always", "madvise", "never"][(data[0] as usize >> 1) % 3],
        MTHP[(data[0] as usize >> 3) % 4],
        data[0] >> 7,
        // Swap writes that end at once, or queue on a slow or fast device.
        ["0", "40M", "4G"][data[data.len() - 1] as usize % 3],
        ["file", "block", "zram"][(data[0] as usize >> 5) % 3],
    );
    let mut regions = 0usize;
    for (i, pair) in data[1..].chunks(2).take(40).enumerate() {
        let (a, b) = (pair[0] as usize, *pair.get(1).unwrap_or(&0) as usize);
        let region = format!("r{}", b % regions.max(1));
        let step = match a % 8 {
            _ if regions == 0 || a % 8 == 0 => {
                regions += 1;
                let kind = match b % 3 {
                    0 => "kind = \"anon\"".to_string(),
                    1 => "kind = \"file\"\nfile = \"f\"".to_string(),
                    _ => "kind = \"shmem\"\nshared = true".to_string(),
                };
                format!(
                    "op = \"mmap\"\nregion = \"r{}\"\n{kind}\nsize = \"{}\"",
                    regions - 1,
                    SIZES[(b >> 2) % 4]
                )
            }
            1 | 2 => format!(
                "op = \"touch\"\nregion = \"{region}\"\naccess = \"{}\"",
                ["read", "write", "write-zero"][b % 3]
            ),
            3 => format!(
                "op = \"madvise\"\nregion = \"{region}\"\nadvice = \"{}\"",
                ADVICE[b % ADVICE.len()]
            ),
            4 => "op = \"fork\"\n[[step.child]]\nop = \"touch\"\nregion = \"r0\"\naccess = \"write\"".into(),
            5 => "op = \"wait\"".into(),
            6 => format!("op = \"phase\"\nname = \"p{i}\""),
            _ => format!("op = \"munmap\"\nregion = \"{region}\"\nlen = \"64K\""),
        };
        let _ = write!(s, "[[step]]\n{step}\n");
    }
    let Ok(sc) = foliosim_scenario::parse_str("fuzz.toml", &s, &[]) else {
        return;
    };
    let opts = foliosim_sim::RunOptions {
        check: true,
        ..Default::default()
    };
    if let Err(foliosim_sim::SimError::Invariant { at, what }) = foliosim_sim::run(&sc, opts) {
        panic!("invariant broken at {at}: {what}\n{s}");
    }
});
