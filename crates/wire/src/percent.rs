//! Percent-decoding, as URL paths, query strings and header lists write it:
//! one decoder for the whole gateway, the caller saying whether a `+` is a
//! space (a form-encoded query, as browsers write one) or itself (a path, an
//! OpenTelemetry header list).

use std::borrow::Cow;

/// What a `+` stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plus {
    /// Itself: paths, and lists such as `OTEL_EXPORTER_OTLP_HEADERS`.
    Itself,
    /// A space: `application/x-www-form-urlencoded` (a query from a form or
    /// `URLSearchParams`). An encoded `%2B` is still a `+`.
    Space,
}

/// The bytes `s` encodes: each `%XX` (two hexadecimal digits) is that byte;
/// anything else, a `%` not followed by two digits included, is itself.
pub fn percent_decode(s: &str, plus: Plus) -> Decoded<'_> {
    let bytes: Cow<'_, [u8]> = match plus {
        Plus::Space if s.contains('+') => {
            Cow::Owned(percent_encoding::percent_decode_str(&s.replace('+', " ")).collect())
        }
        Plus::Space | Plus::Itself => percent_encoding::percent_decode_str(s).into(),
    };
    Decoded(bytes)
}

/// Decoded bytes, read as text by [`Decoded::utf8`] or [`Decoded::lossy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<'a>(Cow<'a, [u8]>);

impl<'a> Decoded<'a> {
    /// The text, when the bytes are UTF-8.
    pub fn utf8(self) -> Option<Cow<'a, str>> {
        match self.0 {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(v) => String::from_utf8(v).ok().map(Cow::Owned),
        }
    }

    /// The text, each sequence that is not UTF-8 replaced by U+FFFD.
    pub fn lossy(self) -> Cow<'a, str> {
        match self.0 {
            Cow::Borrowed(b) => String::from_utf8_lossy(b),
            Cow::Owned(v) => match String::from_utf8(v) {
                Ok(text) => Cow::Owned(text),
                Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str, plus: Plus) -> Option<String> {
        percent_decode(s, plus).utf8().map(Cow::into_owned)
    }

    #[test]
    fn a_plus_is_a_space_in_a_form_query_only() {
        // The preview's `?csp=` query, as URLSearchParams writes it.
        assert_eq!(text("a+b%20c", Plus::Space).as_deref(), Some("a b c"));
        assert_eq!(text("1%2B1+%3D+2", Plus::Space).as_deref(), Some("1+1 = 2"));
        // A widget file's path and an OpenTelemetry header value keep it.
        assert_eq!(text("a+b%20c", Plus::Itself).as_deref(), Some("a+b c"));
        assert_eq!(
            percent_decode("Basic%20dXNlcg==+x", Plus::Itself).lossy(),
            "Basic dXNlcg==+x"
        );
    }

    #[test]
    fn malformed_escapes_are_themselves_and_text_must_be_utf8_unless_lossy() {
        assert_eq!(text("100%", Plus::Itself).as_deref(), Some("100%"));
        assert_eq!(text("%zz%4", Plus::Space).as_deref(), Some("%zz%4"));
        assert_eq!(text("caf%C3%A9", Plus::Itself).as_deref(), Some("café"));
        assert_eq!(text("%FF", Plus::Itself), None);
        assert_eq!(text("%FF+", Plus::Space), None);
        assert_eq!(percent_decode("a%FFb", Plus::Itself).lossy(), "a\u{FFFD}b");
        assert_eq!(percent_decode("a%FF+b", Plus::Space).lossy(), "a\u{FFFD} b");
        // Nothing to decode: the input itself, not a copy.
        assert!(matches!(
            percent_decode("plain", Plus::Itself).utf8(),
            Some(Cow::Borrowed("plain"))
        ));
    }
}
