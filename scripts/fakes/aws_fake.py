#!/usr/bin/env python3
"""A small, fast AWS fake on 127.0.0.1 for the demo and the benchmark.

Answers what ecr-credential-provider calls and moto cannot serve: ECR Public
(SpencerFrontendService.GetAuthorizationToken), private ECR with a real future
expiry (moto's lies in 2015), STS AssumeRoleWithWebIdentity, and IMDSv2 (token
with TTL header, region, role credentials). Standard library only.

Usage: aws_fake.py [--port N] [--tls CERT KEY]
  prints "listening on http[s]://127.0.0.1:N"; with --tls it serves HTTPS with that certificate.
"""

import argparse
import base64
import datetime
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_LIFETIME = 12 * 3600
IMDS_TOKEN = "fake-imds-session-token"


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes; without this, Nagle and delayed ACKs add ~40 ms.
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet: the demo prints what matters
        pass

    def reply(self, status, body, content_type="application/x-amz-json-1.1", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def do_PUT(self):
        if self.path == "/latest/api/token":
            ttl = self.headers.get("x-aws-ec2-metadata-token-ttl-seconds")
            if not ttl:
                return self.reply(400, "missing TTL", "text/plain")
            return self.reply(200, IMDS_TOKEN, "text/plain", [("x-aws-ec2-metadata-token-ttl-seconds", ttl)])
        self.reply(404, "not found", "text/plain")

    def do_GET(self):
        if not self.path.startswith("/latest/"):
            return self.reply(404, "not found", "text/plain")
        if self.headers.get("x-aws-ec2-metadata-token") != IMDS_TOKEN:
            return self.reply(401, "IMDSv2 token required", "text/plain")
        if self.path == "/latest/meta-data/placement/region":
            return self.reply(200, "us-east-1", "text/plain")
        if self.path == "/latest/meta-data/iam/security-credentials/":
            return self.reply(200, "fake-node-role", "text/plain")
        if self.path == "/latest/meta-data/iam/security-credentials/fake-node-role":
            creds = {
                "Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAFAKENODE",
                "SecretAccessKey": "fake-node-secret", "Token": "fake-node-session",
                "Expiration": iso(now() + datetime.timedelta(hours=6)), "LastUpdated": iso(now()),
            }
            return self.reply(200, json.dumps(creds), "application/json")
        self.reply(404, "not found", "text/plain")

    def do_POST(self):
        body = self.body()
        target = self.headers.get("x-amz-target", "")
        expires = (now() + datetime.timedelta(seconds=TOKEN_LIFETIME)).timestamp()
        token = base64.b64encode(b"AWS:fake-ecr-password").decode()
        if target.endswith("AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"):
            data = {"authorizationData": [{"authorizationToken": token, "expiresAt": expires,
                                           "proxyEndpoint": "https://123456789012.dkr.ecr.us-east-1.amazonaws.com"}]}
            return self.reply(200, json.dumps(data))
        if target.endswith("SpencerFrontendService.GetAuthorizationToken"):
            return self.reply(200, json.dumps({"authorizationData": {"authorizationToken": token, "expiresAt": expires}}))
        if b"Action=AssumeRoleWithWebIdentity" in body:
            xml = f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAFAKEROLE</AccessKeyId>
<SecretAccessKey>fake-role-secret</SecretAccessKey><SessionToken>fake-role-session</SessionToken>
<Expiration>{iso(now() + datetime.timedelta(hours=1))}</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/fake/ecr-credential-provider</Arn>
<AssumedRoleId>AROAFAKE:ecr-credential-provider</AssumedRoleId></AssumedRoleUser>
</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"""
            return self.reply(200, xml, "text/xml")
        self.reply(400, json.dumps({"__type": "UnknownOperationException", "message": target or "no target"}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    scheme = "http"
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*args.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"listening on {scheme}://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
