// A browser's reading of URLs: each URL given is parsed by Node's WHATWG `URL` (the
// URL Standard every browser implements), and its parts are printed as the browser
// would use them to send a request: where it goes (protocol, hostname, port), what it
// asks for (pathname, search), and what it carries (username, password, hash).
//
// Usage: node url_differential.mjs '<JSON array of URL strings>'
// Prints one JSON line: {"parsed": [{"input", "ok", "href", "protocol", ...}, ...]}.
// A URL the browser would not parse has "ok": false and its error.
// Driven by tests/authorization_server/redirects.rs.

const inputs = JSON.parse(process.argv[2] ?? '[]');
const parsed = inputs.map((input) => {
  try {
    const u = new URL(input);
    return {
      input,
      ok: true,
      href: u.href,
      protocol: u.protocol,
      username: u.username,
      password: u.password,
      hostname: u.hostname,
      port: u.port,
      pathname: u.pathname,
      search: u.search,
      hash: u.hash,
    };
  } catch (e) {
    return { input, ok: false, error: String(e && e.message) };
  }
});
process.stdout.write(JSON.stringify({ parsed }) + '\n');
