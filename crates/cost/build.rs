//! Parse the shipped cost profiles (profiles/*.toml) when the crate is
//! built, with the crate's own parser (src/profile.rs), and write
//! `$OUT_DIR/builtin_profiles.rs`: a function that builds each of them
//! from constants. A run then prices its counters without parsing TOML,
//! which took over half the instructions of a small run (2.9 M of 5.3 M;
//! the document parse alone 1.7 M). A shipped profile that does not parse
//! fails the build with the parser's error; a test holds the built
//! profiles equal to what the parser reads at run time.

#[allow(dead_code)]
#[path = "src/profile.rs"]
mod profile;

use std::fmt::Write as _;

fn costs(out: &mut String, costs: &std::collections::BTreeMap<String, profile::Cost>) {
    out.push('[');
    for (name, c) in costs {
        let group = match &c.group {
            Some(g) => format!("Some({g:?})"),
            None => "None".to_string(),
        };
        let _ = write!(out, "({name:?}, {:?}_f64, {group}, {:?}), ", c.ns, c.source);
    }
    out.push(']');
}

fn main() {
    let mut out = String::from(
        "/// The shipped profile `name`, built from the constants the build \
         script parsed.\n\
         pub(crate) fn builtin_profile(name: &str) -> Option<Profile> {\n    match name {\n",
    );
    for (name, text) in profile::BUILTIN {
        let p = profile::Profile::parse(&format!("profiles/{name}.toml"), text)
            .unwrap_or_else(|e| panic!("shipped cost profile {name}: {e}"));
        let _ = write!(
            out,
            "        {name:?} => Some(built({:?}, {:?}, {:?}, {:?}, &",
            p.name, p.arch, p.cpu, p.description
        );
        costs(&mut out, &p.costs);
        out.push_str(", &");
        costs(&mut out, &p.waits);
        out.push_str(")),\n");
    }
    out.push_str("        _ => None,\n    }\n}\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR"))
        .join("builtin_profiles.rs");
    std::fs::write(dest, out).expect("write builtin_profiles.rs");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/profile.rs");
    println!("cargo:rerun-if-changed=../../profiles");
}
