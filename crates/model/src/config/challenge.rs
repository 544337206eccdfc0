//! `openai_apps_challenge`: the token ChatGPT's app submission asks to find
//! at `/.well-known/openai-apps-challenge`, answered as it is. Checked here
//! so that what is served is exactly what was meant: a token is visible
//! ASCII, without the space or line end a copy and paste brings along.

/// The longest token accepted, in characters (the tokens ChatGPT gives are
/// far shorter; this bounds what a mistaken file puts in every answer).
pub(crate) const MAX_CHALLENGE_CHARS: usize = 512;

/// What is wrong with `token`, naming the field; `None` when it can be served.
pub(crate) fn problem(token: &str) -> Option<String> {
    let field = "openai_apps_challenge";
    if token.is_empty() {
        return Some(format!(
            "{field}: is empty; set the token ChatGPT's submission gives, or leave it unset"
        ));
    }
    let chars = token.chars().count();
    if chars > MAX_CHALLENGE_CHARS {
        return Some(format!(
            "{field}: {chars} characters, over the limit of {MAX_CHALLENGE_CHARS}"
        ));
    }
    let (at, bad) = token
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_graphic())?;
    Some(format!(
        "{field}: character {} is {bad:?}; a token is visible ASCII only (no space, line end or control character)",
        at + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_visible_ascii_of_bounded_length() {
        assert_eq!(problem("abc-123_XYZ.~"), None);
        assert_eq!(problem(&"a".repeat(MAX_CHALLENGE_CHARS)), None);
        let long = problem(&"a".repeat(MAX_CHALLENGE_CHARS + 1)).unwrap();
        assert!(
            long.starts_with("openai_apps_challenge: 513 characters, over the limit of 512"),
            "{long}"
        );
        let empty = problem("").unwrap();
        assert!(
            empty.starts_with("openai_apps_challenge: is empty"),
            "{empty}"
        );
        for (token, at) in [
            ("tok\n", 4),
            (" tok", 1),
            ("to k", 3),
            ("tok\u{7f}", 4),
            ("tök", 2),
        ] {
            let said = problem(token).unwrap();
            assert!(
                said.starts_with(&format!("openai_apps_challenge: character {at} is ")),
                "{token:?}: {said}"
            );
        }
    }
}
