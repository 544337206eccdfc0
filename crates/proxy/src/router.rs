//! Which part of the gateway answers a request, by its path: liveness,
//! protected-resource metadata, metrics, readiness, the preview page, a
//! widget's served files, ChatGPT's domain-verification token, or a mount's
//! MCP endpoint. The innermost service of [`crate::stack`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use tower::Service;

use crate::gateway::Gateway;
use crate::middleware::cors;
use crate::oauth::passthrough;
use crate::{assets, challenge, endpoint, health, metrics, preview};
use mcp_ui_model::reply::{Body, text};

/// The router's future, boxed: hyper keeps room for a connection's service
/// future for as long as the connection is open, idle or not, so an
/// exchange's state lives on the heap only while it runs.
pub(crate) type RouteFuture =
    Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// Routes requests to the parts of one gateway.
#[derive(Clone)]
pub(crate) struct Router {
    gw: Arc<Gateway>,
}

impl Router {
    pub fn new(gw: Arc<Gateway>) -> Self {
        Router { gw }
    }
}

impl Service<Request<Incoming>> for Router {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = RouteFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    /// The part that answers is chosen here, before anything is awaited, and
    /// only its future is boxed: a boxed future is moved whole into its
    /// allocation, so one future for every part would cost each request a
    /// copy of the largest part's state (the app endpoint's, with a relayed
    /// exchange per member inside).
    fn call(&mut self, req: Request<Incoming>) -> RouteFuture {
        let gw = self.gw.clone();
        let path = req.uri().path();
        if path == "/healthz" {
            return ready(text(StatusCode::OK, "ok\n"));
        }
        if let Some(authority) = &gw.oauth.authorization_server
            && let Some(endpoint) = authority.endpoint(path)
        {
            let authority = authority.clone();
            return Box::pin(async move {
                let resources = || gw.resources_for(&authority);
                Ok(
                    crate::oauth::authorization_server::serve(&authority, resources, endpoint, req)
                        .await,
                )
            });
        }
        if let Some(target) = passthrough::prm_target(path) {
            if let passthrough::PrmTarget::Mount(p) = target
                && let Some(app) = gw.app_at(p).cloned()
            {
                return Box::pin(async move {
                    let (method, headers) = (req.method(), req.headers());
                    Ok(crate::app_endpoint::oauth::metadata(&gw, &app, method, headers).await)
                });
            }
            let mount = gw.prm_mount(target).map(|m| m.index);
            return Box::pin(async move {
                let mount = mount.and_then(|i| gw.mounts.get(i));
                Ok(metadata(&gw, mount, &req).await)
            });
        }
        if path == "/metrics" {
            return Box::pin(async move { Ok(metrics::response(gw.metrics_text().await)) });
        }
        if path == "/readyz" {
            return Box::pin(
                async move { Ok(health::readyz(&gw.readiness, &gw.upstreams()).await) },
            );
        }
        if let Some(app) = gw.app_at(path).cloned() {
            return Box::pin(async move { Ok(crate::app_endpoint::serve(&gw, &app, req).await) });
        }
        if let Some(i) = gw.mount_at(path).map(|m| m.index) {
            return Box::pin(async move { Ok(endpoint::serve(&gw, &gw.mounts[i], req).await) });
        }
        if assets::claims(path) {
            return ready(assets::serve(
                &gw.live.load(),
                req.method(),
                path,
                req.headers().get(header::RANGE),
            ));
        }
        if preview::claims(path) {
            return ready(preview_page(&gw, &req));
        }
        if path == challenge::PATH
            && let Some(token) = &gw.openai_apps_challenge
        {
            return ready(challenge::answer(token, req.method()));
        }
        ready(text(StatusCode::NOT_FOUND, not_found(&gw)))
    }
}

/// A preview path: the page, its files, and the list of endpoints with what
/// a protected one needs (the scopes its overlays declare, as its metadata
/// lists them) and the gateway's own authorization server.
fn preview_page(gw: &Gateway, req: &Request<Incoming>) -> Response<Body> {
    let overlays = gw.live.load();
    let declared = |names: &[&str]| {
        let mut all: Vec<String> = Vec::new();
        for name in names {
            for s in crate::oauth::resource_server::declared_scopes(overlays.mount(name)) {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
        }
        all
    };
    let apps = gw.apps.iter().map(|a| {
        let members = a.config.upstream_names();
        preview::Endpoint {
            name: &a.config.name,
            path: &a.config.path,
            declared: if a.config.auth.is_some() {
                declared(&members)
            } else {
                Vec::new()
            },
            members: Some(members),
            auth: a.config.auth.as_ref(),
        }
    });
    let mounts = gw
        .mounts
        .iter()
        .map(|m| {
            let mut e = preview::Endpoint::from(&m.config);
            if e.auth.is_some() {
                e.declared = declared(&[m.config.name.as_str()]);
            }
            e
        })
        .chain(apps);
    let site = preview::Site {
        public_url: gw.oauth.passthrough.public_url(),
        base: gw.oauth.passthrough.base(req.headers()),
        authorization_server: gw
            .oauth
            .authorization_server
            .as_ref()
            .map(|a| preview::SignIn {
                issuer: &a.config.issuer,
                metadata: a.metadata_url(),
            }),
    };
    preview::serve(gw.preview, mounts, &site, req.method(), req.uri())
}

/// What a request to a path nothing serves is told: the paths that are
/// served, MCP endpoints first.
fn not_found(gw: &Gateway) -> String {
    let mut lines =
        vec!["not found: nothing is served at this path. This gateway serves:".to_owned()];
    for mount in &gw.mounts {
        let c = &mount.config;
        lines.push(format!("  {}  MCP, upstream '{}'", c.path, c.name));
    }
    for app in &gw.apps {
        lines.push(format!(
            "  {}  MCP, app '{}' of {}",
            app.config.path,
            app.config.name,
            app.config.upstream_names().join(", ")
        ));
    }
    if gw.preview {
        lines.push("  /preview  the preview page".into());
    }
    lines.push("  /healthz, /readyz, /metrics  health, readiness and metrics".into());
    lines.join("\n") + "\n"
}

/// An answer the router has at once.
fn ready(response: Response<Body>) -> RouteFuture {
    Box::pin(std::future::ready(Ok(response)))
}

/// A mount's protected-resource metadata (RFC 9728).
async fn metadata(
    gw: &Gateway,
    mount: Option<&crate::gateway::MountState>,
    req: &Request<Incoming>,
) -> Response<Body> {
    match (mount, req.method()) {
        (Some(mount), &Method::GET | &Method::HEAD) => {
            if let Some(required) = &mount.config.auth {
                let overlays = gw.live.load();
                let declared = crate::oauth::resource_server::declared_scopes(
                    overlays.mount(&mount.config.name),
                );
                let path = &mount.config.path;
                return passthrough::serve_own(
                    &gw.oauth.passthrough,
                    required,
                    path,
                    &declared,
                    req.headers(),
                );
            }
            let fetch = passthrough::Fetch {
                client: &gw.upstreams.client,
                timeout: gw.request_timeout(),
            };
            passthrough::serve_prm(
                &gw.oauth.passthrough,
                mount.index,
                &mount.config,
                &fetch,
                req.headers(),
            )
            .await
        }
        (Some(_), &Method::OPTIONS) => cors::preflight(),
        (Some(_), _) => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
            r
        }
        (None, _) => text(
            StatusCode::NOT_FOUND,
            "not found: no mount at this protected-resource metadata path\n",
        ),
    }
}
