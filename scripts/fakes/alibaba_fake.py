#!/usr/bin/env python3
"""A small Alibaba Cloud fake on 127.0.0.1 for alibaba-credential-provider's demo.

One port serves everything the plugin calls, each reached the way a user points it
(--metadata-endpoint, --sts-endpoint and --cr-endpoint all http://127.0.0.1:N):
  - the ECS metadata server in hardened mode: PUT /latest/api/token (with
    X-aliyun-ecs-metadata-token-ttl-seconds) hands out a session token that every GET must carry
    in X-aliyun-ecs-metadata-token; /latest/meta-data/ram/security-credentials/ (the role name),
    .../<role> (the role's STS credentials) and /latest/meta-data/region-id;
  - STS AssumeRoleWithOIDC (2015-04-01, RPC POST /, anonymous, OIDCToken in the form body): the
    pod's role credentials;
  - Container Registry: ListInstance and GetAuthorizationToken (2018-12-01, RPC POST /, the
    Enterprise Edition) and the Personal Edition's GetAuthorizationToken (2016-06-07, ROA
    GET /tokens).
Every Container Registry call must carry the V3 signature (ACS3-HMAC-SHA256) made with a secret
this fake handed out (the node role's, the pod role's, or a static key given with --static-key),
and x-acs-security-token exactly when the key is an STS one; the fake recomputes the signature
with its own implementation below and refuses a bad one as Alibaba Cloud does (400,
{"Code":"SignatureDoesNotMatch",...}). ListInstance matches names loosely (a substring), as the
real call may; the plugin must compare them exactly. Each request is printed as one line
("request: ..."), without secrets. Standard library only.

Usage: alibaba_fake.py [--port N] [--static-key ID=SECRET]...   (prints "listening on http://127.0.0.1:N")
"""

import argparse
import datetime
import hashlib
import hmac
import json
import secrets
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REGION = "cn-hangzhou"
NODE_ROLE = "demo-node-role"
ROLE_LIFETIME = datetime.timedelta(hours=6)
TOKEN_LIFETIME_MS = 3600 * 1000
# Enterprise Edition instances in the region; "acme" is also a substring of "acme-staging".
INSTANCES = [
    {"InstanceId": "cri-acmestaging0001", "InstanceName": "acme-staging", "RegionId": REGION, "InstanceStatus": "RUNNING"},
    {"InstanceId": "cri-acme00000000001", "InstanceName": "acme", "RegionId": REGION, "InstanceStatus": "RUNNING"},
]
ALGORITHM = "ACS3-HMAC-SHA256"
# The headers every signed call must sign (host, and each x-acs-* header it sends).
REQUIRED_SIGNED = ("host", "x-acs-action", "x-acs-version", "x-acs-date", "x-acs-signature-nonce", "x-acs-content-sha256")


class Keys:
    """The access keys this fake knows: {AccessKeyId: (AccessKeySecret, SecurityToken or None)}."""

    def __init__(self):
        self.lock = threading.Lock()
        self.keys = {}
        self.metadata_tokens = set()

    def issue(self, prefix):
        key_id = "STS." + prefix + secrets.token_hex(6)
        secret = secrets.token_urlsafe(24)
        token = "CAIS" + secrets.token_urlsafe(48)
        with self.lock:
            self.keys[key_id] = (secret, token)
        return key_id, secret, token

    def add_static(self, key_id, secret):
        with self.lock:
            self.keys[key_id] = (secret, None)

    def get(self, key_id):
        with self.lock:
            return self.keys.get(key_id)


KEYS = Keys()


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pct(text):
    """RFC 3986 percent-encoding, as the V3 signature's canonical query string wants it."""
    return urllib.parse.quote(text, safe="-_.~")


def canonical_query(raw_query):
    pairs = urllib.parse.parse_qsl(raw_query, keep_blank_values=True)
    encoded = sorted((pct(k), pct(v)) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def expected_signature(secret, method, path, raw_query, headers, signed, body):
    """The V3 signature: hex HMAC-SHA256(secret, "ACS3-HMAC-SHA256\\n" + hex SHA-256 of the
    canonical request), the canonical request being the method, the path, the sorted query, the
    signed headers (lower-case name:trimmed value, one per line), their names and the body's hash."""
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip()}\n" for name in signed)
    canonical = "\n".join([
        method,
        path or "/",
        canonical_query(raw_query),
        canonical_headers,
        ";".join(signed),
        hashlib.sha256(body).hexdigest(),
    ])
    string_to_sign = f"{ALGORITHM}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    return hmac.new(secret.encode(), string_to_sign.encode(), hashlib.sha256).hexdigest()


