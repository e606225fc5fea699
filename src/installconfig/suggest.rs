//! "Did you mean": the closest known name by edit distance, case-insensitive.

/// The candidate closest to `typed`, when it is close enough to be a likely typo: at most one
/// edit per three characters (and at least one edit), counting a swap of neighbours as one.
pub(crate) fn closest<'a>(typed: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let typed_lower: Vec<char> = typed.to_lowercase().chars().collect();
    candidates
        .iter()
        .map(|candidate| {
            let lower: Vec<char> = candidate.to_lowercase().chars().collect();
            let limit = (typed_lower.len().max(lower.len()) / 3).max(1);
            (distance(&typed_lower, &lower), limit, *candidate)
        })
        .filter(|(distance, limit, _)| distance <= limit)
        .min_by_key(|(distance, _, _)| *distance)
        .map(|(_, _, candidate)| candidate)
}

/// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring).
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        rows[at(i, 0)] = i;
    }
    for j in 0..=b.len() {
        rows[at(0, j)] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[at(i - 1, j)] + 1)
                .min(rows[at(i, j - 1)] + 1)
                .min(rows[at(i - 1, j - 1)] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[at(i - 2, j - 2)] + 1);
            }
            rows[at(i, j)] = best;
        }
    }
    rows[at(a.len(), b.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENSTACK: &[&str] =
        &["cloud", "externalNetwork", "apiVIPs", "ingressVIPs", "apiFloatingIP"];

    #[test]
    fn typos_find_the_intended_field() {
        assert_eq!(closest("apiVIP", OPENSTACK), Some("apiVIPs"));
        assert_eq!(closest("apivips", OPENSTACK), Some("apiVIPs"));
        assert_eq!(closest("ingresVIPs", OPENSTACK), Some("ingressVIPs"));
        assert_eq!(closest("clodu", OPENSTACK), Some("cloud"));
        assert_eq!(closest("externalNetwrok", OPENSTACK), Some("externalNetwork"));
    }

    #[test]
    fn unrelated_names_get_no_suggestion() {
        assert_eq!(closest("flavor", OPENSTACK), None);
        assert_eq!(closest("x", OPENSTACK), None);
        assert_eq!(closest("anything", &[]), None);
    }

    #[test]
    fn distance_counts_swaps_as_one_edit() {
        let chars = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(distance(&chars("ab"), &chars("ba")), 1);
        assert_eq!(distance(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(distance(&chars(""), &chars("abc")), 3);
    }
}
