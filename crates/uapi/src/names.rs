//! Names as a user types them: the known names closest to one that is
//! not known, for a "did you mean ...?" (Damerau-Levenshtein distance of
//! the `strsim` crate, ties broken by Jaro-Winkler similarity).

/// Up to three of `known` within a small edit distance of `name` (one
/// edit per four characters, at least one), closest first.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let bound = (name.chars().count() / 4).max(1);
    let mut near: Vec<(usize, f64, &str)> = known
        .into_iter()
        .filter(|k| *k != name)
        .map(|k| {
            let d = strsim::damerau_levenshtein(name, k);
            (d, -strsim::jaro_winkler(name, k), k)
        })
        .filter(|(d, _, _)| *d <= bound)
        .collect();
    near.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
    near.dedup_by(|a, b| a.2 == b.2);
    near.into_iter().take(3).map(|(_, _, k)| k).collect()
}

/// "; did you mean `a`, `b` or `c`?" for the [`closest`] names, or ""
/// when none is close.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let near = closest(name, known);
    match near.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [first @ .., last] => format!("; did you mean {} or {last}?", first.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_names() {
        let known = [
            "pgfault",
            "pgmajfault",
            "pswpout",
            "modelled_ns",
            "thp_fault_alloc",
        ];
        assert_eq!(closest("pgfualt", known), ["pgfault"]);
        assert_eq!(closest("modeled_ns", known), ["modelled_ns"]);
        assert_eq!(
            did_you_mean("modeled_ns", known),
            "; did you mean modelled_ns?"
        );
        assert_eq!(
            did_you_mean("fault_around_byte", ["fault_around_bytes", "read_ahead_kb"]),
            "; did you mean fault_around_bytes?"
        );
        // Nothing near: no suggestion.
        assert_eq!(did_you_mean("zzz", known), "");
        // At most three, closest first.
        let many = ["abcdefgh", "abcdefgi", "abcdefgj", "abcdefgk", "xbcdefgh"];
        assert_eq!(
            closest("abcdefgz", many),
            ["abcdefgh", "abcdefgi", "abcdefgj"]
        );
        // Short names: one edit at most (`foo` is not `op`).
        assert_eq!(closest("foo", ["op", "fo"]), ["fo"]);
        assert_eq!(
            did_you_mean("abcx", ["abcd", "abce"]),
            "; did you mean abcd or abce?"
        );
    }
}
