#!/usr/bin/env python3
"""A small GCP fake on 127.0.0.1 for gcr-credential-provider's demo and benchmark.

One port serves everything the plugin calls, each reached the way a real user points it:
  - metadata server (GCE_METADATA_HOST=127.0.0.1:N): the default service account's token,
    the google-dockercfg and google-dockercfg-url attributes; Metadata-Flavor: Google required
    and sent back, as the real server does;
  - a key file's token_uri (http://127.0.0.1:N/token): the JWT-bearer grant;
  - STS (--sts-endpoint=http://127.0.0.1:N/v1/token): the RFC 8693 token exchange;
  - IAM Credentials (--iam-endpoint=http://127.0.0.1:N): generateAccessToken;
  - the dockercfg document behind google-dockercfg-url (/dockercfg).
Requests are checked for the fields the real services require; signatures are not verified here
(the Rust integration tests do that). Standard library only.

Usage: gcp_fake.py [--port N]   (prints "listening on http://127.0.0.1:N")
"""

import argparse
import datetime
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = 3599
DOCKERCFG_LEGACY = {"https://hello.kubernetes.io": {"email": "foo@bar.baz", "auth": "Zm9vOmJhcg=="}}
DOCKERCFG_AUTHS = {"auths": {"harbor.example.com": {"username": "robot", "password": "robot-password"}}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms stalls

    def log_message(self, *args):  # quiet: the demo prints the plugin's output only
        pass

    def send(self, status, body, ctype="application/json", metadata=False):
        data = body if isinstance(body, bytes) else (json.dumps(body) if ctype == "application/json" else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if metadata:
            self.send_header("Metadata-Flavor", "Google")
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/computeMetadata/v1/"):
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.send(403, "Missing Metadata-Flavor:Google header.", "text/plain", True)
            rest = path[len("/computeMetadata/v1/"):]
            if rest == "instance/service-accounts/default/token":
                return self.send(200, {"access_token": "ya29.fake-node-token", "expires_in": LIFETIME, "token_type": "Bearer"}, metadata=True)
            if rest == "instance/service-accounts/default/email":
                return self.send(200, "node@fake-project.iam.gserviceaccount.com", "text/plain", True)
            if rest == "instance/attributes/google-dockercfg":
                return self.send(200, json.dumps(DOCKERCFG_LEGACY), "application/text", True)
            if rest == "instance/attributes/google-dockercfg-url":
                host = self.headers.get("Host", "127.0.0.1")
                return self.send(200, f"http://{host}/dockercfg", "application/text", True)
            return self.send(404, "Not Found", "text/plain", True)
        if path == "/dockercfg":
            return self.send(200, DOCKERCFG_AUTHS)
        return self.send(404, "Not Found", "text/plain")

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        raw = self.body()
        if path == "/token":  # a key file's token_uri
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            jwt = form.get("assertion", "")
            if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or jwt.count(".") != 2:
                return self.send(400, {"error": "invalid_grant", "error_description": "bad JWT-bearer grant"})
            return self.send(200, {"access_token": "ya29.fake-key-file-token", "expires_in": LIFETIME, "token_type": "Bearer"})
        if path == "/v1/token":  # STS
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            ok = (
                form.get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange"
                and form.get("subject_token_type") == "urn:ietf:params:oauth:token-type:jwt"
                and form.get("requested_token_type") == "urn:ietf:params:oauth:token-type:access_token"
                and form.get("audience")
                and form.get("subject_token")
                and "Authorization" not in self.headers
            )
            if not ok:
                return self.send(400, {"error": "invalid_request", "error_description": "bad token exchange"})
            return self.send(200, {
                "access_token": "fake-federated-token",
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 3600,
            })
        if path.startswith("/v1/projects/-/serviceAccounts/") and path.endswith(":generateAccessToken"):
            if self.headers.get("Authorization") != "Bearer fake-federated-token":
                return self.send(403, {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "denied"}})
            expire = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
            return self.send(200, {"accessToken": "ya29.fake-impersonated-token", "expireTime": expire.strftime("%Y-%m-%dT%H:%M:%SZ")})
        return self.send(404, "Not Found", "text/plain")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
