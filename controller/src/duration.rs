//! Go `time.ParseDuration` text (`5s`, `1m30s`, `100ms`), used by flags and cloud.conf alike.

use std::time::Duration;

/// Parses a Go duration; the unit is required except for a plain `0`.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err("empty duration".to_owned());
    }
    if text.starts_with('-') {
        return Err(format!("invalid duration {text:?}: negative"));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_end == 0 {
            return Err(format!("invalid duration {text:?}"));
        }
        let number: f64 =
            rest[..number_end].parse().map_err(|_| format!("invalid duration {text:?}"))?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(format!("missing unit in duration {text:?} (write e.g. \"{text}s\")"));
            }
            unit => return Err(format!("unknown unit {unit:?} in duration {text:?}")),
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| format!("invalid duration {text:?}"))
}

/// Writes a duration the way Go prints simple ones (`15s`, `5m0s`, `100ms`).
pub(crate) fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        return format!("{millis}ms");
    }
    let secs = duration.as_secs();
    match (secs / 3600, (secs % 3600) / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn a_duration_without_unit_is_an_error_that_says_so() {
        let err = parse("5").unwrap_err();
        assert!(err.contains("missing unit"), "{err}");
        assert!(parse("5x").is_err());
        assert!(parse("-5s").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn format_round_trips() {
        for text in ["15s", "5m0s", "100ms", "1h0m0s"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
    }
}
