//! Start the gateway in-process on 127.0.0.1:0 in front of given upstreams,
//! and stop it when the handle drops.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_ui_model::config::{Config, UpstreamConfig};
use mcp_ui_proxy::gateway::Gateway;
use mcp_ui_proxy::live::Live;
use mcp_ui_proxy::server::Server;
use tokio_util::sync::CancellationToken;

pub struct TestGateway {
    pub addr: SocketAddr,
    pub gateway: Arc<Gateway>,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestGateway {
    /// A gateway with default settings in front of `upstreams`.
    pub async fn start(upstreams: Vec<UpstreamConfig>) -> Self {
        Self::start_with(Config {
            upstreams,
            ..test_config()
        })
        .await
    }

    pub async fn start_with(mut config: Config) -> Self {
        config.listen = "127.0.0.1:0".parse().unwrap();
        Self::start_listening(config).await
    }

    /// Listening where `config.listen` says.
    pub async fn start_listening(config: Config) -> Self {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .expect("bind");
        Self::start_on(config, listener)
    }

    /// On a port of 127.0.0.1 the system chooses, with `public_url` set to
    /// it (unless the configuration names one): the socket is bound first
    /// and handed to the gateway, so no other process can take the port
    /// between the two.
    pub async fn start_public(mut config: Config) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("a bound address");
        config.listen = addr;
        if config.public_url.is_none() {
            config.public_url = Some(format!("http://{addr}"));
        }
        Self::start_on(config, listener)
    }

    /// Serving on `listener`, already bound where `config.listen` says.
    pub fn start_on(config: Config, listener: tokio::net::TcpListener) -> Self {
        let resolved = config.resolve().expect("valid test config");
        let options = mcp_ui_overlay::overlay::LoadOptions {
            max_bytes: config.limits.max_widget_bytes,
            public_url: config.public_url.clone(),
            apps: resolved.apps.iter().map(|a| a.overlay_scope()).collect(),
        };
        let live = Live::open_with(&config.overlays, options).expect("valid overlays");
        let gateway = Gateway::new(&config, resolved, live).expect("gateway");
        let server = Server::on(gateway.clone(), listener);
        let addr = server.local_addr();
        let stop = CancellationToken::new();
        let task = tokio::spawn(server.run(stop.clone(), Duration::from_secs(2)));
        TestGateway {
            addr,
            gateway,
            stop,
            task: Some(task),
        }
    }

    /// URL of the first mount.
    pub fn url(&self) -> String {
        self.url_for(&self.gateway.mounts[0].config.path)
    }

    pub fn url_for(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stop and wait for the shutdown to complete.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Defaults with short timeouts, so a failing test fails fast, and no
/// overlays unless a test gives some.
pub fn test_config() -> Config {
    let mut c = Config {
        overlays: "/nonexistent/overlays".into(),
        ..Config::default()
    };
    c.limits.request_timeout_secs = 20;
    c.limits.connect_timeout_secs = 5;
    c
}

pub fn http(name: &str, url: &str) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        url: Some(url.into()),
        ..Default::default()
    }
}

pub fn sse(name: &str, url: &str) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        sse_url: Some(url.into()),
        ..Default::default()
    }
}

pub fn stdio(name: &str, program: &str, args: &[&str]) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        command: Some(program.into()),
        args: args.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// The gateway binary's bundled demo server, as a stdio upstream.
pub fn demo_stdio(name: &str) -> UpstreamConfig {
    stdio(name, env!("CARGO_BIN_EXE_mcp-ui-gateway"), &["demo-server"])
}

/// `up` with one upstream connection per client session (`sessions =
/// "client"`): what tests of a session's own child or connection use.
pub fn per_client(mut up: UpstreamConfig) -> UpstreamConfig {
    up.sessions = Some(mcp_ui_model::config::SessionMode::Client);
    up
}

/// A shell snippet that sets `$id` to the id of the JSON-RPC message in
/// `$l` (as written), for `sh -c` upstreams that answer whatever id they
/// are sent.
pub const SH_ID: &str = r#"id=$(printf '%s' "$l" | sed 's/.*"id":\([^,}]*\).*/\1/')"#;
