//! Size syntax: `4096`, `"64K"`, `"64KiB"`, `"2M"`, `"16G"`, `"1T"`,
//! `"4096<<4"`.

/// Parse a size: integer bytes or a string "4096", "64K", "64KiB", "16G",
/// "2M", "4096<<4" (shift), "1T". Suffixes K/M/G/T (with optional "iB" or
/// "B", any letter case) are powers of 1024; a plain "B" means bytes.
///
/// Surrounding whitespace is ignored. Negative numbers, unknown suffixes and
/// values that do not fit in 64 bits are errors.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let text = s.trim();
    match text.split_once("<<") {
        Some((base, shift)) => {
            let base = parse_scaled(base.trim(), s)?;
            let shift: u32 = parse_digits(shift.trim())
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| format!("expected a shift count after `<<` in {s:?}"))?;
            base.checked_shl(shift)
                .filter(|v| shift < 64 && v >> shift == base)
                .ok_or_else(|| format!("size {s:?} does not fit in 64 bits"))
        }
        None => parse_scaled(text, s),
    }
}

/// A decimal number with an optional K/M/G/T suffix.
fn parse_scaled(text: &str, whole: &str) -> Result<u64, String> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!(
            "expected a size like 4096, \"64K\", \"2M\", \"16G\" or \"4096<<4\", found {whole:?}"
        ));
    }
    let shift = suffix_shift(suffix).ok_or_else(|| {
        format!("unknown size suffix {suffix:?} in {whole:?}; expected K, M, G or T, optionally followed by iB or B")
    })?;
    parse_digits(digits)
        .and_then(|v| v.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("size {whole:?} does not fit in 64 bits"))
}

fn parse_digits(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The power of two a suffix stands for (`None` for an unknown suffix).
fn suffix_shift(suffix: &str) -> Option<u32> {
    let lower = suffix.to_ascii_lowercase();
    let unit = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    match unit {
        "" if !lower.ends_with("ib") => Some(0),
        "k" => Some(10),
        "m" => Some(20),
        "g" => Some(30),
        "t" => Some(40),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn accepts_every_form() {
        let cases = [
            ("0", 0),
            ("4096", 4096),
            ("64K", 65536),
            ("64k", 65536),
            ("64KiB", 65536),
            ("64KB", 65536),
            ("2M", 2 << 20),
            ("16G", 16 << 30),
            ("1T", 1 << 40),
            ("1TiB", 1 << 40),
            ("100B", 100),
            ("4096<<4", 65536),
            ("1K << 1", 2048),
            (" 2M ", 2 << 20),
            ("1<<63", 1 << 63),
            ("18446744073709551615", u64::MAX),
            ("16777215T", 16_777_215 << 40),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_garbage() {
        let cases = [
            "",
            " ",
            "12Q",
            "-1",
            "+1",
            "K",
            "1.5M",
            "0x10",
            "1 K",
            "iB",
            "4iB",
            "1<<",
            "<<3",
            "1<<64",
            "2<<63",
            "1<<-1",
            "16777216T",
            "18446744073709551616",
            "1KK",
            "1Ki",
        ];
        for text in cases {
            assert!(parse_size(text).is_err(), "{text:?} should be rejected");
        }
    }

    #[test]
    fn errors_say_what_was_found() {
        let err = parse_size("12Q").unwrap_err();
        assert!(err.contains("\"Q\"") && err.contains("\"12Q\""), "{err}");
        assert!(parse_size("99999999T").unwrap_err().contains("64 bits"));
    }
}
