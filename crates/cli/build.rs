//! Link the command as a position-dependent executable on glibc targets.
//!
//! A position-independent one has the dynamic loader apply ~28,000
//! relocations at each start (reading 670 KB of `.rela.dyn` and writing
//! 390 KB of `.data.rel.ro`), which cost `foliosim --version` 100 of its
//! 303 page faults and a run's peak memory about 0.9 MiB. The library's
//! code stays position-independent (the Python module is a shared
//! object); only the final link resolves the addresses. The static guest
//! builds (musl) are left as the toolchain makes them.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
