//! When a Keystone token is renewed: once less than half of the lifetime it was issued with is
//! left, and at most 10 minutes (osauth's margin) before it expires. A 5-minute token is used for
//! 2.5 minutes, a 1-hour one for 50 (as osauth would). Pure: the clock is an argument.
//!
//! See: issue 36 (osauth 0.5 renews a token once fewer than 10 minutes are left, so a token
//! issued for less than that was never reused: one login before every request).

use std::time::{Duration, Instant};

use jiff::Timestamp;

/// The earliest a token is renewed before it expires (osauth's `TOKEN_MIN_VALIDITY`).
const MAX_MARGIN: Duration = Duration::from_secs(600);

/// What Keystone says of a token's time (`issued_at`, `expires_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    /// When it was issued, by Keystone's clock (always sent by Keystone v3).
    pub(crate) issued_at: Option<Timestamp>,
    /// When it expires, by Keystone's clock.
    pub(crate) expires_at: Timestamp,
}

/// How long a token received when our wall clock said `now` lives. Read on Keystone's clock
/// alone (`issued_at` to `expires_at`), so a clock here that is off changes nothing; without
/// `issued_at`, it is what our clock says is left.
pub(crate) fn lifetime(validity: Validity, now: Timestamp) -> Duration {
    let issued = validity.issued_at.unwrap_or(now);
    Duration::try_from(validity.expires_at.duration_since(issued)).unwrap_or(Duration::ZERO)
}

/// When to renew a token received at `received` (`now` by the wall clock, at that moment).
/// `previous` is the expiry of the token it replaces, if any.
pub(crate) fn renew_at(
    validity: Validity,
    received: Instant,
    now: Timestamp,
    previous: Option<Timestamp>,
) -> Instant {
    let lifetime = lifetime(validity, now);
    // A token got by a token login expires with the token it came from: renewing it again
    // gains nothing, so it is used until it expires or is refused.
    if previous.is_some_and(|before| validity.expires_at <= before) {
        return received + lifetime;
    }
    received + (lifetime - (lifetime / 2).min(MAX_MARGIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    /// A token issued at `now` for `lifetime`, and `now`.
    fn issued_for(lifetime: Duration) -> (Validity, Timestamp) {
        let now: Timestamp = "2026-05-01T12:00:00.123456Z".parse().unwrap();
        let expires_at = now + jiff::SignedDuration::try_from(lifetime).unwrap();
        (Validity { issued_at: Some(now), expires_at }, now)
    }

    #[test]
    fn a_five_minute_token_is_used_for_half_its_life() {
        let received = Instant::now();
        let (validity, now) = issued_for(5 * MINUTE);
        let at = renew_at(validity, received, now, None);
        assert_eq!(at, received + MINUTE * 5 / 2);
    }

    #[test]
    fn a_long_token_is_renewed_ten_minutes_before_it_expires_as_osauth_does() {
        let received = Instant::now();
        for (lifetime, used_for) in [(60, 50), (20, 10), (24 * 60, 24 * 60 - 10)] {
            let (validity, now) = issued_for(lifetime * MINUTE);
            let at = renew_at(validity, received, now, None);
            assert_eq!(at, received + used_for * MINUTE, "a {lifetime}-minute token");
        }
        let (validity, now) = issued_for(12 * MINUTE);
        assert_eq!(renew_at(validity, received, now, None), received + 6 * MINUTE);
    }

    #[test]
    fn a_clock_here_that_is_off_does_not_change_the_lifetime() {
        let received = Instant::now();
        let (validity, now) = issued_for(5 * MINUTE);
        for skew in [-3600, -100, 100, 3600] {
            let ours = now + jiff::SignedDuration::from_secs(skew);
            assert_eq!(renew_at(validity, received, ours, None), received + MINUTE * 5 / 2);
        }
    }

    #[test]
    fn without_issued_at_the_lifetime_is_what_our_clock_says_is_left() {
        let received = Instant::now();
        let (validity, now) = issued_for(5 * MINUTE);
        let validity = Validity { issued_at: None, ..validity };
        assert_eq!(renew_at(validity, received, now, None), received + MINUTE * 5 / 2);
        let later = now + jiff::SignedDuration::from_secs(60);
        assert_eq!(renew_at(validity, received, later, None), received + 2 * MINUTE);
        // Already expired by our clock: renewed at once (and refused calls renew it anyway).
        let after = now + jiff::SignedDuration::from_secs(600);
        assert_eq!(renew_at(validity, received, after, None), received);
    }

    #[test]
    fn a_renewal_that_cannot_extend_the_expiry_is_not_repeated() {
        let received = Instant::now();
        let (first, now) = issued_for(40 * MINUTE);
        // A token login 30 minutes later: a new token, the same expiry, 10 minutes left.
        let later = now + jiff::SignedDuration::from_secs(30 * 60);
        let again = Validity { issued_at: Some(later), expires_at: first.expires_at };
        let at = renew_at(again, received, later, Some(first.expires_at));
        assert_eq!(at, received + 10 * MINUTE, "used until it expires");
        // A password login gets a later expiry: the rule applies again.
        let fresh = Validity {
            issued_at: Some(later),
            expires_at: later + jiff::SignedDuration::from_secs(40 * 60),
        };
        let at = renew_at(fresh, received, later, Some(first.expires_at));
        assert_eq!(at, received + 30 * MINUTE);
    }
}
