#!/usr/bin/env bash
# Renders every overlay offline and validates every object against the Kubernetes schemas
# (kubernetes-validate --strict: an unknown field fails). prod-keda's ScaledObject is a KEDA
# custom resource with no built-in schema: it is only checked to be there.
set -euo pipefail
cd "$(dirname "$0")"
# The dev overlay reads its token's digest from a generated, git-ignored file.
[ -f overlays/dev/tokens.env ] || overlays/dev/new-token.sh >/dev/null
for overlay in dev prod; do
    kubectl kustomize "overlays/$overlay" | kubernetes-validate --strict --quiet -
    echo "deploy/k8s/overlays/$overlay: rendered and valid"
done
rendered=$(kubectl kustomize overlays/prod-keda)
grep -q "kind: ScaledObject" <<<"$rendered"
if grep -q "kind: HorizontalPodAutoscaler" <<<"$rendered"; then
    echo "the KEDA component must remove the HorizontalPodAutoscaler" >&2; exit 1
fi
# Everything but the ScaledObject (a KEDA custom resource) against the Kubernetes schemas.
python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] != "ScaledObject"]
yaml.safe_dump_all(docs, sys.stdout)
' <<<"$rendered" | kubernetes-validate --strict --quiet -
# Every namespaced object must land in the overlay's namespace (not kubectl's current one).
python3 -c '
import sys, yaml
cluster_wide = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
bad = [d["kind"] + "/" + d["metadata"]["name"] for d in yaml.safe_load_all(sys.stdin)
       if d and d["kind"] not in cluster_wide and not d["metadata"].get("namespace")]
sys.exit("objects without a namespace: " + ", ".join(bad) if bad else 0)
' <<<"$rendered"
echo "deploy/k8s/overlays/prod-keda: rendered and valid (ScaledObject instead of the HorizontalPodAutoscaler)"
