'use strict';
// Preload (`node --require ./loopback.cjs ...`) that forces every TCP listener of
// the process onto the loopback interface, whatever host the program asked for.
// server-everything calls express's `app.listen(PORT)`, which is
// `http.createServer(app).listen(PORT)` and would bind all interfaces.
//
// net.Server.prototype.listen is wrapped, so http.Server, https.Server and plain
// net servers are all covered (http.Server inherits listen from net.Server).
// Unix-socket / named-pipe and handle forms are passed through unchanged.
// The host is 127.0.0.1, or LOOPBACK_HOST if set to another loopback address.
// Once listening, one line goes to stderr:
//   [loopback] listening on 127.0.0.1:PORT
const net = require('node:net');

const HOST = process.env.LOOPBACK_HOST || '127.0.0.1';
if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(HOST) && HOST !== '::1' && HOST !== 'localhost') {
  throw new Error(`loopback.cjs: LOOPBACK_HOST=${HOST} is not a loopback address`);
}

const originalListen = net.Server.prototype.listen;

function isPipeName(v) {
  return typeof v === 'string' && v !== '' && !/^\d+$/.test(v);
}

function announce(server) {
  server.once('listening', () => {
    const a = server.address();
    if (a && typeof a === 'object') {
      process.stderr.write(`[loopback] listening on ${a.address}:${a.port}\n`);
    }
  });
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  // listen(options[, cb])
  if (args.length > 0 && args[0] !== null && typeof args[0] === 'object') {
    const first = args[0];
    // A handle ({_handle}/{fd}) or a pipe path: not a TCP bind, leave alone.
    if (first._handle || first.fd !== undefined || first.path !== undefined ||
        typeof first.listen === 'function') {
      return originalListen.apply(this, args);
    }
    const options = { ...first, host: HOST };
    delete options.ipv6Only;
    announce(this);
    return originalListen.call(this, options, ...args.slice(1));
  }
  // listen(path[, backlog][, cb])
  if (isPipeName(args[0])) {
    return originalListen.apply(this, args);
  }
  // listen([port[, host[, backlog]]][, cb])
  const rest = args.slice();
  const cb = typeof rest[rest.length - 1] === 'function' ? rest.pop() : undefined;
  const port = rest.length > 0 && rest[0] !== undefined && rest[0] !== null ? Number(rest[0]) : 0;
  let backlog;
  if (rest.length >= 3 && typeof rest[2] === 'number') backlog = rest[2];
  else if (rest.length === 2 && typeof rest[1] === 'number') backlog = rest[1];
  const options = { port: Number.isFinite(port) ? port : 0, host: HOST };
  if (backlog !== undefined) options.backlog = backlog;
  announce(this);
  return cb ? originalListen.call(this, options, cb) : originalListen.call(this, options);
};
