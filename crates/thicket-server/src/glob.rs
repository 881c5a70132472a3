//! Redis's glob patterns (KEYS, SCAN MATCH, CONFIG GET): `*`, `?`,
//! `[abc]`, `[^a-z]`, `\x`. Matching backtracks only to the last `*`, so it
//! is linear in the pattern times the key, never exponential.

pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // After a `*`: where the pattern resumes and the text position it
    // was last tried at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if let Some(&c) = pattern.get(p) {
            let step = match c {
                b'*' => {
                    while pattern.get(p) == Some(&b'*') {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => Some(p + 1),
                b'[' => match_class(pattern, p, text[t]),
                b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == text[t]).then_some(p + 2),
                _ => (c == text[t]).then_some(p + 1),
            };
            if let Some(next) = step {
                p = next;
                t += 1;
                continue;
            }
        }
        match star {
            Some((resume, tried)) => {
                p = resume;
                t = tried + 1;
                star = Some((resume, tried + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class opening at `pattern[open]`; the pattern
/// position after the class when it matches.
fn match_class(pattern: &[u8], open: usize, c: u8) -> Option<usize> {
    let mut i = open + 1;
    let negated = pattern.get(i) == Some(&b'^');
    if negated {
        i += 1;
    }
    let mut matched = false;
    while i < pattern.len() && pattern[i] != b']' {
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            matched |= pattern[i + 1] == c;
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' {
            let (lo, hi) = (
                pattern[i].min(pattern[i + 2]),
                pattern[i].max(pattern[i + 2]),
            );
            matched |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    // An unterminated class ends with the pattern, as in Redis.
    let next = (i + 1).min(pattern.len());
    (matched != negated).then_some(next)
}

/// The bytes every match starts with: the pattern up to its first special
/// character. Ordered scans seek there instead of reading every key.
pub fn literal_prefix(pattern: &[u8]) -> &[u8] {
    let end = pattern
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "axb", false),
            ("*a*b*c*", "xxaxxbxxcxx", true),
            ("*a*b*c*", "xxaxxcxxbxx", false),
            ("key:*", "key:1", true),
            ("key:*", "kex:1", false),
            ("abc", "abcd", false),
            ("a[", "a", false),
        ];
        for &(pattern, text, expected) in cases {
            assert_eq!(
                glob_match(pattern.as_bytes(), text.as_bytes()),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn long_inputs_stay_fast() {
        let pattern = "*a".repeat(50) + "b";
        let text = "a".repeat(10_000);
        assert!(!glob_match(pattern.as_bytes(), text.as_bytes()));
    }

    #[test]
    fn prefixes() {
        assert_eq!(literal_prefix(b"user:*:name"), b"user:");
        assert_eq!(literal_prefix(b"*"), b"");
        assert_eq!(literal_prefix(b"exact"), b"exact");
    }
}
