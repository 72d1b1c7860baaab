#!/usr/bin/env bash
# gcr-credential-provider against the local GCP fake: every flow, as the kubelet runs it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --quiet --locked -p gcr-credential-provider
bin=${CARGO_TARGET_DIR:-target}/debug/gcr-credential-provider
work=$(mktemp -d)
python3 providers/gcr/fakes/gcp_fake.py >"$work/fake.out" & fake_pid=$!
trap 'kill $fake_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do url=$(sed -n 's/^listening on //p' "$work/fake.out"); [ -n "$url" ] && break; sleep 0.1; done
host=${url#http://}
v1=credentialprovider.kubelet.k8s.io/v1
req() { printf '{"kind":"CredentialProviderRequest","apiVersion":"%s","image":"%s"%s}' "$1" "$2" "${3:-}"; }
run() { # title, request, env/args...
  local title=$1 request=$2; shift 2
  printf '\n### %s\n$ echo '\''%s'\'' | %s\n' "$title" "$request" "$*"
  local rc=0
  echo "$request" | env -i PATH="$PATH" HOME="$work" "$@" || rc=$?
  echo "(exit $rc)"
}

run "node service account from the metadata server (GCE_METADATA_HOST)" \
  "$(req $v1 us-docker.pkg.dev/my-project/repo/app)" \
  GCE_METADATA_HOST="$host" "$bin" get-credentials

run "same, v1beta1 request, cache by image for 10m (upstream's variables)" \
  "$(req credentialprovider.kubelet.k8s.io/v1beta1 gcr.io/my-project/app)" \
  GCE_METADATA_HOST="$host" KUBE_SIDECAR_CACHE_TYPE=image KUBE_SIDECAR_CACHE_DURATION=10m "$bin" get-credentials

# The test-only key committed for the integration tests; the fake's token_uri takes any signed JWT.
python3 - "$work" "$url" <<'PY'
import json, sys
work, url = sys.argv[1], sys.argv[2]
key = {"type": "service_account", "client_email": "puller@my-project.iam.gserviceaccount.com",
       "private_key_id": "demo", "private_key": open("providers/gcr/tests/data/test-sa-key.pem").read(),
       "token_uri": f"{url}/token"}
json.dump(key, open(f"{work}/key.json", "w"))
PY
run "service-account key file (JWT-bearer grant to the key's token_uri)" \
  "$(req $v1 europe-west1-docker.pkg.dev/my-project/repo/app)" \
  GOOGLE_APPLICATION_CREDENTIALS="$work/key.json" "$bin" get-credentials

run "dockercfg flow: the google-dockercfg attribute" \
  "$(req $v1 hello.kubernetes.io/team/app)" \
  GCE_METADATA_HOST="$host" "$bin" get-credentials --authFlow=dockercfg

run "dockercfg-url flow: the document at google-dockercfg-url" \
  "$(req $v1 harbor.example.com/team/app)" \
  GCE_METADATA_HOST="$host" "$bin" get-credentials --authFlow=dockercfg-url

run "Workload Identity: opted-in pod token exchanged at STS, then impersonation" \
  "$(req $v1 us-docker.pkg.dev/my-project/repo/app ',"serviceAccountToken":"eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.sig","serviceAccountAnnotations":{"iam.gke.io/enable-wi-image-pull":"true","iam.gke.io/gcp-service-account":"puller@my-project.iam.gserviceaccount.com"}')" \
  GCE_METADATA_HOST="$host" "$bin" get-credentials \
  --identity-provider=https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/c1 \
  --project-id=my-project --sts-endpoint="$url/v1/token" --iam-endpoint="$url"

run "fails loudly: no metadata server here (one stderr line, nothing on stdout, exit 1)" \
  "$(req $v1 gcr.io/my-project/app)" \
  GCE_METADATA_HOST=127.0.0.1:9 "$bin" get-credentials --deadline=5s