def parse_authorization(value):
    """(AccessKeyId, [signed headers], signature) of an ACS3 Authorization header, or None."""
    if not value.startswith(ALGORITHM + " "):
        return None
    fields = {}
    for part in value[len(ALGORITHM) + 1:].split(","):
        name, sep, content = part.strip().partition("=")
        if not sep:
            return None
        fields[name] = content
    if set(fields) != {"Credential", "SignedHeaders", "Signature"}:
        return None
    return fields["Credential"], fields["SignedHeaders"].split(";"), fields["Signature"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):  # each request is printed once, by note()
        pass

    def note(self, what):
        print(f"request: {self.command} {urllib.parse.urlsplit(self.path).path} {what}", flush=True)

    def send(self, status, body, ctype="application/json"):
        data = (json.dumps(body) if ctype == "application/json" else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, message):
        self.note(f"refused: {code}")
        return self.send(status, {"RequestId": secrets.token_hex(8).upper(), "HostId": self.headers.get("Host", ""),
                                  "Code": code, "Message": message,
                                  "Recommend": "https://api.aliyun.com/troubleshoot?q=" + code})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    # --- the ECS metadata server -------------------------------------------------------------

    def do_PUT(self):
        path = urllib.parse.urlsplit(self.path).path
        self.body()
        if path != "/latest/api/token":
            return self.send(404, "Not Found", "text/plain")
        ttl = self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self.note("refused: no valid X-aliyun-ecs-metadata-token-ttl-seconds")
            return self.send(400, "Bad Request", "text/plain")
        token = secrets.token_urlsafe(32)
        with KEYS.lock:
            KEYS.metadata_tokens.add(token)
        self.note(f"metadata token (ttl {ttl}s)")
        return self.send(200, token, "text/plain")

    def do_GET(self):
        split = urllib.parse.urlsplit(self.path)
        if split.path.startswith("/latest/"):
            return self.metadata(split.path)
        body = self.body()
        if split.path == "/tokens":
            return self.cr(split, body)
        return self.send(404, "Not Found", "text/plain")

    def metadata(self, path):
        with KEYS.lock:
            known = self.headers.get("X-aliyun-ecs-metadata-token") in KEYS.metadata_tokens
        if not known:
            self.note("refused: no metadata token (hardened mode)")
            return self.send(403, "Forbidden", "text/plain")
        if path == "/latest/meta-data/region-id":
            self.note("region-id")
            return self.send(200, REGION, "text/plain")
        if path == "/latest/meta-data/ram/security-credentials/":
            self.note("role name")
            return self.send(200, NODE_ROLE, "text/plain")
        if path == "/latest/meta-data/ram/security-credentials/" + NODE_ROLE:
            key_id, secret, token = KEYS.issue("node")
            self.note(f"role credentials {key_id}")
            t = now()
            return self.send(200, {"AccessKeyId": key_id, "AccessKeySecret": secret, "SecurityToken": token,
                                   "Expiration": iso(t + ROLE_LIFETIME), "LastUpdated": iso(t), "Code": "Success"})
        self.note("not found")
        return self.send(404, "Not Found", "text/plain")

    # --- STS and Container Registry (RPC POST /) ------------------------------------------------

    def do_POST(self):
        split = urllib.parse.urlsplit(self.path)
        body = self.body()
        if split.path != "/":
            return self.send(404, "Not Found", "text/plain")
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        action = self.headers.get("x-acs-action") or query.get("Action") or form.get("Action")
        if action == "AssumeRoleWithOIDC":
            return self.sts(query, form)
        return self.cr(split, body)

    def sts(self, query, form):
        params = {**query, **form}
        version = self.headers.get("x-acs-version") or params.get("Version")
        if version != "2015-04-01":
            return self.error(400, "InvalidVersion", f"Specified parameter Version is not valid: {version}")
        if "Authorization" in self.headers:
            return self.error(400, "InvalidParameter", "AssumeRoleWithOIDC is anonymous: no Authorization")
        if "OIDCToken" not in form:
            return self.error(400, "MissingOIDCToken", "OIDCToken is mandatory for this action (in the form body).")
        for name in ("RoleArn", "OIDCProviderArn", "RoleSessionName"):
            if not params.get(name):
                return self.error(400, "Missing" + name, f"{name} is mandatory for this action.")
        token = form["OIDCToken"]
        if token.count(".") != 2:
            return self.error(400, "InvalidParameter.OIDCToken", "The OIDC token is not a JWT.")
        if not params["RoleArn"].startswith("acs:ram::") or ":role/" not in params["RoleArn"]:
            return self.error(400, "InvalidParameter.RoleArn", "The parameter RoleArn is wrongly formed.")
        duration = int(params.get("DurationSeconds") or 3600)
        key_id, secret, sts_token = KEYS.issue("pod")
        self.note(f"AssumeRoleWithOIDC {params['RoleArn']} session {params['RoleSessionName']} -> {key_id}")
        return self.send(200, {
            "RequestId": secrets.token_hex(8).upper(),
            "Credentials": {"AccessKeyId": key_id, "AccessKeySecret": secret, "SecurityToken": sts_token,
                            "Expiration": iso(now() + datetime.timedelta(seconds=duration))},
            "AssumedRoleUser": {"Arn": params["RoleArn"] + "/" + params["RoleSessionName"],
                                "AssumedRoleId": "3000:" + params["RoleSessionName"]},
            "OIDCTokenInfo": {"Issuer": "https://oidc-ack.example", "ClientIds": "sts.aliyuncs.com"},
        })

    def verify(self, split, body):
        """The caller's key, or None once refused: the V3 signature with the secret handed out,
        the security token with STS keys, the body's hash, a fresh date."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        parsed = parse_authorization(headers.get("authorization", ""))
        if parsed is None:
            self.error(400, "MissingAuthorization", "The ACS3-HMAC-SHA256 Authorization header is missing or malformed.")
            return None
        key_id, signed, signature = parsed
        key = KEYS.get(key_id)
        if key is None:
            self.error(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
            return None
        secret, sts_token = key
        sent_acs = sorted(h for h in headers if h.startswith("x-acs-"))
        missing = [h for h in REQUIRED_SIGNED + tuple(sent_acs) if h not in signed]
        if signed != sorted(signed) or missing:
            self.error(400, "SignatureDoesNotMatch", f"SignedHeaders must be sorted and include {missing}.")
            return None
        if headers.get("x-acs-content-sha256") != hashlib.sha256(body).hexdigest():
            self.error(400, "ContentSHA256NotMatch", "x-acs-content-sha256 is not the body's SHA-256.")
            return None
        try:
            sent = datetime.datetime.strptime(headers.get("x-acs-date", ""), "%Y-%m-%dT%H:%M:%SZ")
            sent = sent.replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            self.error(400, "InvalidTimeStamp.Format", "x-acs-date must be ISO 8601 UTC (yyyy-MM-ddTHH:mm:ssZ).")
            return None
        if abs((now() - sent).total_seconds()) > 900:
            self.error(400, "InvalidTimeStamp.Expired", "x-acs-date is more than 15 minutes off.")
            return None
        if sts_token != headers.get("x-acs-security-token"):
            code = "InvalidSecurityToken.MismatchWithAccessKey" if sts_token else "InvalidSecurityToken.Malformed"
            self.error(400, code, "x-acs-security-token does not go with this access key.")
            return None
        want = expected_signature(secret, self.command, split.path, split.query, headers, signed, body)
        if not hmac.compare_digest(want, signature):
            self.error(400, "SignatureDoesNotMatch", "Specified signature does not match our calculation.")
            return None
        return key_id

    def cr(self, split, body):
        key_id = self.verify(split, body)
        if key_id is None:
            return None
        action = self.headers.get("x-acs-action")
        version = self.headers.get("x-acs-version")
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        expire = int(now().timestamp() * 1000) + TOKEN_LIFETIME_MS
        if (self.command, split.path, action, version) == ("GET", "/tokens", "GetAuthorizationToken", "2016-06-07"):
            self.note(f"Personal Edition GetAuthorizationToken, signed by {key_id}")
            return self.send(200, {"data": {"authorizationToken": "personal-" + secrets.token_urlsafe(24),
                                            "tempUserName": "cr_temp_user", "expireDate": expire}})
        if self.command != "POST" or version != "2018-12-01":
            return self.error(400, "InvalidVersion", f"{action} {version} is not served here.")
        if action == "ListInstance":
            name = query.get("InstanceName", "")
            found = [i for i in INSTANCES if name in i["InstanceName"]]
            self.note(f"ListInstance InstanceName={name!r}: {len(found)} found, signed by {key_id}")
            return self.send(200, {"IsSuccess": True, "Code": "success", "RequestId": secrets.token_hex(8).upper(),
                                   "PageNo": int(query.get("PageNo") or 1), "PageSize": int(query.get("PageSize") or 30),
                                   "TotalCount": len(found), "Instances": found})
        if action == "GetAuthorizationToken":
            instance = query.get("InstanceId", "")
            if instance not in {i["InstanceId"] for i in INSTANCES}:
                self.note(f"GetAuthorizationToken for unknown {instance!r}")
                return self.send(200, {"IsSuccess": False, "Code": "INSTANCE_NOT_EXIST",
                                       "RequestId": secrets.token_hex(8).upper()})
            self.note(f"Enterprise GetAuthorizationToken InstanceId={instance}, signed by {key_id}")
            return self.send(200, {"IsSuccess": True, "Code": "success", "RequestId": secrets.token_hex(8).upper(),
                                   "AuthorizationToken": "enterprise-" + secrets.token_urlsafe(24),
                                   "TempUsername": "cr_temp_user", "ExpireTime": expire})
        return self.error(400, "InvalidAction.NotFound", f"Specified api is not found: {action}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--static-key", action="append", default=[], metavar="ID=SECRET",
                        help="a long-lived access key the fake also accepts")
    args = parser.parse_args()
    for item in args.static_key:
        key_id, sep, secret = item.partition("=")
        if not sep or not key_id or not secret:
            parser.error("--static-key takes ID=SECRET")
        KEYS.add_static(key_id, secret)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
