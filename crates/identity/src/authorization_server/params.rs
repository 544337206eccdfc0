//! Query and form parameters (`application/x-www-form-urlencoded`), each of
//! which may be sent at most once (RFC 6749 §3.1, §3.2).

use super::OAuthError;

/// Parameters as sent, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(Vec<(String, String)>);

/// Most parameters read from one query or form; the rest are ignored.
pub const MAX_PARAMS: usize = 64;

impl Params {
    /// The parameters of a query string or form body.
    pub fn parse(text: &[u8]) -> Params {
        Params(
            form_urlencoded::parse(text)
                .take(MAX_PARAMS)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The value of `name`, `None` when absent or empty (RFC 6749 §3.1:
    /// "parameters sent without a value MUST be treated as if they were
    /// omitted"); `invalid_request` when it is sent more than once.
    pub fn one(&self, name: &str) -> Result<Option<&str>, OAuthError> {
        let mut found = self
            .0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str());
        match (found.next(), found.next()) {
            (first, None) => Ok(first),
            _ => Err(OAuthError::request(format!(
                "the parameter `{name}` is sent more than once"
            ))),
        }
    }

    /// Every non-empty value of `name`, in order (RFC 8707 allows several
    /// `resource`s).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// `pairs` written as a query string or form body.
pub fn encode<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_counts_once_and_empty_is_absent() {
        let p = Params::parse(b"a=1&b=&c=x%20y&d=1&d=2&resource=r1&resource=r2");
        assert_eq!(p.one("a"), Ok(Some("1")));
        assert_eq!(p.one("b"), Ok(None));
        assert_eq!(p.one("c"), Ok(Some("x y")));
        assert_eq!(p.one("missing"), Ok(None));
        assert_eq!(p.one("d").unwrap_err().error, "invalid_request");
        assert_eq!(p.all("resource"), ["r1", "r2"]);
        assert_eq!(encode([("a", "x y"), ("b", "&")]), "a=x+y&b=%26");
    }
}
