// A header-adding proxy for the official MCP conformance suite, which sends no
// Authorization header: every request is forwarded to the MCP server with the bearer
// token added, and everything else (Host, Origin, body, the streamed answer) as it came,
// so the suite's DNS-rebinding checks still reach the server's own Origin/Host checks.
//
//   node conformance_proxy.mjs <listen-port-file> <target-url> <token>
// It listens on a free port of 127.0.0.1 and writes that port to <listen-port-file>.
import http from "node:http";
import { writeFileSync } from "node:fs";

const [, , portFile, target, token] = process.argv;
const t = new URL(target);
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const up = http.request(
    { host: t.hostname, port: t.port, path: req.url, method: req.method, headers },
    (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    },
  );
  up.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => writeFileSync(portFile, String(server.address().port)));
