//! What bundling a widget is given: where its entry document is, how its
//! files are inlined or served, and how its files are read.

/// How a widget's files are bundled.
#[derive(Debug, Clone, Copy)]
pub struct BundleOptions<'a> {
    /// The entry document's folder, relative to the widget folder (`""` for
    /// the top).
    pub(crate) entry_dir: &'a str,
    /// The folder a leading `/` resolves in (the manifest's `base`, `""` for
    /// the widget folder).
    pub base: &'a str,
    /// Media files up to this many bytes become `data:` URIs.
    pub(crate) inline_max: usize,
    /// Where served files are: `<public_url>/assets`; `None` when the
    /// gateway has no public URL (a widget that needs served files is then
    /// an error).
    pub(crate) asset_base: Option<&'a str>,
    /// What a build writes where its server would put the asset base URL
    /// at run time (`__ASSET_BASE_URL__/x.js`): read as a leading `/`.
    /// `""` for none.
    pub(crate) placeholder: &'a str,
}

/// Reads a file of the widget folder (a normalized relative path that does
/// not leave it lexically; symlinks are the reader's to check).
pub type Read<'r> = dyn FnMut(&str) -> Result<Vec<u8>, String> + 'r;
