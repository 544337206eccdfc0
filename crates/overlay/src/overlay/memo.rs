//! [`Memo`]: a value worked out from an overlay on first use, kept beside it.

/// A value worked out from its owner on first use and kept beside it. Not
/// part of the owner's value: memos are equal whether filled or not, and a
/// clone starts empty.
pub struct Memo<T>(std::sync::OnceLock<T>);

impl<T> Memo<T> {
    pub fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(make)
    }
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(std::sync::OnceLock::new())
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl<T> PartialEq for Memo<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}
