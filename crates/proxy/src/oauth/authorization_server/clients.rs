//! A client by its `client_id`: a registration the gateway sealed into the
//! id, or the HTTPS URL of the client's metadata document, parsed once as a
//! browser parses it (`client::metadata_document_url`), fetched as parsed
//! under the SSRF rules of [`Vetted`] and kept for `cache_secs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::client::{self, Client, Limits};
use mcp_ui_identity::urls::Url;
use mcp_ui_model::config::authorization::MetadataDocumentsConfig;
use mcp_ui_model::session_id::SessionKey;
use mcp_ui_upstream::upstream::vetted::Vetted;

use super::sealed::{self, Purpose, Registered};

/// Most documents kept at once.
const MAX_KEPT: usize = 1024;
/// A document that could not be had is not asked for again for this long.
const FAILED_FOR: Duration = Duration::from_secs(30);

/// A document's client (or why there is none), and when it was fetched.
type Kept = (Result<Arc<Client>, OAuthError>, Instant);

pub(super) struct Clients {
    config: MetadataDocumentsConfig,
    vetted: Option<Vetted>,
    kept: Mutex<HashMap<String, Kept>>,
}

/// A client and its secret (none for a public client).
pub(super) struct Known {
    pub client: Arc<Client>,
    pub secret: Option<String>,
    /// When a registered client was registered (none for a document's).
    pub issued_at: Option<u64>,
}

impl Clients {
    pub(super) fn new(config: &MetadataDocumentsConfig) -> Result<Clients, String> {
        let vetted = match config.enabled {
            true => Some(
                Vetted::connecting(
                    config.ca_file.clone(),
                    config.private_hosts.clone(),
                    config
                        .connect_to
                        .iter()
                        .filter_map(|(h, a)| Some((h.clone(), a.parse().ok()?)))
                        .collect(),
                )
                .map_err(|e| format!("authorization_server.client_metadata_documents: {e}"))?,
            ),
            false => None,
        };
        Ok(Clients {
            config: config.clone(),
            vetted,
            kept: Mutex::new(HashMap::new()),
        })
    }

    /// The client `client_id` names, or `invalid_client` saying why not.
    pub(super) async fn find(
        &self,
        key: &SessionKey,
        client_id: &str,
    ) -> Result<Known, OAuthError> {
        if client::names_a_document(client_id) {
            let Some(vetted) = &self.vetted else {
                return Err(invalid(
                    "clients known by a metadata document URL are not accepted here (client_metadata_documents.enabled)",
                ));
            };
            let url = client::metadata_document_url(client_id)
                .map_err(|why| invalid(&why.to_string()))?;
            let client = self.document(vetted, &url).await?;
            return Ok(Known {
                client,
                secret: None,
                issued_at: None,
            });
        }
        let registered: Registered = sealed::open(key, Purpose::Client, client_id)
            .ok_or_else(|| invalid("the client is not registered here (`client_id` unknown)"))?;
        Ok(Known {
            client: Arc::new(registered.client),
            secret: registered.secret,
            issued_at: Some(registered.issued_at),
        })
    }

    async fn document(&self, vetted: &Vetted, url: &Url) -> Result<Arc<Client>, OAuthError> {
        {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((found, at)) = kept.get(url.as_str()) {
                let fresh_for = match found {
                    Ok(_) => Duration::from_secs(self.config.cache_secs),
                    Err(_) => FAILED_FOR,
                };
                if at.elapsed() < fresh_for {
                    return found.clone();
                }
            }
        }
        let timeout = Duration::from_secs(self.config.timeout_secs);
        let found = match vetted
            .get(url, "application/json", self.config.max_bytes, timeout)
            .await
        {
            Ok(body) => match serde_json::from_slice(&body) {
                Ok(doc) => client::from_metadata_document(url.as_str(), &doc, &Limits::default())
                    .map(Arc::new)
                    .map_err(|e| {
                        invalid(&format!("the client metadata document: {}", e.description))
                    }),
                Err(_) => Err(invalid("the client metadata document is not JSON")),
            },
            Err(why) => {
                tracing::info!(client_id = %url, "a client metadata document could not be fetched: {why}");
                Err(invalid(&format!(
                    "the client metadata document could not be fetched: {why}"
                )))
            }
        };
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(url.as_str().to_owned(), (found.clone(), Instant::now()));
        found
    }
}

fn invalid(why: &str) -> OAuthError {
    OAuthError::new("invalid_client", why)
}
