//! Loading: the layers read in order (defaults, the file, `MCP_UI_GATEWAY_*`
//! environment variables, command-line flags) and merged with figment, every
//! problem reported at once, each where it was written.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::Serialize;

use super::problems;
use super::schema::{Config, UpstreamConfig};

/// Prefix of the environment variables that set configuration fields;
/// nested fields use `__`, e.g. `MCP_UI_GATEWAY_LIMITS__MAX_BODY_BYTES`.
pub(crate) const ENV_PREFIX: &str = "MCP_UI_GATEWAY_";
/// The file read when `--config` is not given, if it exists.
pub(crate) const DEFAULT_FILE: &str = "config/gateway.toml";

/// Overrides from the command line; `None` leaves lower layers in force.
#[derive(Debug, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlays: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
    #[serde(rename = "upstream", skip_serializing_if = "Option::is_none")]
    pub upstreams: Option<Vec<UpstreamConfig>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {0} does not exist")]
    Missing(PathBuf),
    #[error("{}", .problems.join("\n"))]
    Invalid { problems: Vec<String> },
}

/// Read the layered configuration. `file` is `--config`; without it
/// `config/gateway.toml` is read when present.
pub fn load(
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<(Config, Option<PathBuf>), ConfigError> {
    let file = match file {
        Some(f) if !f.exists() => return Err(ConfigError::Missing(f.to_path_buf())),
        Some(f) => Some(f.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_FILE)).filter(|p| p.exists()),
    };
    let text = match &file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| ConfigError::Invalid {
            problems: vec![format!("{}: cannot be read: {e}", f.display())],
        })?,
        None => String::new(),
    };
    let mut doc: toml::Table = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| text[..s.start].lines().count().max(1));
        let file = file
            .as_deref()
            .unwrap_or(Path::new("?"))
            .display()
            .to_string();
        let place = at.map_or(file.clone(), |line| format!("{file}:{line}"));
        ConfigError::Invalid {
            problems: vec![format!("{place}: {}", e.message().trim_end())],
        }
    })?;
    let figment = |doc: &toml::Table| {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if file.is_some() {
            let toml = toml::to_string(doc).unwrap_or_default();
            figment = figment.merge(Toml::string(&toml));
        }
        figment
            .merge(Env::prefixed(ENV_PREFIX).split("__"))
            .merge(Serialized::defaults(overrides))
    };
    // Every problem at once: a key at fault is taken out and the rest read
    // again, as long as each round takes one out.
    let mut said = Vec::new();
    for _ in 0..MAX_PROBLEMS {
        match figment(&doc).extract::<Config>() {
            Ok(config) if said.is_empty() => return Ok((config, file)),
            Ok(_) => break,
            Err(errors) => {
                let mut taken = false;
                for e in errors {
                    let line = problems::from_file(&e)
                        .then(|| problems::key_line(&text, &e.path))
                        .flatten();
                    said.push((
                        line,
                        problems::describe(&e, file.as_deref(), &text, ENV_PREFIX),
                    ));
                    taken |= problems::from_file(&e) && problems::without(&mut doc, &e.path);
                }
                if !taken {
                    break;
                }
            }
        }
    }
    // In the file's order; the environment's after.
    said.sort_by_key(|(line, _)| (line.is_none(), *line));
    Err(ConfigError::Invalid {
        problems: said.into_iter().map(|(_, p)| p).collect(),
    })
}

/// The most problems a configuration is read for.
const MAX_PROBLEMS: usize = 32;
